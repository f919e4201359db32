"""`TrfTensor.reshape(TrfTensor[...])`: a TRF tensor relabelled where it lies, read by a
contraction. The weights are loaded over (N, K) and read as (N, G, H), K = G * 32 + H, by a
contraction whose stream names G and H; checked on cpu against a numpy oracle, on the VISA
interpreter bit for bit, and the refusals as coded diagnostics at the user's line."""

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

axes(I=8, N=8, K=64, G=2, H=32, R=8)  # noqa: F405

Chip, Cluster, Slice = m("1"), m("1 # 2"), m("I # 64")  # noqa: F405
RNG = np.random.default_rng(3636)
X = RNG.integers(-128, 128, (8, 2, 32)).astype(np.int8)
W = RNG.integers(-128, 128, (8, 64)).astype(np.int8)


def _weights(ctx, w):
    wd = w.to_dm(ctx.tdma, DmTensor[i8, Chip, Cluster, Slice, m("N, K")])  # noqa: F405
    return ctx.sub.begin(wd.view()).fetch(m("N"), m("K")).collect(m("N, K / 32"), m("K % 32")).to_trf(  # noqa: F405
        m("N"), m("K"))  # noqa: F405


def _contract(ctx, x, w_trf, lane="N"):
    xd = x.to_dm(ctx.tdma, DmTensor[i8, Chip, Cluster, Slice, m("G, H")])  # noqa: F405
    y = (ctx.main.begin(xd.view()).fetch(m("1"), m("G, H"))  # noqa: F405
         .collect(m("G"), m("H"))  # noqa: F405
         .contract_outer(w_trf, m("1"), m("G, H"))  # noqa: F405
         .contract_packet(m("1"))  # noqa: F405
         .contract_time(m("1"))  # noqa: F405
         .contract_lane(m("1"), m(lane), LaneMode.INTERLEAVED)  # noqa: F405
         .commit_trim(m(lane))  # noqa: F405
         .commit(m(lane)))  # noqa: F405
    return y.to_hbm(ctx.tdma, HbmTensor[i32, Chip, m(f"I, {lane}")])  # noqa: F405


@device(chip=1)  # noqa: F405
def regrouped(ctx: Context, x: HbmTensor[i8, Chip, m("I, G, H")],  # noqa: F405
              w: HbmTensor[i8, Chip, m("N, K")]) -> HbmTensor[i32, Chip, m("I, N")]:  # noqa: F405
    """y[i, n] = sum over (g, h) of x[i, g, h] * w[n, g * 32 + h]."""
    w_trf = _weights(ctx, w).reshape(TrfTensor[i8, Chip, Cluster, Slice, m("N"), m("G, H")])  # noqa: F405
    return _contract(ctx, x, w_trf)


@device(chip=1)  # noqa: F405
def renamed_lane(ctx: Context, x: HbmTensor[i8, Chip, m("I, G, H")],  # noqa: F405
                 w: HbmTensor[i8, Chip, m("N, K")]) -> HbmTensor[i32, Chip, m("I, R")]:  # noqa: F405
    """The same product with the lanes named R: y[i, r] = sum of x[i, g, h] * w[r, g * 32 + h]."""
    w_trf = _weights(ctx, w).reshape(Chip, Cluster, Slice, m("R"), m("G, H"))  # noqa: F405
    return _contract(ctx, x, w_trf, lane="R")


def _oracle(x, w):
    return x.reshape(8, 64).astype(np.int32) @ w.astype(np.int32).T


@pytest.mark.parametrize("kernel", [regrouped, renamed_lane], ids=["regrouped", "renamed-lane"])
def test_cpu_matches_the_oracle(kernel):
    np.testing.assert_array_equal(npu_opt.run(kernel, X, W), _oracle(X, W))


@pytest.mark.parametrize("kernel", [regrouped, renamed_lane], ids=["regrouped", "renamed-lane"])
def test_visa_verifies_and_agrees_with_cpu(kernel):
    artifact = npu_opt.compile(kernel)
    assert print_artifact(parse_visa(artifact.text)) == artifact.text
    verify_text(artifact.text, rngd())
    assert " = rf_reshape in=" in artifact.text
    visa = execute(parse_visa(artifact.text), [X, W])
    np.testing.assert_array_equal(visa, _oracle(X, W))
    np.testing.assert_array_equal(npu_opt.run(kernel, X, W), visa)


def _kernel_reshaping_to(target):
    @device(chip=1)  # noqa: F405
    def bad(ctx: Context, x: HbmTensor[i8, Chip, m("I, G, H")],  # noqa: F405
            w: HbmTensor[i8, Chip, m("N, K")]) -> HbmTensor[i32, Chip, m("I, N")]:  # noqa: F405
        relabelled = _weights(ctx, w).reshape(target)  # the refused line
        return _contract(ctx, x, relabelled)

    return bad


@pytest.mark.parametrize("target, code, words", [
    (TrfTensor[i8, Chip, Cluster, Slice, m("N"), m("H")], "VIEW-5", "Element level from 64 to 32"),  # noqa: F405
    (TrfTensor[i8, Chip, Cluster, Slice, m("G"), m("K")], "VIEW-5", "Lane level from 8 to 2"),  # noqa: F405
    (TrfTensor[bf16, Chip, Cluster, Slice, m("N"), m("K")], "TYPE-6", "keeps the element type i8"),  # noqa: F405
    (VrfTensor[i32, Chip, Cluster, Slice, m("K")], "TYPE-6", "keeps the kind of tensor"),  # noqa: F405
    (TrfTensor[i8, Chip, Cluster, m("R / 2 # 64"), m("N"), m("K")], "RFRESHAPE-1", "Slice level"),  # noqa: F405
], ids=["element", "lane", "dtype", "kind", "slices"])
def test_refusals_are_coded_at_the_users_line(target, code, words):
    with pytest.raises(CompileError) as info:
        npu_opt.compile(_kernel_reshaping_to(target))
    err = info.value
    assert [d.code for d in err.diagnostics][:1] == [code]
    assert words in str(err)
    assert "relabelled = _weights(ctx, w).reshape(target)" in str(err)


@device(chip=1)  # noqa: F405
def two_live(ctx: Context, x: HbmTensor[i8, Chip, m("I, G, H")], w: HbmTensor[i8, Chip, m("N, K")],  # noqa: F405
             v: HbmTensor[i8, Chip, m("N, K")]) -> tuple[HbmTensor[i32, Chip, m("I, N")],  # noqa: F405
                                                         HbmTensor[i32, Chip, m("I, N")]]:  # noqa: F405
    """A second TRF tensor loaded after the relabel and before the contraction reading it:
    the relabelled tensor's rows stay held until that read."""
    w_trf = _weights(ctx, w).reshape(TrfTensor[i8, Chip, Cluster, Slice, m("N"), m("G, H")])  # noqa: F405
    v_trf = _weights(ctx, v).reshape(TrfTensor[i8, Chip, Cluster, Slice, m("N"), m("G, H")])  # noqa: F405
    return _contract(ctx, x, w_trf), _contract(ctx, x, v_trf)


def test_a_relabelled_trf_tensor_keeps_its_rows_until_its_last_read():
    v = RNG.integers(-128, 128, (8, 64)).astype(np.int8)
    artifact = npu_opt.compile(two_live)
    verify_text(artifact.text, rngd())
    rows = [t.split(" base_row=")[1].split()[0] for t in artifact.text.splitlines() if " = trf_load " in t]
    assert len(rows) == 2 and rows[0] != rows[1]
    want = (_oracle(X, W), _oracle(X, v))
    for got in (npu_opt.run(two_live, X, W, v), execute(parse_visa(artifact.text), [X, W, v])):
        assert all(np.array_equal(a, b) for a, b in zip(got, want))
