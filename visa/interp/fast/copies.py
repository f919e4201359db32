"""Which DM slices hold the same bytes because one DMA just copied the same source into
them (a broadcast: a loop over slices whose source stride is 0), so that a reader of
those slices (`feed._repeated`) knows its equal rows without comparing them.

A note is (byte range of every slice, each slice's representative: the lowest slice the
DMA filled from the same source bytes, -1 for a slice it did not write). Notes are claims
about the DM as the DMA left it, so every write that could touch the DM forgets them: a
DMA forgets the notes overlapping each range it writes (all of the store's on a write it
cannot describe), and the walker forgets all of them before any other step, and the DM's
after a program whose sink writes the DM (`forget_after`). Only a DMA from HBM makes notes. The
plain interpreter keeps none: it calls `dma_written` and `program_done` through its hooks
(visa/interp/shortcuts.py), which the switch turns off.

A TRF load of such rows passes the claim on (`note_load`): its slices hold the same bytes
in the TRF rows it wrote, which the contraction's weight operand then need not compare.
Every TRF write of this run goes through `Memory.trf_rows`, which forgets the notes of the
rows it hands out; a TRF zeroed by `tensor_new` is a step the walker forgets all before.
"""

from __future__ import annotations

import bisect
from typing import Any, Sequence

import numpy as np

from visa.interp.fast import speed
from visa.interp.shortcuts import per_record, register

__all__ = ["CopyNotes", "broadcast_note", "forget_after", "note_load", "dma_written", "program_done", "trf_loaded",
           "trf_held", "first_equal"]

Key = tuple  # (chip, cluster) of a DM store, ("trf", chip, cluster) of a TRF


class CopyNotes:
    """The notes of one run's DM stores, by (chip, cluster), and of its TRFs, by ("trf",
    chip, cluster) (byte ranges of a DM slice, TRF row ranges of a TRF)."""

    def __init__(self) -> None:
        self._notes: dict[Key, list[tuple[int, int, np.ndarray]]] = {}
        self._derived: dict[Key, list[tuple[int, int, Any, Any]]] = {}   # (lo, hi, tag, value): `remember`

    def clear(self, key: Key | None = None) -> None:
        """Forget every note (of the store `key` only, when given)."""
        for table in (self._notes, self._derived):
            if key is None:
                table.clear()
            else:
                table.pop(key, None)

    def clear_dm(self) -> None:
        """Forget every DM store's notes, keep the TRFs' (a commit writes the DM only; every
        TRF write goes through `Memory.trf_rows`, which forgets the rows it hands out)."""
        for table in (self._notes, self._derived):
            for key in [k for k in table if k[0] != "trf"]:
                del table[key]

    def forget(self, key: Key, lo: int, hi: int) -> None:
        """Forget the notes of `key` whose range meets bytes [lo, hi) (of any slice)."""
        for table in (self._notes, self._derived):
            if key in table:
                table[key] = [n for n in table[key] if n[1] <= lo or hi <= n[0]]

    def remember(self, spans: list[tuple[Key, int, int]], tag: Any, value: Any) -> None:
        """Keep `value`, computed from ranges [lo, hi) of the stores `spans` names alone
        (and from what `tag` says), until a write meets one of them or another value is
        kept (one at a time: its arrays are `Memory.run_scratch`'s); nothing with the speed
        switch off."""
        self._derived.clear()
        if speed.on():
            for key, lo, hi in spans:
                self._derived.setdefault(key, []).append((lo, hi, tag, value))

    def recall(self, spans: list[tuple[Key, int, int]], tag: Any) -> Any:
        """The value `remember` kept for these `spans` and `tag`, when no write has met any
        of them since; else None."""
        found = None
        for key, lo, hi in spans:
            hits = [v for a, b, t, v in self._derived.get(key, ()) if (a, b) == (lo, hi) and t == tag]
            if not hits or (found is not None and hits[-1] is not found):
                return None
            found = hits[-1]
        return found

    def note(self, key: Key, lo: int, hi: int, rep: np.ndarray) -> None:
        """Slices s and rep[s] hold the same bytes [lo, hi) (rep[s] >= 0); nothing is noted
        with the speed switch off (`visa.interp.fast.speed`)."""
        self.forget(key, lo, hi)
        if not speed.on():
            return
        self._notes.setdefault(key, []).append((lo, hi, rep))

    def held(self, key: Key, lo: int, hi: int, slices: np.ndarray) -> np.ndarray | None:
        """For rows reading bytes [lo, hi) of `slices` (in row order): each row's first row
        holding the same bytes (itself for the first of them), or None when no note covers
        the range for every one of those slices."""
        for a, b, rep in self._notes.get(key, []):
            if a <= lo and hi <= b:
                return _first_rows(rep, slices)
        return None

    def held_rows(self, key: Key, rows: np.ndarray, slices: np.ndarray) -> np.ndarray | None:
        """`held` for rows reading the TRF rows `rows` (indices), every one of them in a
        note of one load (the same `rep`)."""
        found, covered = None, np.zeros(rows.size, np.bool_)
        for a, b, rep in self._notes.get(key, []):
            inside = (rows >= a) & (rows < b)
            if inside.any():
                if found is not None and rep is not found:
                    return None
                found, covered = rep, covered | inside
        return None if found is None or not covered.all() else _first_rows(found, slices)

    def held_ranges(self, key: Key, ranges: list[tuple[int, int]], slices: np.ndarray) -> np.ndarray | None:
        """`held_rows` of the TRF rows of `ranges` ([lo, hi) each), decided on the ranges'
        ends alone: no array of every row (a TRF load of a batched kernel's loop asks once
        a step: 0.1-0.2 ms each by the row arrays, drawn_s5_2)."""
        notes = self._notes.get(key, [])
        apart = _apart(ranges)
        if apart is not None:
            found = _one_load(notes, *apart)
            return None if found is None else _first_rows(found, slices)
        found, spans = None, []
        for a, b, rep in notes:
            met = [(max(a, lo), min(b, hi)) for lo, hi in ranges if max(a, lo) < min(b, hi)]
            if met:
                if found is not None and rep is not found:
                    return None
                found = rep
                spans += met
        if found is None or not _covers(spans, ranges):
            return None
        return _first_rows(found, slices)


def _apart(ranges: list[tuple[int, int]]) -> tuple[list[int], list[int]] | None:
    """The starts and ends of `ranges` in order when no two of them overlap (each a TRF load's
    row ranges are), else None."""
    order = sorted(ranges)
    los, his = [lo for lo, _ in order], [hi for _, hi in order]
    if any(lo > hi for lo, hi in order) or any(his[i] > los[i + 1] for i in range(len(order) - 1)):
        return None
    return los, his


def _one_load(notes: list[tuple[int, int, np.ndarray]], los: list[int], his: list[int]) -> np.ndarray | None:
    """`held_ranges`' decision for ranges apart (`_apart`): the one `rep` of every note that
    meets a range, when those notes cover every row of the ranges, else None. Each note
    finds the ranges it meets by bisection, and the ranges are covered when the rows of the
    parts met, merged, count as many as the ranges hold (each part lies in one range)
    (the scan of every note against every range cost 0.1 ms a TRF load, 16 a run of drawn_s2_0)."""
    found, spans = None, []
    for a, b, rep in notes:
        i = bisect.bisect_right(his, a)    # the first range ending past a
        while i < len(los) and los[i] < b:
            lo, hi = max(a, los[i]), min(b, his[i])
            if lo < hi:
                if found is not None and rep is not found:
                    return None
                found = rep
                spans.append((lo, hi))
            i += 1
    if found is None:
        return None
    rows, at = 0, None    # rows of the union of the parts met
    for lo, hi in sorted(spans):
        lo = lo if at is None else max(lo, at)
        if hi > lo:
            rows += hi - lo
        at = hi if at is None else max(at, hi)
    return found if rows == sum(hi - lo for lo, hi in zip(los, his)) else None


def _covers(spans: list[tuple[int, int]], ranges: list[tuple[int, int]]) -> bool:
    """Whether the union of `spans` ([lo, hi) each) holds every row of `ranges`."""
    spans = sorted(spans)
    for lo, hi in sorted(ranges):
        at = lo              # the first row of [lo, hi) not yet covered
        for a, b in spans:
            if a <= at < b:
                at = b
        if at < hi:
            return False
    return True


def _first_rows(rep: np.ndarray, slices: np.ndarray) -> np.ndarray | None:
    """Each of `slices`' first position with the same representative; None when one has
    none."""
    reps = rep[slices]
    if (reps < 0).any():
        return None
    return first_equal(reps)


_FIRST: dict[tuple[str, bytes], np.ndarray] = {}
_FIRST_LIMIT = 256


def first_equal(values: np.ndarray) -> np.ndarray:
    """Each position's first position holding the same value (int64, read-only), remembered
    by the values' bytes: the same slices' representatives come back every run, and every
    step of a batched kernel's loop (a sort each time, ~100 a run)."""
    values = np.ascontiguousarray(values).reshape(-1)
    key = (values.dtype.str, values.tobytes())
    hit = _FIRST.get(key)
    if hit is None:
        _, first, inverse = np.unique(values, return_index=True, return_inverse=True)
        hit = first[inverse.reshape(-1)].astype(np.int64)
        hit.setflags(write=False)
        if len(_FIRST) >= _FIRST_LIMIT:    # the oldest entry (another thread may have just dropped it)
            _FIRST.pop(next(iter(_FIRST), None), None)
        _FIRST[key] = hit
    return hit


def note_load(notes: CopyNotes, key: Any, ranges: list[tuple[int, int]], slices: np.ndarray, held: np.ndarray,
              n_slices: int) -> None:
    """A TRF load wrote row r of its stream into slice slices[r] over the TRF rows
    `ranges`, and row r holds what row held[r] does: those slices hold the same bytes there."""
    rep = np.full(n_slices, -1, np.int64)
    rep[slices] = slices[held]
    for lo, hi in ranges:
        notes.note(key, lo, hi, rep)


def broadcast_note(dst_base: int, sizes: Sequence[int], src_strides: Sequence[int],
                   dst_strides: Sequence[int], slice_bytes: int, slices: int) -> tuple[int, int, np.ndarray] | None:
    """The note of one command copied byte by byte (`dma.copy_strided`: an injective walk
    of the DM, one slice's bytes per slice step) when it writes one dense byte range of
    each slice it reaches and some slices get the same source bytes; None otherwise."""
    first, off = divmod(dst_base, slice_bytes)
    inner = [(n, d) for n, d in zip(sizes, dst_strides) if d % slice_bytes]
    outer = [(n, s, d // slice_bytes) for n, s, d in zip(sizes, src_strides, dst_strides) if d % slice_bytes == 0]
    span = sum((n - 1) * d for n, d in inner) + 1
    if int(np.prod([n for n, _ in inner])) != span or not any(n > 1 and s == 0 for n, s, _ in outer):
        return None
    where = np.full((), first, np.int64)
    source = np.zeros((), np.int64)
    for n, s, k in outer:
        where = where[..., None] + np.arange(n, dtype=np.int64) * k
        source = source[..., None] + np.arange(n, dtype=np.int64) * s
    where, source = where.reshape(-1), source.reshape(-1)
    if where.size != np.unique(where).size or where.max() >= slices:
        return None
    rep = np.full(slices, -1, np.int64)
    order = np.argsort(where, kind="stable")
    _, firsts, inverse = np.unique(source[order], return_index=True, return_inverse=True)
    lowest = where[order][firsts]                     # the lowest slice of each source
    rep[where[order]] = lowest[inverse.reshape(-1)]
    return off, off + span, rep


def forget_after(program: Any) -> bool:
    """Whether the DM may differ after `program`: unless it ends in a TRF or VRF load and
    commits nothing (only a commit, its sink, writes the DM)."""
    ops = list(program.ops)
    return ops[-1].MNEMONIC not in ("trf_load", "vrf_load") or any("commit" in op.MNEMONIC for op in ops)


@register("program_done")
def program_done(program: Any, mem: Any) -> None:
    """After a program: its sink may have changed the DM (`forget_after`), so every DM note
    goes; the TRF notes stay (a program writes the TRF only by a `trf_load`, which forgets
    the rows it writes): the second contraction of a tile reads the weights the first did."""
    if forget_after(program):
        mem.copies.clear_dm()


@per_record
def _broadcast(cmd: Any, base: int, slice_bytes: int, slices: int) -> tuple[int, int, np.ndarray] | None:
    """`broadcast_note` of a command's walk written from `base` (once per record and base)."""
    return broadcast_note(base, [e.size for e in cmd.entries], [e.src_stride for e in cmd.entries],
                          [e.dst_stride for e in cmd.entries], slice_bytes, slices)


@register("dma_written")
def dma_written(mem: Any, part: Any, copied: bool, base: int, cmd: Any) -> None:
    """What command `cmd` of a DMA writing the DM of `part` from `base` leaves for the notes: a
    `broadcast_note` of a strided copy from HBM (kept per record); else its notes forgotten
    (those its walk meets, or all of them when it is not a strided copy of one byte range a
    slice)."""
    key, sb = (int(part.chip), int(part.cluster)), mem.dm_slice
    off = base % sb
    span = sum((e.size - 1) * e.dst_stride for e in cmd.entries if e.dst_stride % sb) + 1
    made = _broadcast(cmd, base, sb, mem.slices) if copied else None
    if made is not None:
        mem.copies.note(key, *made)
    elif copied and off + span <= sb:
        mem.copies.forget(key, off, off + span)
    else:
        mem.copies.clear(key)


@register("trf_loaded")
def trf_loaded(mem: Any, stream: Any, key: Any, ranges: list[tuple[int, int]], slices: np.ndarray,
               sel: np.ndarray) -> None:
    """A TRF load stored the rows `sel` of `stream` (one (chip, cluster)'s) into the rows
    `ranges` of `slices`: when the stream knows its equal rows (a `Repeated` one's `held`),
    so do those slices (each row's first row of `sel` holding the same values; a row's
    held row may be another cluster's)."""
    held = getattr(stream, "held", None)
    if held is not None:
        note_load(mem.copies, key, ranges, slices, _first_rows(held, sel), mem.slices)


@register("trf_held")
def trf_held(mem: Any, part: tuple[int, int], ranges: list[tuple[int, int]], slices: np.ndarray) -> np.ndarray | None:
    """For rows reading the TRF rows `ranges` of `slices` of `part` (chip, cluster): each
    row's first row holding the same bytes there, from one load's note (`held_rows`); None
    when no note covers them all."""
    return mem.copies.held_ranges(("trf", int(part[0]), int(part[1])), ranges, np.asarray(slices, np.int64))
