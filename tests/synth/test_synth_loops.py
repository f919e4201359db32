"""`npu-opt synth` emits rolled tile loops (issue 60 item 7, issue 54 item 2): a kernel of
several tiles walks both tile loops with `ctx.loop` (the result's tile takes two runtime
starts; a loop of one tile, the batch loop and `reuse="all"`'s lists stay Python `for`s),
so a candidate's artifact does not grow with the result; the rolled kernel's results equal
the same source unrolled (`ctx.loop` read as `range`) and a numpy oracle on cpu and visa;
tune's sweep schedules the rolled loop as `npu-opt schedule` does."""

from __future__ import annotations

import types

import numpy as np
import pytest

from backends import get_backend
from backends.npu import compile_kernel
from driver.tune_eval import evaluate
from synth import contraction
from synth.space import source
from tests.synth.test_synth import _operands
from tu_ops.target import get_target
from visa.schedule import builtin_rates, schedule_artifact

GEMM = "out[m,n] = a[m,k] * w[n,k]"


def _kernel(text: str, name: str) -> object:
    module = types.ModuleType(f"synth_loops_{name}_{abs(hash(text))}")
    exec(compile(text, f"<{module.__name__}>", "exec", dont_inherit=True), module.__dict__)  # noqa: S102
    return getattr(module, "synth_kernel")


def _run_both(text: str, args: tuple[np.ndarray, ...], shape: tuple[int, ...], dtype: type) -> dict[str, np.ndarray]:
    out = {}
    for form, body in (("rolled", text), ("unrolled", text.replace("ctx.loop(", "range("))):
        kernel = _kernel(body, form)
        for backend in ("cpu", "visa"):
            result = np.zeros(shape, dtype)
            get_backend(backend).run(kernel, (*args, result))
            out[f"{form}-{backend}"] = result
    return out


# (sizes, point): tiles along m only, along n only, and both
GEMM_POINTS = [
    (dict(m=1024, n=512, k=64), dict(placement="16x16 of 32x32", trf="w", packet=32, order="ij", reuse="outer")),
    (dict(m=512, n=1024, k=64), dict(placement="16x16 of 32x32", trf="w", packet=32, order="ij", reuse="outer")),
    (dict(m=1024, n=1024, k=64), dict(placement="16x16 of 32x32", trf="a", packet=32, order="ji", reuse="outer")),
]


@pytest.mark.parametrize("sizes, point", GEMM_POINTS, ids=["m-tiles", "n-tiles", "both-ji-trf-a"])
def test_a_multi_tile_gemm_rolls_a_tile_loop_and_equals_its_unrolled_form(sizes: dict[str, int],
                                                                          point: dict[str, object]) -> None:
    spec = contraction(GEMM, dtype="i8:i32", sizes=sizes)
    text = source(spec, point)
    trips = sorted(int(part.split(")")[0]) for part in text.split("in ctx.loop(")[1:])
    assert trips == sorted(n // 512 for n in (sizes["m"], sizes["n"]) if n > 512)  # every loop of several tiles
    a, w = _operands([(sizes["m"], sizes["k"]), (sizes["n"], sizes["k"])], "i8")
    want = (a.astype(np.int64) @ w.astype(np.int64).T).astype(np.int32)
    for name, got in _run_both(text, (a, w), (sizes["m"], sizes["n"]), np.int32).items():
        assert np.array_equal(got, want), name
    artifact = compile_kernel(_kernel(text, "art"), get_target("rngd"))
    assert artifact.status == "ok"
    assert artifact.text.count("= loop_begin ") == len(trips)


def test_a_rolled_candidate_compiles_to_the_same_size_at_any_result_size() -> None:
    point = dict(placement="16x16 of 32x32", trf="w", packet=32, order="ij", reuse="outer")
    lengths = []
    for n in (1024, 4096):
        spec = contraction(GEMM, dtype="i8:i32", sizes=dict(m=n, n=n, k=64))
        outcome = compile_kernel(_kernel(source(spec, point), f"size{n}"), get_target("rngd"))
        assert outcome.status == "ok"
        lengths.append(len(outcome.text.splitlines()))
    assert lengths[0] == lengths[1]


def test_a_gemv_of_several_passes_rolls_its_pass_loop() -> None:
    spec = contraction("y[m] = a[m,k] * x[k]", dtype="i8:i32", sizes=dict(m=768, k=64))
    a, x = _operands([(768, 64), (64,)], "i8")
    want = (a.astype(np.int64) @ x.astype(np.int64)).astype(np.int32)
    for reuse in ("trf", "none"):
        text = source(spec, dict(packet=32, reuse=reuse))
        assert "for i in ctx.loop(3):" in text
        for name, got in _run_both(text, (a, x), (768,), np.int32).items():
            assert np.array_equal(got, want), (reuse, name)


def test_a_batched_gemm_keeps_its_batch_loop_unrolled_and_rolls_its_tile_loop() -> None:
    sizes = dict(b=2, m=1024, n=512, k=64)
    spec = contraction("out[b,m,n] = a[b,m,k] * w[b,n,k]", dtype="i8:i32", sizes=sizes)
    text = source(spec, dict(placement="16x16 of 32x32", trf="w", packet=32, order="ij", reuse="outer"))
    assert "for bb in range(2):" in text and "for i in ctx.loop(2):" in text
    a, w = _operands([(2, 1024, 64), (2, 512, 64)], "i8")
    want = np.einsum("bmk,bnk->bmn", a.astype(np.int64), w.astype(np.int64)).astype(np.int32)
    for name, got in _run_both(text, (a, w), (2, 1024, 512), np.int32).items():
        assert np.array_equal(got, want), name


def test_one_tile_and_reuse_all_emit_no_rolled_loop() -> None:
    one = contraction(GEMM, dtype="i8:i32", sizes=dict(m=512, n=512, k=64))
    text = source(one, dict(placement="16x16 of 32x32", trf="w", packet=32))
    assert "ctx.loop" not in text and "for i in" not in text
    many = contraction(GEMM, dtype="i8:i32", sizes=dict(m=1024, n=1024, k=64))
    text = source(many, dict(placement="16x16 of 32x32", trf="w", packet=32, order="ij", reuse="all"))
    assert "ctx.loop" not in text  # its kept blocks are Python lists, indexed by tile numbers


def test_the_sweep_schedules_a_rolled_tile_loop_as_npu_opt_schedule_does() -> None:
    """The sweep's makespan once counted a rolled body once: the winner's re-schedule raised an ICE."""
    spec = contraction(GEMM, dtype="i8:i32", sizes=dict(m=2048, n=512, k=64))
    space = spec.space()
    params = dict(placement="16x16 of 32x32", trf="w", packet=32, order="ij", reuse="outer")
    swept = evaluate(space, 0, params, "rngd", None)
    assert swept.status == "ok"
    tgt = get_target("rngd")
    outcome = compile_kernel(space.factory(**params), tgt)
    assert "= loop_begin " in outcome.text
    scheduled = schedule_artifact(outcome.artifact, target=tgt, rates=builtin_rates("rngd")).makespan
    assert swept.makespan == scheduled


def test_a_rolled_candidates_bound_counts_every_iteration_so_pruning_still_works() -> None:
    """A rolled body's steps once counted once in the bound: 4x the tiles kept the same bound
    and the bound pruned nothing."""
    params = dict(placement="16x16 of 32x32", trf="w", packet=32, order="ij", reuse="outer")
    bounds = {}
    for m in (1024, 4096):
        space = contraction(GEMM, dtype="i8:i32", sizes=dict(m=m, n=1024, k=64)).space()
        swept = evaluate(space, 0, params, "rngd", None)
        assert swept.status == "ok" and swept.bound <= swept.makespan
        bounds[m] = swept.bound
    assert bounds[4096] > 3 * bounds[1024]
