"""The roofline of a contraction (visa/schedule/bounds.py, driver/synth_explain.py) and what
synth.txt / synth.json say with it: each winner's efficiency and why it won.

The roofline must be a real lower bound: no candidate of a space, compiled and scheduled by
the model, is faster; its numbers are checked against the rates file's by hand."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from backends.npu import compile_kernel
from driver.discover import load_file
from driver.synth import synthesize
from driver.synth_explain import CLASSES, demand, spec_roofline
from synth import contraction
from tu_ops.target import for_chips, get_target
from visa.schedule import builtin_rates, schedule_artifact
from tu_ops.dma import DmaOp
from tu_ops.dma_commands import hbm_bytes
from visa.schedule.bounds import Demand, Layout, chip_commands, program_gap, roofline, work

ROOT = Path(__file__).resolve().parents[2]
GEMM = "out[m,n] = a[m,k] * w[n,k]"
RATES = builtin_rates("rngd")


def test_the_roofline_of_a_gemm_is_the_rates_files_arithmetic() -> None:
    # 512 x 512 x 64 i8 -> i32: a and w 32 KiB each, the result 1 MiB; 3 DMA commands of 500
    # cycles, bytes at the DMA engine's 256 B per cycle, after the 2000-cycle launch
    spec = contraction(GEMM, sizes=dict(m=512, n=512, k=64))
    assert demand(spec) == Demand(macs=512 * 512 * 64, bits=8, slices=512, loads=(32768, 32768),
                                  stores=(1048576,), parts=(1, 1, 1),
                                  layouts=(Layout((512, 64), (512, 64), 1),) * 2 + (Layout((512, 512), (512, 512), 4),),
                                  clusters=2)
    roof = spec_roofline(spec)
    got = {b.name: b.cycles for b in roof.bounds}
    # and the gap: a program between the last load and the store (its 290-cycle start-up and
    # the 128 cycles of MACs on one cluster's 256 slices, all on main: the sub context has no
    # Contraction Engine, and MACs on both clusters cost two commands more), fewer than one more
    # command's 500
    assert got["dma"] == 2000 + 3 * 500 + (32768 * 2 + 1048576) // 256 + 290 + 128
    # 512 MACs a cycle a slice (8 lanes x 64 i8), 512 slices: 64 cycles, in a 290-cycle program
    assert got["compute"] == 2000 + 500 + 290 + 64 + 500
    assert got["fetch"] == 2000 + 500 + 290 + 65536 // (32 * 512 * 2)
    assert roof.binding.name == "dma" and roof.cycles == 8270


def test_the_roofline_counts_the_given_sizes_a_chips_share_the_pe_and_the_bias() -> None:
    padded = demand(contraction(GEMM, sizes=dict(m=300, n=200, k=100)))
    assert padded.macs == 300 * 200 * 100 and padded.loads == (30000, 20000) and padded.stores == (240000,)
    assert demand(contraction(GEMM, sizes=dict(m=256, n=256, k=64), pe=2)).slices == 128
    two = demand(contraction(GEMM, sizes=dict(m=1024, n=512, k=128), chips=2))
    assert two.macs == 1024 * 512 * 128 and two.chips == 2 and two.stores == (1024 * 512 * 4,)
    epi = demand(contraction("q[m,n] = requant(a[m,k] * w[n,k] + b[n], 0.5)", sizes=dict(m=64, n=128, k=32)))
    assert epi.loads == (64 * 32, 128 * 32, 128 * 4) and epi.stores == (64 * 128,)   # i32 bias, i8 result
    assert epi.late_loads == 1 and padded.late_loads == 0   # the bias is read after the contraction
    bf16 = roofline(RATES, Demand(macs=2 ** 20, bits=16, slices=256, loads=(), stores=()))
    assert {b.name: b.cycles for b in bf16.bounds}["compute"] == 2000 + 500 + 290 + 2 ** 20 // (256 * 256) + 500


def test_a_two_chip_roofline_moves_every_chips_bytes_on_the_one_dma_lane() -> None:
    # the model's DMA context runs every chip's commands one after another (docs/tuning.md, "Why one
    # DMA lane"): the bytes of both chips pass it (their start-ups: the next test), while the MACs
    # and fetches split over the chips
    spec = contraction(GEMM, sizes=dict(m=1024, n=512, k=128), chips=2)
    got = {b.name: b.cycles for b in spec_roofline(spec, "rngd-2chip").bounds}
    assert got["dma"] - 5 * 500 == 2000 + (1024 * 128 + 512 * 128 + 1024 * 512 * 4) // 256
    # 512 i8 MACs a cycle on each of 512 slices a chip, two chips; main and sub fetch 32 B a cycle each
    assert got["compute"] == 2000 + 500 + 290 + 1024 * 512 * 128 // (512 * 512 * 2) + 500
    assert got["fetch"] == 2000 + 500 + 290 + (1024 * 128 + 512 * 128) // (32 * 2 * 512 * 2)


def test_a_tensor_split_over_chips_costs_a_command_per_chip_holding_a_part() -> None:
    # a[m,k] and the result are split along m over the two chips (a part each), w is copied whole
    # to each: any kernel reads a in 2 commands at the least, w in 1, writes the result in 2 (one
    # command's HBM bytes lie in one chip's part: checked on the compiled candidates below)
    spec = contraction(GEMM, sizes=dict(m=1024, n=512, k=128), chips=2)
    assert demand(spec).parts == (2, 1, 2) and chip_commands(demand(spec)) == 5
    got = {b.name: b.cycles for b in spec_roofline(spec, "rngd-2chip").bounds}
    assert got["dma"] == 2000 + 5 * 500 + (1024 * 128 + 512 * 128 + 1024 * 512 * 4) // 256
    # m = 40 on two chips of 32 rows each: both hold given rows; m = 20: only chip 0 does
    assert demand(contraction(GEMM, sizes=dict(m=40, n=64, k=32), chips=2)).parts == (2, 1, 2)
    assert demand(contraction(GEMM, sizes=dict(m=20, n=64, k=32), chips=2)).parts == (1, 1, 1)
    batched = demand(contraction("out[b,m,n] = a[b,m,k] * w[b,n,k]", sizes=dict(b=2, m=64, n=128, k=64), chips=2))
    assert batched.parts == (2, 2, 2) and chip_commands(batched) == 6
    # one chip: the one command per tensor and the program's wait, as before
    assert demand(contraction(GEMM, sizes=dict(m=64, n=64, k=32))).parts == (1, 1, 1)


def _fewest_requests(shape: tuple[int, ...], given: tuple[int, ...], itemsize: int, request: int) -> int:
    """Oracle: the fewest intervals of `request` bytes covering the given bytes of a row-major array,
    by dynamic programming from the right end (h[x]: the fewest covering every given byte below x)."""
    mask = np.zeros(shape + (itemsize,), bool)
    mask[tuple(slice(0, g) for g in given)] = True
    flat = mask.ravel()
    h = [0] * (flat.size + 1)
    for x in range(1, flat.size + 1):
        h[x] = h[x - 1] if not flat[x - 1] else 1 + min(h[max(0, s)] for s in range(x - request, x))
    return h[-1]


def test_the_dma_engine_pays_the_requests_that_cover_a_padded_host_arrays_given_bytes() -> None:
    rng = np.random.default_rng(54)
    for _ in range(80):
        shape = tuple(int(n) for n in rng.integers(1, 6, rng.integers(1, 4)))
        given = tuple(int(rng.integers(0, n + 1)) for n in shape)
        itemsize, request = int(rng.choice([1, 2, 4])), int(rng.choice([2, 4, 8, 16]))
        assert Layout(shape, given, itemsize).requests(request) == _fewest_requests(shape, given, itemsize, request), \
            (shape, given, itemsize, request)
    # 300 x 200 x 100 i8 -> i32 in synth's host arrays: a 320 x 128 (two of its rows of 100 given bytes
    # a request), w 256 x 128 (100 requests), the result 320 x 256 i32 (each given row of 800 bytes
    # spans 4 of its row's 1,024: 1,200 requests, where its 240,000 bytes alone would be 938)
    spec = contraction(GEMM, sizes=dict(m=300, n=200, k=100))
    got = {b.name: b.cycles for b in spec_roofline(spec).bounds}
    assert got["dma"] == 2000 + 3 * 500 + 150 + 100 + 1200 + 290 + 300 * 200 * 100 // (512 * 256) + 1  # one cluster
    # the candidates the search bounds lowest of a small padded space are no faster than it
    spec = contraction(GEMM, sizes=dict(m=40, n=72, k=40))
    roof, space = spec_roofline(spec), spec.space()
    bounded = [p for p in space.points() if space.bound(p, RATES) is not None]
    for params in sorted(bounded, key=lambda p: space.bound(p, RATES))[:2]:
        outcome = compile_kernel(space.factory(**params), get_target("rngd"))
        assert outcome.status == "ok", outcome.diagnostics
        assert schedule_artifact(outcome.artifact, target=get_target("rngd"), rates=RATES).makespan >= roof.cycles
    # no padding: the bytes alone, as before
    assert {b.name: b.cycles for b in spec_roofline(contraction(GEMM, sizes=dict(m=512, n=512, k=64))).bounds}[
        "dma"] == 8270  # the first test's, the MACs on one cluster


def _one_chip_part_per_command(kernel: Any) -> None:
    """Every DMA command's HBM bytes lie in one chip's part of its HBM tensor (`chip_commands`' premise)."""
    for op in kernel.ops():
        if not isinstance(op, DmaOp):
            continue
        for side, t in (("src", op.input_type), ("dst", op.output_type)):
            if t.kind != "hbm" or t.chip.size == 1:
                continue
            part = hbm_bytes(t, t.dtype.bits) // t.chip.size
            for cmd in op.commands:
                lo = cmd.src_base if side == "src" else cmd.dst_base
                hi = lo + sum((e.size - 1) * (e.src_stride if side == "src" else e.dst_stride) for e in cmd.entries)
                assert lo // part == hi // part, (op, cmd)


def test_the_dma_bound_waits_on_a_program_or_pays_more_start_ups() -> None:
    # one command per tensor: the last load, then a program (290 start-up, every MAC on main),
    # then the store; one command more: 500 more and still a program's start-up of waiting (or
    # what of the wait the extra command does not cover); two more: 1,000. The smallest.
    assert program_gap(500, 290, 64, 0) == 290 + 64
    assert program_gap(500, 290, 300, 0) == 500 + 90      # one more command covers 500 of the 590
    assert program_gap(500, 290, 1000, 0) == 500 + 290    # a long contraction: one more command, a start-up's wait
    assert program_gap(500, 600, 1000, 0) == 1000         # a slow program start-up: two more commands
    assert program_gap(500, 290, 1000, 1) == 290           # a bias loaded last: only the epilogue's program
    bias = roofline(RATES, Demand(macs=2 ** 20, bits=8, slices=256, loads=(1, 1, 1), stores=(1,), late_loads=1))
    plain = roofline(RATES, Demand(macs=2 ** 20, bits=8, slices=256, loads=(1, 1, 1), stores=(1,)))
    assert {b.name: b.cycles for b in plain.bounds}["dma"] - {b.name: b.cycles for b in bias.bounds}["dma"] == 8


def test_a_long_contractions_roofline_is_not_above_its_best_candidates() -> None:
    # bf16 128 x 128 x 1024 on half the slices: 512 cycles of MACs, so the wait alone is 802; one
    # command more pays 500 and, splitting the store or an operand to hide the wait, still idles
    # 302 at the least (program_gap, tests/synth/test_synth_gap.py); the two candidates the
    # search bounds lowest are still no faster than it
    spec = contraction(GEMM, dtype="bf16:f32", sizes=dict(m=128, n=128, k=1024), pe=2)
    got = {b.name: b.cycles for b in spec_roofline(spec).bounds}
    assert got["dma"] == 2000 + 3 * 500 + (2 * 128 * 1024 * 2 + 128 * 128 * 4) // 256 + 290 + 512
    space = spec.space()
    bounded = [p for p in space.points() if space.bound(p, RATES) is not None]
    for params in sorted(bounded, key=lambda p: space.bound(p, RATES))[:2]:
        outcome = compile_kernel(space.factory(**params), get_target("rngd"))
        assert outcome.status == "ok", outcome.diagnostics
        assert schedule_artifact(outcome.artifact, target=get_target("rngd"), rates=RATES).makespan >= got["dma"]

SPECS = [
    (GEMM, "i8:i32", dict(m=256, n=256, k=64), {}, "rngd"),
    (GEMM, "bf16:f32", dict(m=64, n=64, k=64), {}, "rngd"),
    ("y[m] = a[m,k] * x[k]", "i8:i32", dict(m=300, k=64), {}, "rngd"),
    ("out[b,m,n] = a[b,m,k] * w[b,n,k]", "i8:i32", dict(b=2, m=64, n=128, k=64), {}, "rngd"),
    (GEMM, "i8:i32", dict(m=256, n=256, k=128), dict(pe=2), "rngd"),
    (GEMM, "i8:i32", dict(m=512, n=256, k=64), dict(chips=2), "rngd-2chip"),
    ("out[b,m,n] = a[b,m,k] * w[b,n,k]", "i8:i32", dict(b=2, m=64, n=128, k=64), dict(chips=2), "rngd-2chip"),
]


@pytest.mark.parametrize("einsum, dtype, sizes, kw, target", SPECS,
                         ids=[f"{e.split('=')[0].strip()}-{d}-{'x'.join(map(str, s.values()))}-{t}"
                              for e, d, s, _, t in SPECS])
def test_no_candidate_is_faster_than_the_roofline_or_its_own_work(einsum: str, dtype: str, sizes: dict[str, int],
                                                                   kw: dict, target: str) -> None:
    spec = contraction(einsum, dtype=dtype, sizes=sizes, **kw)
    roof = spec_roofline(spec, target)
    space = spec.space()
    tgt = get_target(target)
    compiled = 0
    points = space.points()
    for params in points[::max(1, len(points) // 12)]:   # a dozen spread over the space: each compiles
        kernel = space.factory(**params)
        outcome = compile_kernel(kernel, tgt)
        if outcome.status != "ok":
            continue
        at = for_chips(tgt, kernel.chips)
        makespan = schedule_artifact(outcome.artifact, target=at, rates=RATES).makespan
        assert makespan >= roof.cycles, (params, makespan, roof)
        assert makespan >= work(outcome.artifact.kernel, RATES, at).bound, params
        _one_chip_part_per_command(outcome.artifact.kernel)
        compiled += 1
    assert compiled >= 2


def _unrolled(tmp_path: Path) -> Path:
    text = (ROOT / "examples/loops/gemm_rolled.py").read_text(encoding="utf-8")
    assert "for i in ctx.loop(MT):" in text
    path = tmp_path / "gemm_unrolled.py"
    path.write_text(text.replace("for i in ctx.loop(MT):", "for i in range(MT):"), encoding="utf-8")
    return path


def test_a_rolled_loops_work_counts_every_iteration_as_its_unrolled_twin(tmp_path: Path) -> None:
    works = []
    for path in (ROOT / "examples/loops/gemm_rolled.py", _unrolled(tmp_path)):
        module, error = load_file(path)
        assert error is None, error
        outcome = compile_kernel(module.gemm_rolled, get_target("rngd"))
        assert outcome.status == "ok", outcome.diagnostics
        works.append(work(outcome.artifact.kernel, RATES, get_target("rngd")))
    rolled, unrolled = works
    for ctx in ("tdma", "main", "sub"):
        assert rolled.contexts[ctx] == unrolled.contexts[ctx], ctx
    assert (rolled.commands, rolled.programs, rolled.dma_bytes) == (unrolled.commands, unrolled.programs,
                                                                    unrolled.dma_bytes)
    assert rolled.commands == 2 + 4 + 4 * 2   # w's two blocks, a's four, eight result tiles


def test_synth_txt_and_json_give_the_efficiency_and_name_what_binds_the_winner(tmp_path: Path) -> None:
    spec = contraction(GEMM, sizes=dict(m=256, n=256, k=64))
    result = synthesize(spec, tmp_path)
    text = (tmp_path / "synth.txt").read_text(encoding="utf-8")
    data = json.loads((tmp_path / "synth.json").read_text(encoding="utf-8"))
    roof = spec_roofline(spec)
    winner = result.tune.winner
    assert f"roofline: no kernel of this contraction runs in under {roof.cycles:,} cycles" in text
    assert f"binding: {roof.binding.name} (" in text
    assert f"efficiency: the winner's makespan {winner.makespan:,} is {winner.makespan / roof.cycles:.2f}x" in text
    bound_by = re.search(r"why: the winner is bound by ([^:]+):", text)
    assert bound_by and bound_by.group(1) in set(CLASSES.values())
    assert data["explanation"]["winner"]["bound_by"] == bound_by.group(1)
    assert re.search(r"vs the runner-up #\d+ \(placement=", text)
    # which tensor's bytes the winner moves more than once: each of a, w and out against its size
    moved = data["explanation"]["winner"]["tensor_bytes"]
    assert sum(moved.values()) == data["explanation"]["winner"]["dma_bytes"]
    assert moved["out"] == 256 * 256 * 4 and moved["w"] >= 256 * 64 and moved["a"] >= 256 * 64
    assert ("  bytes moved per tensor: " + ", ".join(f"{name} {moved[name]:,} ({moved[name] / size:.2f}x its {size:,})"
                                                     for name, size in (("a", 256 * 64), ("w", 256 * 64),
                                                                        ("out", 256 * 256 * 4)))) in text.splitlines()
    head = next(line for line in text.splitlines() if line.lstrip().startswith("# "))
    assert "efficiency" in head.split()
    assert data["roofline"]["cycles"] == roof.cycles and data["roofline"]["binding"] == roof.binding.name
    assert data["efficiency"] == round(winner.makespan / roof.cycles, 4)
    mine = next(c for c in data["candidates"] if c["index"] == winner.index)
    assert mine["efficiency"] == data["efficiency"]
    assert result.text == text
    # the work the explanation reads is the tune bound's (launch + the busiest context), found apart
    for key in ("winner", "runner_up"):
        entry = data["explanation"][key]
        row = next(c for c in data["candidates"] if c["index"] == entry["index"])
        assert row["bound"] == entry["launch"] + max(sum(kinds.values()) for kinds in entry["contexts"].values())


def test_a_winner_all_compiled_candidates_tie_with_is_set_against_the_best_pruned_one(tmp_path: Path) -> None:
    # a GEMV whose rows with their k overflow the TRF, under an epilogue (no split of k): a row
    # per slice is its one layout, its packets tie, and reloading x's TRF every pass
    # (reuse='none') is pruned by its bound
    result = synthesize(contraction("y[m] = relu(a[m,k] * x[k])", sizes=dict(m=600, k=16384)), tmp_path)
    pruned = min((c for c in result.tune.candidates if c.status == "pruned"), key=lambda c: (c.bound, c.index))
    assert all(c.makespan == result.tune.winner.makespan for c in result.tune.ranked())
    text = (tmp_path / "synth.txt").read_text(encoding="utf-8")
    assert f"vs the runner-up #{pruned.index} ({pruned.label()}, pruned: its bound {pruned.bound:,} alone is" in text
    assert "it loses on HBM<->DM movement: it moves 8,388,608 more bytes" in text
