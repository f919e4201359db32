"""The TRF loaded by main and sub at once (synth/both_loads.py, issue 54's efficiency goal):
a `w by switch` block loaded as two TRF tensors of half of `k`, one on each context, each
contracted against its half of the stream and the halves added in the VRF. Where the twins
are offered, that their kernels equal numpy on cpu and visa, and the two benchmark forms it
changes (two chips, small bf16) in the model."""

from __future__ import annotations

import pytest

from backends.npu import compile_kernel
from driver.synth_explain import spec_roofline
from synth import contraction
from synth.space import build, points, source
from synth.tiling import geometry
from tests.synth.lever_checks import equals_numpy, makespan  # the numpy check on cpu and visa, the model
from tu_ops.target import for_chips, get_target
from visa.schedule import builtin_rates, schedule_artifact

GEMM = "out[m,n] = a[m,k] * w[n,k]"
BOTH = ", TRF loaded by main and sub"


def test_the_twins_come_after_every_other_placement_and_only_where_they_apply() -> None:
    two = points(contraction(GEMM, sizes=dict(m=1024, n=512, k=128), chips=2))["placement"]
    twins = [p for p in two if p.endswith(BOTH)]
    assert "256x1 of 2x512, w by switch" + BOTH in twins
    assert two[-len(twins):] == twins                     # appended: the others keep their indices
    assert all(p[:-len(BOTH)] in two and geometry(p).halves and geometry(p).switch for p in twins)
    assert geometry("256x1 of 2x512, w by switch" + BOTH).label() == "256x1 of 2x512, w by switch" + BOTH
    # halves of k = 64 i8 are 32 bytes, not whole 64-byte packets; an epilogue, a result of
    # several tiles: none
    for spec in (contraction(GEMM, sizes=dict(m=512, n=512, k=64)),
                 contraction("q[m,n] = relu(a[m,k] * w[n,k] + b[n])", sizes=dict(m=32, n=256, k=128)),
                 contraction(GEMM, sizes=dict(m=4096, n=512, k=128))):
        assert not [p for p in points(spec)["placement"] if p.endswith(BOTH)]


def test_each_context_switches_its_half_of_k_into_the_trf() -> None:
    spec = contraction(GEMM, sizes=dict(m=32, n=256, k=128))
    text = source(spec, dict(placement="4x1 of 8x256, on 1/64 of the slices, w by switch" + BOTH, trf="w",
                             packet=32, pieces=1))
    assert "((ctx.sub, ctx.main)[t].begin(block.view().tile(m(\"K / 64\")" in text
    assert '.to_trf(m("N % 8"), m("N / 8 % 32, K % 64")))' in text
    assert ".contract_outer(trf[t]," in text and "vector_fxp(FxpBinaryOp.ADD_FXP, acc)" in text


@pytest.mark.parametrize("dtype, sizes, placement", [
    ("i8:i32", dict(m=32, n=256, k=128), "4x1 of 8x256, on 1/64 of the slices, w by switch"),
    ("bf16:bf16", dict(m=32, n=128, k=128), "4x1 of 8x128, on 1/64 of the slices, w by switch"),
])
def test_a_trf_loaded_by_both_equals_numpy_on_cpu_and_visa(dtype: str, sizes: dict[str, int],
                                                           placement: str) -> None:
    spec = contraction(GEMM, dtype=dtype, sizes=sizes)
    assert placement + BOTH in points(spec)["placement"]
    equals_numpy(spec, dict(placement=placement + BOTH, trf="w", packet=32 if dtype == "i8:i32" else 16, pieces=1))


def test_the_two_chip_gemm_loads_its_trf_on_both_contexts_within_the_goal() -> None:
    spec = contraction(GEMM, sizes=dict(m=1024, n=512, k=128), chips=2)
    kernel = build(spec, dict(placement="256x1 of 2x512, w by switch" + BOTH, trf="w", packet=32, pieces=1))
    tgt = get_target("rngd-2chip")
    outcome = compile_kernel(kernel, tgt)
    assert outcome.status == "ok", outcome.diagnostics
    schedule = schedule_artifact(outcome.artifact, target=for_chips(tgt, kernel.chips), rates=builtin_rates("rngd"))
    loads = [s for s in schedule.slots if any(r.mnemonic == "trf_load" for r in s.step.records)]
    assert sorted(s.step.context for s in loads) == ["main", "sub"] and loads[0].start == loads[1].start
    # the whole-k twin waits 826 cycles for its one TRF load: 15,844; the former winner
    # (`128x2 of 4x256, w by switch`, a copied to 2 slices) 15,530 = 1.154 of the roofline
    roof = spec_roofline(spec, "rngd-2chip").cycles
    assert (schedule.makespan, roof) == (15308, 13460) and schedule.makespan / roof <= 1.15


def test_the_small_bf16_gemm_loads_its_trf_on_both_contexts() -> None:
    spec = contraction(GEMM, dtype="bf16:bf16", sizes=dict(m=128, n=128, k=256))
    # its whole-k twin, the former winner, 6,268: the TRF load of 64 KB on sub alone
    point = dict(placement="128x1 of 1x128, on 1/2 of the slices, w by switch" + BOTH, trf="w", packet=16, pieces=1)
    assert makespan(spec, point) == 5534
