"""An explicit type argument the DSL otherwise infers has its slot: `contract_outer`'s
trailing `trfd` (Rust's `contract_outer::<T, P, _, _, i8>`) is the TRF's dtype, checked."""

from __future__ import annotations

import numpy as np

import npu_opt
from npu_opt import *  # noqa: F403

axes(I=64, N=8, K=64)  # noqa: F405
Chip, Cluster = m("1"), m("1 # 2")  # noqa: F405


def _matmul(*trfd):
    def body(ctx, x, w):
        xd = x.to_dm(ctx.tdma, DmTensor[i8, Chip, Cluster, m("I # 64"), m("K")])  # noqa: F405
        wd = w.to_dm(ctx.tdma, DmTensor[i8, Chip, Cluster, m("I # 64"), m("N, K")])  # noqa: F405
        w_trf = (ctx.sub.begin(wd.view()).fetch(m("N"), m("K")).collect(m("N, K / 32"), m("K % 32"))  # noqa: F405
                 .to_trf(m("N"), m("K")))  # noqa: F405
        y = (ctx.main.begin(xd.view()).fetch(m("1"), m("K")).collect(m("K / 32"), m("K % 32"))  # noqa: F405
             .contract_outer(w_trf, m("1"), m("K"), *trfd)  # noqa: F405
             .contract_packet(m("1")).contract_time(m("1"))  # noqa: F405
             .contract_lane(m("1"), m("N"), LaneMode.INTERLEAVED).commit_trim(m("N")).commit(m("N")))  # noqa: F405
        return y.to_hbm(ctx.tdma)

    body.__annotations__ = {"ctx": Context, "x": HbmTensor[i8, Chip, m("I, K")],  # noqa: F405
                            "w": HbmTensor[i8, Chip, m("N, K")], "return": HbmTensor[i32, Chip, m("I, N")]}  # noqa: F405
    return device(chip=1)(body)  # noqa: F405


def test_the_trf_dtype_argument_is_accepted_and_changes_nothing():
    plain, explicit = _matmul(), _matmul(i8)  # noqa: F405
    assert npu_opt.check(explicit).ok
    assert explicit.trace().kernel.text() == plain.trace().kernel.text()


def test_a_trf_dtype_argument_that_is_not_the_trfs_is_type_6():
    report = npu_opt.check(_matmul(f32))  # noqa: F405
    assert [d.code for d in report.diagnostics] == ["TYPE-6"]
    assert "the TRF tensor holds i8" in report.diagnostics[0].message


def test_a_trf_dtype_argument_that_is_not_a_dtype_says_so():
    """A string or a numpy type is not an npu-opt dtype: the message must not read as if the
    TRF held another dtype ("is i8, but the TRF tensor holds i8")."""
    for given, shown in (("i8", "not str 'i8'"), (np.int8, "not type")):
        (d,) = npu_opt.check(_matmul(given)).diagnostics
        assert d.code == "TYPE-6" and "must be an npu-opt dtype such as i8" in d.message, d.message
        assert shown in d.message and "holds" not in d.message
