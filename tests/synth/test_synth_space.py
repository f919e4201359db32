"""The space `npu-opt synth` searches, generated from the machine (issue 54 item 1): per-slice
blocks from the target's TRF, DM, flit and packet limits; tiles on fewer slices with taller
blocks; batch elements side by side on slices; duplicate candidates dropped by their canonical
source; points the budgets refuse left out. Each new kind of candidate is shown to win where
the issue found the old space losing, with the makespans, and to equal numpy on cpu and visa."""

from __future__ import annotations

import io
import itertools
import types

import attrs
import numpy as np

from backends import get_backend
from backends.npu import compile_kernel
from driver.synth_command import with_estimate
from synth import contraction
from synth.space import canonical, model_twin, points, source
from synth.tiling import blocks, geometry
from tests.synth.test_synth import _operands
from tu_ops.target import get_target, rngd
from visa.schedule import builtin_rates, schedule_artifact

GEMM = "out[m,n] = a[m,k] * w[n,k]"
BATCHED = "out[b,m,n] = a[b,m,k] * w[b,n,k]"


def _kernel(text: str) -> object:
    module = types.ModuleType(f"synth_space_{abs(hash(text))}")
    exec(compile(text, f"<{module.__name__}>", "exec", dont_inherit=True), module.__dict__)  # noqa: S102
    return module.synth_kernel


def _makespan(spec, point) -> int:
    outcome = compile_kernel(_kernel(source(spec, point)), get_target("rngd"))
    assert outcome.status == "ok", outcome.diagnostics
    return schedule_artifact(outcome.artifact, target=get_target("rngd"), rates=builtin_rates("rngd")).makespan


def _equals_numpy(text: str, sizes: dict[str, int]) -> None:
    """The batched i8 kernel `text` equals numpy's einsum on cpu and visa, bit for bit."""
    b, m, n, k = (sizes[i] for i in "bmnk")
    a, w = _operands([(b, m, k), (b, n, k)], "i8")
    want = np.einsum("bmk,bnk->bmn", a.astype(np.int64), w.astype(np.int64)).astype(np.int32)
    for backend in ("cpu", "visa"):
        out = np.zeros((b, m, n), np.int32)
        get_backend(backend).run(_kernel(text), (a, w, out))
        assert np.array_equal(out, want), backend


def test_the_blocks_follow_the_targets_trf_dm_and_flit_limits() -> None:
    spec = contraction(GEMM, dtype="i8:i32", sizes=dict(m=512, n=512, k=512))
    const = rngd().constants
    shapes = blocks(spec, const)
    # w's rows with k = 512 i8 in the 64 KiB TRF: at most 128 columns; rows from 8 (one lane group)
    assert max(c for _, c in shapes) == 128 and min(r for r, _ in shapes) == 8
    assert (64, 64) in shapes and (16, 128) in shapes and (8, 256) not in shapes
    half = blocks(spec, attrs.evolve(const, TRF_BYTES=const.TRF_BYTES // 2))
    assert max(c for _, c in half) == 64
    small_dm = blocks(spec, attrs.evolve(const, DM_SLICE_BYTES=64 * 1024))
    assert all((r + c) * 512 + r * c * 4 <= 64 * 1024 for r, c in small_dm) and (64, 64) not in small_dm
    # bf16 results: a row of 8 columns is 16 bytes, under one 32-byte flit
    bf16 = contraction(GEMM, dtype="bf16:bf16", sizes=dict(m=512, n=512, k=64))
    assert min(c for _, c in blocks(bf16, const)) == 16


def test_a_tile_on_fewer_slices_with_taller_blocks_beats_the_old_spaces_best_on_512_cubed() -> None:
    spec = contraction(GEMM, dtype="i8:i32", sizes=dict(m=512, n=512, k=512))
    placements = points(spec)["placement"]
    assert "64x4 of 8x128" in placements  # the old space's best
    # the geometries (a placement whose w block splits by whole rows is offered as its `w by switch` twin)
    taller = [p.removesuffix(", w by switch") for p in placements if "of the slices" in p]
    assert "32x4 of 16x128, on 1/2 of the slices" in taller and "8x8 of 64x64, on 1/4 of the slices" in taller
    old = _makespan(spec, dict(placement="64x4 of 8x128", trf="w", packet=32))
    new = _makespan(spec, dict(placement="8x8 of 64x64, on 1/4 of the slices", trf="w", packet=32))
    half = _makespan(spec, dict(placement="32x4 of 16x128, on 1/2 of the slices", trf="w", packet=32))
    assert half * 1.5 < old and new * 2 < old   # 81904 -> 51184 and 33776 cycles (schedule model)


def test_batch_elements_side_by_side_on_slices_beat_one_after_another_and_equal_numpy() -> None:
    sizes = dict(b=8, m=128, n=128, k=64)
    spec = contraction(BATCHED, dtype="i8:i32", sizes=sizes)
    placements = points(spec)["placement"]
    side = [p.removesuffix(", w by switch") for p in placements if "batch elements side by side" in p]
    assert {geometry(p).sb for p in side} == {2, 4, 8}
    assert all(geometry(p).sb * geometry(p).sm * geometry(p).sn * geometry(p).idle == 256 for p in side)
    point = dict(placement="4x2 of 32x64, 8 batch elements side by side, on 1/4 of the slices", trf="w", packet=32)
    assert point["placement"] in side
    text = source(spec, point)
    assert 'Slice = m("B % 8, M % 128 / 32, N % 128 / 64, 1 # 4")' in text and "for bb in" not in text
    in_time = min(_makespan(spec, dict(placement=p, trf="w", packet=32)) for p in placements
                  if "side by side" not in p)
    assert _makespan(spec, point) * 3 < in_time   # 8304 against 29k+ cycles (schedule model)
    _equals_numpy(text, sizes)


def test_a_batch_larger_than_its_slices_steps_in_time_over_groups_side_by_side() -> None:
    sizes = dict(b=4, m=256, n=128, k=32)
    spec = contraction(BATCHED, dtype="i8:i32", sizes=sizes)
    point = dict(placement="8x4 of 32x32, 2 batch elements side by side, on 1/4 of the slices", trf="w", packet=32)
    assert point["placement"] in points(spec)["placement"]
    text = source(spec, point)
    assert "for bb in range(2):" in text and 'Slice = m("B % 2, ' in text
    _equals_numpy(text, sizes)


def test_duplicate_candidates_are_dropped_by_their_canonical_source() -> None:
    # bf16, k = 384: the split levers listed one placement twice; one tile makes order and reuse moot
    spec = contraction(GEMM, dtype="bf16:bf16", sizes=dict(m=512, n=512, k=384))
    space = spec.space()
    product = list(itertools.product(*(v for _, v in space.params)))
    kept = space.points()
    assert len(kept) < len(product)
    texts = [canonical(source(spec, p)) for p in kept]
    assert len(set(texts)) == len(texts)
    names = [name for name, _ in space.params]
    levers = dict(space.params)
    everyone = {canonical(source(spec, model_twin(dict(zip(names, values)), levers))) for values in product}
    assert everyone == set(texts)   # no kernel lost but the packets' twins (below)


def test_the_packets_twins_tie_in_the_model_and_only_the_first_is_compiled() -> None:
    # the twins cost the same in every kind of step the packet touches: the contraction's
    # records, a store beside the contraction (pieces=2: the TRF read's width), k in time blocks,
    # a GEMV's rows in the TRF; each space keeps the 32-byte packet alone
    gemm = contraction(GEMM, dtype="i8:i32", sizes=dict(m=64, n=64, k=128))
    bf16 = contraction(GEMM, dtype="bf16:f32", sizes=dict(m=64, n=64, k=64))
    gemv = contraction("y[m] = a[m,k] * x[k]", dtype="i8:i32", sizes=dict(m=256, k=256))
    for spec, point in ((gemm, dict(placement="4x2 of 16x32, on 1/32 of the slices", trf="w", pieces=2)),
                        (bf16, dict(placement="8x2 of 8x32, on 1/16 of the slices", trf="w")),
                        (gemv, dict(layout="8 rows per slice", reuse="trf"))):
        first, second = points(spec)["packet"]
        assert _makespan(spec, point | dict(packet=first)) == _makespan(spec, point | dict(packet=second)), point
        assert {p["packet"] for p in spec.space().points()} == {first}


def test_points_beyond_the_trf_are_left_out_unless_nothing_fits() -> None:
    spec = contraction(GEMM, dtype="i8:i32", sizes=dict(m=4096, n=4096, k=512))
    kept = spec.space().points()
    for p in kept:  # the stationary operand's rows with k = 512 fit 64 KiB: at most 128 of them
        g = geometry(p["placement"])
        assert (g.c if p["trf"] == "w" else g.r) * 512 <= 65536
        assert p.get("reuse") != "all" or (4096 // g.tm) * (4096 // g.tn) <= 16
    nothing = contraction(GEMM, dtype="i8:i32", sizes=dict(m=512, n=512, k=1 << 20))
    assert len(nothing.space().points()) == 4   # searched whole (one packet: the twins tie): the rules refuse each


def test_the_progress_line_counts_and_estimates_the_time_left() -> None:
    ticks = iter([0.0, 2.0, 6.0])
    err = io.StringIO()
    progress = with_estimate(4, err, clock=lambda: next(ticks))
    candidate = types.SimpleNamespace(status="ok", index=0, makespan=10, code=None, label=lambda: "packet=32")
    progress(candidate)
    progress(candidate)
    lines = err.getvalue().splitlines()
    assert lines[0].startswith("[1/4, 2 s, about 6 s left] ok")
    assert lines[1].startswith("[2/4, 6 s, about 6 s left] ok")
