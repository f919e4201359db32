"""Two tiles' blocks of `w` in the TRF at once (synth/trf_double.py, issue 54's efficiency
goal): `w` in two DMAs around `a`'s, `a` once to the 2 slices of its tile row, tile j + 1's TRF load on the
other context while tile j contracts, each result stored one tile late. Where the placements
are offered, the text, kernels equal to numpy on cpu and visa, the parameter bound, and the
i8 512^3 GEMM of the benchmark in the model."""

from __future__ import annotations

import itertools
from typing import Any

import pytest

from backends.npu import compile_kernel
from driver.tune_eval import early_bound
from synth import contraction
from synth.bound import candidate_bound
from synth.offer import offered
from synth.space import build, points, source
from synth.tiling import geometry
from tests.synth.lever_checks import equals_numpy
from tu_ops.target import get_target
from visa.schedule import builtin_rates, schedule_artifact

GEMM = "out[m,n] = a[m,k] * w[n,k]"
DOUBLE = ", TRF double-buffered"
WINNER = "128x2 of 4x64, w by switch" + DOUBLE
RATES = builtin_rates("rngd")
CHUNKED = "128x2 of 4x128, k in 3 time blocks, w by switch" + DOUBLE
I8_CHUNKED = "128x2 of 4x128, k in 2 time blocks, w by switch" + DOUBLE


def test_the_double_buffered_placements_come_last_and_add_no_tile_levers() -> None:
    levers = points(contraction(GEMM, sizes=dict(m=512, n=512, k=512)))
    doubles = [p for p in levers["placement"] if p.endswith(DOUBLE)]
    assert doubles == [WINNER, "64x4 of 8x64, w by switch" + DOUBLE, I8_CHUNKED]
    assert levers["placement"][-len(doubles):] == doubles   # appended: the others keep their indices
    assert "order" not in levers and "reuse" not in levers   # 4 tiles, but their loops are their own
    assert geometry(WINNER).double and geometry(WINNER).label() == WINNER
    # `--pe 2`: its one (`128x1 of 2x128`) cannot be spread by the Switch Engine; 128-byte result
    # rows (`64x4 of 8x32`): none
    assert not [p for p in points(contraction(GEMM, sizes=dict(m=256, n=256, k=128), pe=2))["placement"]
                if p.endswith(DOUBLE)]
    # bf16 k = 384: no single-tile `w by switch` placement with k whole; the one with k in 3 time
    # blocks gets the chunked twin, last (2 time blocks: a unit of 48 KB, two overflow the TRF)
    placements = points(contraction(GEMM, dtype="bf16:f32", sizes=dict(m=512, n=512, k=384)))["placement"]
    assert [p for p in placements if p.endswith(DOUBLE)] == [CHUNKED] == placements[-1:]


def test_where_other_placements_bring_tile_levers_a_double_buffered_one_is_offered_once_a_packet() -> None:
    # 2048^2 x 128: the smaller placements loop over tiles (order, reuse and pair levers), which a
    # double-buffered kernel's own loop ignores: only their first values are offered
    spec = contraction(GEMM, sizes=dict(m=2048, n=2048, k=128))
    levers = points(spec)
    doubles = [p for p in levers["placement"] if p.endswith(DOUBLE)]
    assert len(doubles) == 4 and {"order", "reuse", "pair"} <= set(levers)
    kept = [dict(zip(levers, v)) for v in itertools.product(*levers.values())]
    kept = [p for p in kept if p["placement"] in doubles and offered(spec, p)]
    assert sorted((p["placement"], p["packet"]) for p in kept) == sorted(
        (d, packet) for d in doubles for packet in levers["packet"])   # w stationary, one piece
    assert all((p["order"], p["reuse"], p["pair"]) == ("ij", "outer", False) for p in kept)


def test_the_next_blocks_trf_load_runs_on_the_other_context_before_this_tile_contracts() -> None:
    text = source(contraction(GEMM, sizes=dict(m=512, n=512, k=512)), dict(placement=WINNER, trf="w", packet=32,
                                                                             pieces=1))
    # w in two DMAs, its first two tiles' blocks before a and the other two after it
    assert 'rows = w.view().tile(m("N / 256"), 1, m("1 # 2, N % 256, K"), h)' in text
    assert "halves = [w_half(0)]\n    a_dm = a_block(0)\n    halves.append(w_half(1))\n" in text
    assert "trfs.append(stationary(blocks[j + 1], (ctx.sub, ctx.main)[(j + 1) % 2]))" in text
    assert "return ((on or ctx.sub).begin(block.view())" in text and "store(results[j - 1], 0, j - 1)" in text


def _scheduled(spec: Any, point: dict[str, Any]) -> tuple[Any, Any, list[tuple[int, str]]]:
    """The kernel synth builds at `point`, its modelled schedule, and its TRF loads' (start, context)."""
    kernel = build(spec, point)
    outcome = compile_kernel(kernel, get_target("rngd"))
    assert outcome.status == "ok", outcome.diagnostics
    schedule = schedule_artifact(outcome.artifact, target=get_target("rngd"), rates=RATES)
    loads = sorted((s.start, s.step.context) for s in schedule.slots
                   if any(r.mnemonic == "trf_load" for r in s.step.records))
    return kernel, schedule, loads


@pytest.mark.parametrize("dtype, k, packet", [("i8:i32", 512, 32), ("bf16:bf16", 256, 16)])
def test_a_double_buffered_kernel_equals_numpy_on_cpu_and_visa(dtype: str, k: int, packet: int) -> None:
    # the smallest the Switch Engine spreads over 128 slices: 16 groups x 8 pieces of 32 bytes
    # 128 x 256: two tiles of 128 columns, a slice's block 64 rows (built directly: the space
    # offers it only where a block is a quarter of the TRF or more)
    spec = contraction(GEMM, dtype=dtype, sizes=dict(m=128, n=256, k=k))
    equals_numpy(spec, dict(placement="128x2 of 1x64, w by switch" + DOUBLE, trf="w", packet=packet, pieces=1))


def test_the_i8_512_gemm_loads_the_next_block_beside_this_contraction() -> None:
    spec = contraction(GEMM, sizes=dict(m=512, n=512, k=512))
    point = dict(placement=WINNER, trf="w", packet=32, pieces=1)
    kernel, schedule, loads = _scheduled(spec, point)
    contractions = sorted(s.start for s in schedule.slots if any(r.mnemonic == "contract_outer" for r in s.step.records))
    assert [c for _, c in loads[:2]] in (["main", "sub"], ["sub", "main"]) and loads[0][0] == loads[1][0]
    # the third block loads (into the first's rows) beside the second contraction, once w's second half is in
    dmas = sorted((s.start, s.end) for s in schedule.slots if s.step.context == "tdma")
    assert contractions[0] <= dmas[2][0] and loads[2][0] == dmas[2][1] and contractions[1] < loads[2][0]
    # the former winner `64x4 of 8x128, w by switch`, pieces=2: 13,716 (a copied to 4 slices); with w in
    # one DMA 12,970 (the DMA context waited 802 cycles for the first contraction after a)
    assert schedule.makespan == 12668
    # w in two commands, a in one, 4 stores: the bound from the parameters stays under the early bound
    assert candidate_bound(spec, point, RATES) == 2000 + 7 * 500 + (262144 + 2 * 262144 + 1048576) // 256
    assert candidate_bound(spec, point, RATES) <= early_bound(kernel.trace(get_target("rngd")), get_target("rngd"),
                                                              RATES)


@pytest.mark.parametrize("dtype, k, packet, tb", [("i8:i32", 512, 32, 2), ("bf16:bf16", 384, 16, 3)])
def test_a_chunked_double_buffered_kernel_equals_numpy_on_cpu_and_visa(dtype: str, k: int, packet: int,
                                                                        tb: int) -> None:
    # k in 2 time blocks: 2 tiles x 2 chunks, each chunk's sums added to the earlier one's from the
    # VRF, a tile's result stored after the next tile's first contraction (built directly, as above);
    # in 3, the second tile's first chunk comes second, both tiles' sums in the VRF at once
    spec = contraction(GEMM, dtype=dtype, sizes=dict(m=128, n=512, k=k))
    equals_numpy(spec, dict(placement=f"128x2 of 1x128, k in {tb} time blocks, w by switch" + DOUBLE, trf="w",
                            packet=packet, pieces=1))


def test_the_bf16_gemm_double_buffers_its_chunks() -> None:
    spec = contraction(GEMM, dtype="bf16:f32", sizes=dict(m=512, n=512, k=384))
    point = dict(placement=CHUNKED, trf="w", packet=16, pieces=1)
    text = source(spec, point)
    # all of w in one DMA (each slice one row of each tile's block), then a a DMA a chunk; units in DM tiles
    assert 'DmTensor[bf16, Chip, Cluster, WSlice, m("N / 256, K")]' in text
    assert "blocks = w_all()\n    a_dm = a_block(0)\n" in text
    # three chunks a tile: the second tile's first chunk second, while a's second chunk moves
    assert "units = [(0, 0), (1, 0)] + [(j, t) for j in range(2) for t in range(1, 3)]" in text
    kernel, schedule, loads = _scheduled(spec, point)
    # the first two beside a's first chunk, then main and sub in turn (sub, main, sub, main)
    assert [c for _, c in loads[2:]] == ["sub", "main", "sub", "main"]
    # `64x4 of 8x128, k in 3 time blocks, w by switch` in two pieces: 17,276 (a copied to 4 slices);
    # tile by tile, the loads on sub but the second and the last: 15,770
    assert schedule.makespan == 15548
    # w in one command, a in three, 2 stores: a copied to 2 slices
    assert candidate_bound(spec, point, RATES) == 2000 + 6 * 500 + (2 * 393216 + 393216 + 1048576) // 256
    assert candidate_bound(spec, point, RATES) <= early_bound(kernel.trace(get_target("rngd")), get_target("rngd"),
                                                              RATES)


def test_the_i8_512_gemm_stores_two_tiles_of_k_in_two_time_blocks() -> None:
    # 128 columns a slice with all of k overflow two TRF halves: 2 tiles of 2 chunks, 5 DMA commands
    # (w, a's 2 chunks, 2 stores) where `128x2 of 4x64, w by switch, TRF double-buffered` issues 7 (12,668)
    spec = contraction(GEMM, sizes=dict(m=512, n=512, k=512))
    point = dict(placement=I8_CHUNKED, trf="w", packet=32, pieces=1)
    kernel, schedule, loads = _scheduled(spec, point)
    assert [c for _, c in loads[2:]] == ["sub", "sub"]   # main only contracts once the first two are in
    assert schedule.makespan == 12470
    assert candidate_bound(spec, point, RATES) == 2000 + 5 * 500 + (2 * 262144 + 262144 + 1048576) // 256
    assert candidate_bound(spec, point, RATES) <= early_bound(kernel.trace(get_target("rngd")), get_target("rngd"),
                                                              RATES)
