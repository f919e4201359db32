"""A VRF tensor stored several passes before its reader: when the register file cannot hold
it together with the tensors loaded in between, its load moves to just before its first
reader (tu_ops/lower/vrf_sink.py) and the kernel compiles; the results stay those of the
kernel as written (numpy, cpu and VISA), and a kernel that fits as written keeps its order."""

from __future__ import annotations

import numpy as np
import pytest

import npu_opt
from ir.errors import CompileError
from npu_opt import *  # noqa: F403
from visa.verify import verify_text

axes(A=1024, B=1040)  # noqa: F405: 4096 + 4160 bytes of f32: together more than a slice's 8192
Chip, Cluster, Slice = m("1"), m("1 # 2"), m("1 # 256")  # noqa: F405
RNG = np.random.default_rng(67)


def _load(ctx, t, axis):
    d = t.to_dm(ctx.tdma, DmTensor[f32, Chip, Cluster, Slice, m(axis)])  # noqa: F405
    return ctx.sub.begin(d.view()).fetch(m(f"{axis} / 8"), m(f"{axis} % 8")).collect(  # noqa: F405
        m(f"{axis} / 8"), m(f"{axis} % 8")).to_vrf(m(axis))  # noqa: F405


def _scaled(ctx, x, vrf, axis, op):
    d = x.to_dm(ctx.tdma, DmTensor[f32, Chip, Cluster, Slice, m(axis)])  # noqa: F405
    return (ctx.main.begin(d.view()).fetch(m(f"{axis} / 8"), m(f"{axis} % 8"))  # noqa: F405
            .collect(m(f"{axis} / 8"), m(f"{axis} % 8")).vector_init()  # noqa: F405
            .vector_intra_slice_tag(TagMode.ZERO).vector_clip(op, vrf).vector_final()  # noqa: F405
            .commit_trim(m(f"{axis} % 8")).commit(m(axis)).to_hbm(ctx.tdma))  # noqa: F405


@device(chip=1)  # noqa: F405
def early_floor(ctx: Context, lo: HbmTensor[f32, Chip, m("A")], cap: HbmTensor[f32, Chip, m("B")],  # noqa: F405
                x: HbmTensor[f32, Chip, m("A")], y: HbmTensor[f32, Chip, m("B")]  # noqa: F405
                ) -> tuple[HbmTensor[f32, Chip, m("A")], HbmTensor[f32, Chip, m("B")]]:  # noqa: F405
    """max(x, lo) and min(y, cap); `lo` is stored first but read last."""
    lo_vrf = _load(ctx, lo, "A")
    cap_vrf = _load(ctx, cap, "B")
    capped = _scaled(ctx, y, cap_vrf, "B", ClipBinaryOpF32.MIN)  # noqa: F405
    floored = _scaled(ctx, x, lo_vrf, "A", ClipBinaryOpF32.MAX)  # noqa: F405
    return floored, capped


axes(S=64, U=64)  # noqa: F405: 256 + 256 bytes: these fit as written


@device(chip=1)  # noqa: F405
def small_early_floor(ctx: Context, lo: HbmTensor[f32, Chip, m("S")], cap: HbmTensor[f32, Chip, m("U")],  # noqa: F405
                      x: HbmTensor[f32, Chip, m("S")], y: HbmTensor[f32, Chip, m("U")]  # noqa: F405
                      ) -> tuple[HbmTensor[f32, Chip, m("S")], HbmTensor[f32, Chip, m("U")]]:  # noqa: F405
    """`early_floor` on tensors the VRF holds together: nothing moves."""
    lo_vrf = _load(ctx, lo, "S")
    cap_vrf = _load(ctx, cap, "U")
    capped = _scaled(ctx, y, cap_vrf, "U", ClipBinaryOpF32.MIN)  # noqa: F405
    floored = _scaled(ctx, x, lo_vrf, "S", ClipBinaryOpF32.MAX)  # noqa: F405
    return floored, capped


def _inputs():
    return [RNG.standard_normal(n).astype(np.float32) for n in (1024, 1040, 1024, 1040)]


@pytest.mark.parametrize("backend", ["cpu", "visa"])
def test_a_load_read_late_moves_to_its_reader(backend):
    lo, cap, x, y = _inputs()
    floored, capped = npu_opt.run(early_floor, lo, cap, x, y, backend=backend)
    np.testing.assert_array_equal(floored.view(np.uint32), np.maximum(x, lo).view(np.uint32))
    np.testing.assert_array_equal(capped.view(np.uint32), np.minimum(y, cap).view(np.uint32))


def _order(kernel):
    text = npu_opt.compile(kernel).text
    verify_text(text)
    return [line.split()[2] for line in text.splitlines() if line.lstrip().startswith("%")
            and line.split()[2] in ("vrf_load", "vector_rf")]


def test_the_moved_load_comes_right_before_its_reader():
    assert _order(early_floor) == ["vrf_load", "vector_rf", "vrf_load", "vector_rf"]


def test_loads_that_fit_as_written_keep_their_order():
    assert _order(small_early_floor) == ["vrf_load", "vrf_load", "vector_rf", "vector_rf"]
