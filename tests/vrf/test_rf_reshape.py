"""`VrfTensor.reshape(VrfTensor[...])`: the reference's `unsafe { v.reshape() }` of a VRF
tensor (furiosa-opt-std v0.9, tensor/memory.rs). The words stay where they are and the target
type names them anew: cell i of the old element is cell i of the new one. A later Vector
Engine pass reads the relabelled tensor; checked on cpu against a numpy oracle, on the VISA
interpreter bit for bit, and the refusals (a level's size, the dtype, the kind, slices that
hold no data named) as coded diagnostics at the user's line."""

from __future__ import annotations

import numpy as np
import pytest

import npu_opt
from npu_opt import *  # noqa: F403
from ir.errors import CompileError
from tu_ops import rngd
from visa.interp import execute
from visa.parser import parse_visa
from visa.printer import print_artifact
from visa.verify import verify_text
from visa.artifact import VisaTextError
from tests.vrf.kernels import _store

axes(A=8, E=64, P=8, Q=8, S=256)  # noqa: F405

Chip, Cluster, Slice = m("1"), m("1 # 2"), m("1 # 256")  # noqa: F405
RNG = np.random.default_rng(36)
X = RNG.integers(-(2**31), 2**31, (8, 8, 8), dtype=np.int64).astype(np.int32)
B = RNG.integers(-(2**31), 2**31, 64, dtype=np.int64).astype(np.int32)


def _add(ctx, x, operand):
    """y[a, p, q] = x[a, p, q] + operand[p, q] (wrapping i32), the operand a VRF tensor over P, Q."""
    x = x.to_dm(ctx.tdma, DmTensor[i32, Chip, Cluster, Slice, m("A, P, Q")])  # noqa: F405
    y = (ctx.main.begin(x.view()).fetch(m("A, P"), m("Q")).collect(m("A, P"), m("Q"))  # noqa: F405
         .vector_init().vector_intra_slice_tag(TagMode.ZERO)  # noqa: F405
         .vector_fxp(FxpBinaryOp.ADD_FXP, operand)  # noqa: F405
         .vector_final().commit_trim(m("Q")).commit())  # noqa: F405
    return y.to_hbm(ctx.tdma)


@device(chip=1)  # noqa: F405
def regroup(ctx: Context, x: HbmTensor[i32, Chip, m("A, P, Q")],  # noqa: F405
            b: HbmTensor[i32, Chip, m("E")]) -> HbmTensor[i32, Chip, m("A, P, Q")]:  # noqa: F405
    """b stored over E, read as P, Q: word p * 8 + q is cell (p, q)."""
    b_vrf = _store(ctx, b, i32, m("E"))  # noqa: F405
    return _add(ctx, x, b_vrf.reshape(VrfTensor[i32, Chip, Cluster, Slice, m("P, Q")]))  # noqa: F405


@device(chip=1)  # noqa: F405
def crossed(ctx: Context, x: HbmTensor[i32, Chip, m("A, P, Q")],  # noqa: F405
            b: HbmTensor[i32, Chip, m("E")]) -> HbmTensor[i32, Chip, m("A, P, Q")]:  # noqa: F405
    """b stored over E, read as Q, P: word q * 8 + p is cell (p, q), so the pass reads it across."""
    b_vrf = _store(ctx, b, i32, m("E"))  # noqa: F405
    return _add(ctx, x, b_vrf.reshape(VrfTensor[i32, Chip, Cluster, Slice, m("Q, P")]))  # noqa: F405


@device(chip=1)  # noqa: F405
def two_live(ctx: Context, x: HbmTensor[i32, Chip, m("A, P, Q")], b: HbmTensor[i32, Chip, m("E")],  # noqa: F405
             c: HbmTensor[i32, Chip, m("A, P, Q")]) -> HbmTensor[i32, Chip, m("A, P, Q")]:  # noqa: F405
    """y = (x + b as P, Q) * c: the relabelled tensor stays live (and in place) while a second
    VRF tensor is stored after the relabel and before the pass reading both."""
    b_vrf = _store(ctx, b, i32, m("E")).reshape(VrfTensor[i32, Chip, Cluster, Slice, m("P, Q")])  # noqa: F405
    c = c.to_dm(ctx.tdma, DmTensor[i32, Chip, Cluster, Slice, m("A, P, Q")])  # noqa: F405
    c_vrf = (ctx.sub.begin(c.view()).fetch(m("A, P"), m("Q")).collect(m("A, P"), m("Q"))  # noqa: F405
             .to_vrf(m("A, P, Q")))  # noqa: F405
    x = x.to_dm(ctx.tdma, DmTensor[i32, Chip, Cluster, Slice, m("A, P, Q")])  # noqa: F405
    y = (ctx.main.begin(x.view()).fetch(m("A, P"), m("Q")).collect(m("A, P"), m("Q"))  # noqa: F405
         .vector_init().vector_intra_slice_tag(TagMode.ZERO)  # noqa: F405
         .vector_fxp(FxpBinaryOp.ADD_FXP, b_vrf).vector_fxp(FxpBinaryOp.MUL_INT, c_vrf)  # noqa: F405
         .vector_final().commit_trim(m("Q")).commit())  # noqa: F405
    return y.to_hbm(ctx.tdma)


def test_a_relabelled_tensor_stays_live_through_its_readers():
    x, b, c = (RNG.integers(-1000, 1000, shape).astype(np.int32) for shape in ((8, 8, 8), 64, (8, 8, 8)))
    want = (x + b.reshape(8, 8)[None]) * c
    artifact = npu_opt.compile(two_live)
    verify_text(artifact.text, rngd())
    loads = [t for t in artifact.text.splitlines() if " = vrf_load " in t]
    assert [" base=0 " in t for t in loads] == [True, False]  # the second load placed after the first
    np.testing.assert_array_equal(npu_opt.run(two_live, x, b, c), want)
    np.testing.assert_array_equal(execute(parse_visa(artifact.text), [x, b, c]), want)


def _wrap(v):
    return ((v.astype(np.int64) + 2**31) % 2**32 - 2**31).astype(np.int32)


ORACLES = {
    regroup: lambda x, b: _wrap(x.astype(np.int64) + b.reshape(8, 8)[None]),
    crossed: lambda x, b: _wrap(x.astype(np.int64) + b.reshape(8, 8).T[None]),
}


@pytest.mark.parametrize("kernel", [regroup, crossed], ids=["regroup", "crossed"])
def test_cpu_matches_the_oracle(kernel):
    np.testing.assert_array_equal(npu_opt.run(kernel, X, B), ORACLES[kernel](X, B))


@pytest.mark.parametrize("kernel", [regroup, crossed], ids=["regroup", "crossed"])
def test_visa_verifies_and_agrees_with_cpu(kernel):
    artifact = npu_opt.compile(kernel)
    assert print_artifact(parse_visa(artifact.text)) == artifact.text
    verify_text(artifact.text, rngd())
    visa = execute(parse_visa(artifact.text), [X, B])
    np.testing.assert_array_equal(visa, ORACLES[kernel](X, B))
    np.testing.assert_array_equal(npu_opt.run(kernel, X, B).view(np.uint32), visa.view(np.uint32))


def test_the_relabel_is_a_record_of_its_own():
    """The pass reads the reshape's result, whose type is the target type; the load keeps its own."""
    text = npu_opt.compile(regroup).text
    (rec,) = [t for t in text.splitlines() if " = rf_reshape " in t]
    assert rec.split(" ; loc ")[0].endswith(': vrf[i32, "1", "1 # 2", "1 # 256", "E"] -> '
                                            'vrf[i32, "1", "1 # 2", "1 # 256", "P, Q"]')
    reshaped = rec.split(" = ")[0].strip()
    (reader,) = [t for t in text.splitlines() if " = vector_rf " in t]
    assert f"rf=[{reshaped}]" in reader


def test_a_tampered_relabel_is_refused_by_the_verifier():
    text = npu_opt.compile(regroup).text
    bad = text.replace('-> vrf[i32, "1", "1 # 2", "1 # 256", "P, Q"]', '-> vrf[i32, "1", "1 # 2", "1 # 256", "P"]', 1)
    assert bad != text
    with pytest.raises(VisaTextError, match="RFRESHAPE-2"):
        verify_text(bad, rngd())


def _refused(kernel):
    with pytest.raises(CompileError) as info:
        npu_opt.compile(kernel)
    return info.value


def _kernel_reshaping_to(target):
    @device(chip=1)  # noqa: F405
    def bad(ctx: Context, x: HbmTensor[i32, Chip, m("A, P, Q")],  # noqa: F405
            b: HbmTensor[i32, Chip, m("E")]) -> HbmTensor[i32, Chip, m("A, P, Q")]:  # noqa: F405
        b_vrf = _store(ctx, b, i32, m("E"))  # noqa: F405
        relabelled = b_vrf.reshape(target)  # the refused line
        return _add(ctx, x, relabelled)

    return bad


@pytest.mark.parametrize("target, code, words", [
    (VrfTensor[i32, Chip, Cluster, Slice, m("P")], "VIEW-5", "Element level from 64 to 8"),  # noqa: F405
    (VrfTensor[f32, Chip, Cluster, Slice, m("P, Q")], "TYPE-6", "keeps the element type i32"),  # noqa: F405
    (DmTensor[i32, Chip, Cluster, Slice, m("P, Q")], "TYPE-6", "keeps the kind of tensor"),  # noqa: F405
    (VrfTensor[i32, Chip, Cluster, m("S"), m("P, Q")], "RFRESHAPE-1", "slice"),  # noqa: F405
], ids=["count", "dtype", "kind", "padded-slices-named"])
def test_refusals_are_coded_at_the_users_line(target, code, words):
    err = _refused(_kernel_reshaping_to(target))
    assert [d.code for d in err.diagnostics][:1] == [code]
    assert words in str(err)
    assert "relabelled = b_vrf.reshape(target)" in str(err)


def test_the_schedule_orders_a_relabelled_tensors_reader_after_its_load():
    """The pass reads the relabel's words, which are the load's: a RAW hazard on the load."""
    from backends.npu import compile_kernel
    from visa.schedule import schedule_artifact

    outcome = compile_kernel(two_live)
    assert outcome.status == "ok", outcome.diagnostics
    s = schedule_artifact(outcome.artifact)
    steps = {r.mnemonic: slot for slot in s.slots for r in slot.step.records}
    loads = [slot for slot in s.slots if any(r.mnemonic == "vrf_load" for r in slot.step.records)]
    reader = steps["vector_rf"]
    assert all(reader.start >= load.start + load.step.duration for load in loads)
    assert sum(h.kind == "RAW" and h.after == reader.step.index and h.location.startswith("vrf[")
               for h in s.hazards) == 2


def test_the_traced_relabel_prints_back_and_lowers_from_its_text():
    from tests.kernel_text import parse_kernel
    from tests.npu_opt.test_trf_reshape import regrouped
    from tu_ops.lower import Options, lower
    from visa.printer import print_visa

    for kernel in (regroup, regrouped):
        traced = kernel.trace().kernel
        text = traced.text()
        assert " = rf_reshape " in text
        parsed = parse_kernel(text)
        assert parsed.text() == text
        direct = print_visa(lower(traced, Options(target=rngd())), rngd())
        again = print_visa(lower(parsed, Options(target=rngd())), rngd())
        assert again == "\n".join(line.split(" ; loc ")[0] for line in direct.split("\n"))
