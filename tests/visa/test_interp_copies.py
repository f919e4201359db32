"""The DM copy notes (visa/interp/fast/copies.py): a DMA that copies the same HBM bytes into
several slices says so, a reader of those slices takes its equal rows from the note
instead of comparing them, and every write that could change the DM forgets the notes.
The results with notes are pinned to those without (the comparing path) and to numpy."""

from __future__ import annotations

import types

import numpy as np

from tests.kernel_files import example
from tests.visa.test_interp import artifact, bits, host_inputs
from tu_ops.target import get_target
from visa.interp import dma, execute_inout, walker
from visa.interp.fast import contract_jit, copies
from visa.interp.dm import Dm
from visa.interp.memory import Memory

SB = 1 << 10        # slice bytes of the made-up walks


def test_a_broadcast_walk_notes_each_slices_first_copy():
    # 4 groups of 2 slices: the inner slice loop has source stride 0 (a broadcast)
    lo, hi, rep = copies.broadcast_note(3 * SB + 16, [4, 2, 8, 4], [32, 0, 4, 1], [2 * SB, SB, 4, 1], SB, 16)
    assert (lo, hi) == (16, 48)
    assert rep[3:11].tolist() == [3, 3, 5, 5, 7, 7, 9, 9] and (rep[:3] == -1).all() and (rep[11:] == -1).all()


def test_walks_that_are_not_a_dense_broadcast_make_no_note():
    assert copies.broadcast_note(0, [4, 8], [32, 1], [SB, 1], SB, 16) is None          # every slice differs
    assert copies.broadcast_note(0, [4, 8], [0, 2], [SB, 2], SB, 16) is None           # gaps between the bytes
    assert copies.broadcast_note(0, [20, 8], [0, 1], [SB, 1], SB, 16) is None          # past the last slice


def test_a_note_names_each_rows_first_equal_row_and_is_forgotten_by_an_overlapping_write():
    notes = copies.CopyNotes()
    rep = np.array([-1, 1, 1, 3, 3, 1], np.int64)
    notes.note((0, 0), 100, 200, rep)
    assert notes.held((0, 0), 120, 180, np.array([1, 2, 3, 4, 5])).tolist() == [0, 0, 2, 2, 0]
    assert notes.held((0, 0), 120, 201, np.array([1, 2])) is None        # reads past the noted bytes
    assert notes.held((0, 0), 120, 180, np.array([0, 1])) is None        # slice 0 was not written
    assert notes.held((0, 1), 120, 180, np.array([1, 2])) is None        # another cluster's store
    notes.forget((0, 0), 0, 100)                                         # touching below: kept
    assert notes.held((0, 0), 120, 180, np.array([1, 2])) is not None
    notes.forget((0, 0), 199, 300)                                       # one byte of it: gone
    assert notes.held((0, 0), 120, 180, np.array([1, 2])) is None


def test_a_trf_load_passes_the_note_on_and_a_later_load_of_those_rows_forgets_it():
    mem = Memory(get_target("rngd"))
    key, slices = ("trf", 0, 0), np.arange(4, dtype=np.int64)
    ranges = mem.lane_rows(8, 2, 3)                                      # rows 2..4 of each of 8 lanes
    copies.note_load(mem.copies, key, ranges, slices, np.array([0, 0, 2, 2]), mem.slices)
    rows = np.array([lo + 1 for lo, _ in ranges], np.int64)              # one row of each lane's range
    assert mem.copies.held_rows(key, rows, slices).tolist() == [0, 0, 2, 2]
    assert mem.copies.held_rows(key, np.append(rows, 0), slices) is None          # row 0 was not loaded
    mem.trf_rows(0, 0, 8, 6, 2)                                          # rows past them: kept
    assert mem.copies.held_rows(key, rows, slices) is not None
    mem.trf_rows(0, 0, 8, 4, 1)                                          # row 4 of every lane: forgotten
    assert mem.copies.held_rows(key, rows, slices) is None


def test_rows_of_two_loads_are_not_answered_together():
    notes, key = copies.CopyNotes(), ("trf", 0, 0)
    notes.note(key, 0, 4, np.array([0, 0, 2, 2]))
    notes.note(key, 4, 8, np.array([0, 0, 2, 2]))                        # equal, but another load's
    assert notes.held_rows(key, np.array([1, 2]), np.arange(4)).tolist() == [0, 0, 2, 2]
    assert notes.held_rows(key, np.array([3, 4]), np.arange(4)) is None


def test_held_ranges_answers_as_held_rows_does_on_every_row_of_the_ranges():
    """Random notes (some sharing one load's `rep`) and random lane ranges: the answer from
    the ranges' ends is the one `held_rows` gives on an array of every row of them."""
    rng = np.random.default_rng(11)
    slices = np.arange(6, dtype=np.int64)
    reps = [np.array([0, 0, 2, 2, 4, 4]), np.array([0, 1, 0, 1, 0, 1])]
    answers = set()
    for _ in range(300):
        notes, key = copies.CopyNotes(), ("trf", 0, 0)
        for _ in range(rng.integers(0, 5)):
            lo = int(rng.integers(0, 40))
            notes.note(key, lo, lo + int(rng.integers(1, 12)), reps[int(rng.integers(0, 2))])
        starts = sorted(rng.choice(40, size=int(rng.integers(1, 4)), replace=False).tolist())
        ranges = [(lo, min(lo + int(rng.integers(0, 6)), 48)) for lo in starts]
        rows = np.concatenate([np.arange(lo, hi, dtype=np.int64) for lo, hi in ranges])
        want, got = notes.held_rows(key, rows, slices), notes.held_ranges(key, ranges, slices)
        assert (want is None) == (got is None) and (want is None or want.tolist() == got.tolist())
        answers.add(None if want is None else tuple(want.tolist()))
    assert len(answers) == 3            # both loads' answers and None were each met



def test_ranges_apart_are_decided_by_bisection_as_by_their_rows():
    """`copies._one_load` (ranges that do not overlap, as a TRF load's of a batched kernel:
    8 lane ranges against the notes of the load before and this one) against an oracle over
    sets of rows: the notes meeting a row of the ranges share one `rep`, and cover them."""
    old, new = np.array([0, 0, 2, 2]), np.array([0, 1, 0, 1])
    notes = [(256 * i + j * 8, 256 * i + j * 8 + 8, rep) for i in range(8) for j, rep in ((0, old), (1, new))]
    ranges = [(256 * i + 8, 256 * i + 16) for i in range(8)]
    assert copies._apart(ranges) is not None and copies._one_load(notes, *copies._apart(ranges)) is new
    assert copies._apart([(0, 8), (4, 12)]) is None and copies._apart([(5, 3)]) is None
    rng = np.random.default_rng(3)
    for _ in range(300):
        notes = []
        for _ in range(rng.integers(0, 6)):
            lo = int(rng.integers(0, 40))
            notes.append((lo, lo + int(rng.integers(0, 10)), (old, new)[int(rng.integers(0, 2))]))
        ranges, at = [], 0
        for _ in range(rng.integers(1, 5)):
            at += int(rng.integers(0, 8))
            ranges.append((at, at + int(rng.integers(0, 8))))
            at = ranges[-1][1]
        wanted = {r for lo, hi in ranges for r in range(lo, hi)}
        met = [(set(range(a, b)), rep) for a, b, rep in notes if set(range(a, b)) & wanted]
        same = len({id(rep) for _, rep in met}) == 1
        want = met[0][1] if same and wanted <= set().union(*(rows for rows, _ in met)) else None
        order = ranges[::-1] if rng.random() < 0.5 else ranges
        assert copies._one_load(notes, *copies._apart(order)) is want

def _command(sizes, src_strides, dst_strides):
    """A DMA command's loop entries (all `copies.dma_written` reads of it)."""
    return types.SimpleNamespace(entries=[types.SimpleNamespace(size=n, src_stride=s, dst_stride=d)
                                          for n, s, d in zip(sizes, src_strides, dst_strides)])


def test_a_dma_command_notes_forgets_or_clears():
    mem = Memory(get_target("rngd"))
    sb, part = mem.dm_slice, types.SimpleNamespace(chip=0, cluster=0)
    walk, plain = _command([4, 2, 64], [64, 0, 1], [2 * sb, sb, 1]), _command([2, 8], [8, 1], [sb, 1])
    copies.dma_written(mem, part, True, 0, walk)
    assert mem.copies.held((0, 0), 0, 64, np.arange(8)).tolist() == [0, 0, 2, 2, 4, 4, 6, 6]
    copies.dma_written(mem, part, True, 32, plain)                                   # a plain copy over 8 of its bytes
    assert mem.copies.held((0, 0), 0, 64, np.arange(8)) is None
    copies.dma_written(mem, part, True, 0, walk)
    copies.dma_written(mem, part, True, 128, plain)                                  # elsewhere: kept
    assert mem.copies.held((0, 0), 0, 64, np.arange(8)) is not None
    copies.dma_written(mem, part, False, 128, plain)                                 # not a strided copy: all forgotten
    assert mem.copies.held((0, 0), 0, 64, np.arange(8)) is None


def test_the_walker_forgets_before_other_steps_and_after_a_program_that_commits():
    mem = Memory(get_target("rngd"))
    rep = np.zeros(4, np.int64)

    def noted() -> bool:
        mem.copies.note((0, 0), 0, 8, rep)
        return True

    for mnemonic in sorted(walker._OTHER_STEPS):
        assert noted()
        walker._forget_copies(types.SimpleNamespace(MNEMONIC=mnemonic), mem)
        assert mem.copies.held((0, 0), 0, 8, np.arange(4)) is None, mnemonic
    noted()
    walker._forget_copies(types.SimpleNamespace(MNEMONIC="dma"), mem)
    assert mem.copies.held((0, 0), 0, 8, np.arange(4)) is not None

    def program(*mnemonics: str) -> types.SimpleNamespace:
        return types.SimpleNamespace(ops=[types.SimpleNamespace(MNEMONIC=m) for m in mnemonics])

    assert not copies.forget_after(program("feed_buffer", "collect", "trf_load"))
    assert not copies.forget_after(program("feed_buffer", "collect", "vrf_load"))
    assert copies.forget_after(program("feed_buffer", "contract_outer", "commit"))
    assert copies.forget_after(program("feed_buffer", "commit_packed", "trf_load"))    # a commit anywhere


def test_a_gemm_takes_its_equal_rows_and_slices_from_the_notes_with_the_comparing_paths_bits(monkeypatch):
    kernel = example("gemm_bf16_kernel")
    art, arrays = artifact(kernel), host_inputs(kernel, np.random.default_rng(8))
    known, real, real_rows = [], contract_jit._stream_range, copies.CopyNotes.held_rows

    def spy(packets, et, held):
        known.append(held is not None)
        return real(packets, et, held)

    def spy_rows(self, *args):
        found = real_rows(self, *args)
        known.append(found is not None)
        return found

    monkeypatch.setenv(contract_jit.ENV, "1")
    monkeypatch.setattr(contract_jit, "_stream_range", spy)
    monkeypatch.setattr(copies.CopyNotes, "held_rows", spy_rows)
    noted = bits(tuple(execute_inout(art, [a.copy() for a in arrays])[0]))
    assert len(known) >= 2 and all(known)                                # the stream's rows and the TRF's
    monkeypatch.setattr(copies.CopyNotes, "held", lambda self, *a: None)   # compare every row instead
    monkeypatch.setattr(copies.CopyNotes, "held_rows", lambda self, *a: None)
    monkeypatch.setattr(Dm, "lazy_view", lambda self, *a: None)   # a lazy broadcast's rows are known too
    known.clear()
    compared = bits(tuple(execute_inout(art, [a.copy() for a in arrays])[0]))
    assert known and not any(known)
    assert len(noted) == len(compared) and all(np.array_equal(a, b) for a, b in zip(noted, compared))


def test_a_committing_program_forgets_the_dm_notes_and_keeps_the_trf_ones():
    """A commit writes the DM only: the TRF notes of a load stay for the tile's next
    contraction (which would otherwise compare every slice's TRF bytes again)."""
    mem = Memory(get_target("rngd"))
    rows, slices = mem.lane_rows(8, 0, 2), np.arange(4, dtype=np.int64)
    copies.note_load(mem.copies, ("trf", 0, 0), rows, slices, np.array([0, 0, 2, 2]), mem.slices)
    mem.copies.note((0, 0), 0, 8, np.array([0, 0, 2, 2]))
    program = types.SimpleNamespace(ops=[types.SimpleNamespace(MNEMONIC=m)
                                         for m in ("feed_buffer", "contract_outer", "commit")])
    copies.program_done(program, mem)
    assert mem.copies.held((0, 0), 0, 8, slices) is None
    trf_rows = np.array([lo for lo, _ in rows], np.int64)
    assert mem.copies.held_rows(("trf", 0, 0), trf_rows, slices).tolist() == [0, 0, 2, 2]


def test_first_equal_sorts_each_distinct_content_once(monkeypatch) -> None:
    """Each position's first position with the same value, remembered by content: a batched
    kernel asks the same slices' representatives at every step of its loop (a sort each time)."""
    sorts: list = []
    unique = np.unique
    monkeypatch.setattr(np, "unique", lambda *a, **k: sorts.append(1) or unique(*a, **k))
    monkeypatch.setattr(copies, "_FIRST", {})
    values = np.array([7, 3, 7, 9, 3, 3], np.int64)
    want = np.array([next(j for j in range(len(values)) if values[j] == v) for v in values])
    for _ in range(3):
        got = copies.first_equal(values.copy())
        assert np.array_equal(got, want) and not got.flags.writeable
    assert len(sorts) == 1
    assert np.array_equal(copies.first_equal(values[::-1].copy()), [0, 0, 2, 3, 0, 3]) and len(sorts) == 2
