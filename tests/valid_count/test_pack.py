"""The Valid Count Generator and the sub context's packed commit: the counts of the
generator's formula against hand-computed ones, cpu against a numpy oracle, cpu == visa
bit for bit, the verifier's CMT-6 on edited records, and each VCG refusal at the user's line."""

from __future__ import annotations

import runpy
from pathlib import Path

import attrs
import numpy as np
import pytest

import npu_opt
from tests.agree import both_backends
from ir.mapping.api import m
from ir.valid_count import derive_vcg, valid_sizes
from tu_ops import rngd
from visa.verify import verify_text

ROOT = Path(__file__).resolve().parents[2]
AXES = {"A": 3, "H": 5, "R": 10, "X": 64}
RNG = np.random.default_rng(13)


def _q(text):
    return m(text, axes=AXES)


@pytest.mark.parametrize("time, packet, counts", [
    ("R # 16 / 4", "R # 16 % 4", [4, 4, 2, 0]),
    ("A, R # 16 / 8", "R # 16 % 8", [8, 2] * 3),
    ("H # 8", "R # 16 % 4 # 8", [4] * 5 + [0] * 3),       # clipper alone: R in packet only
    ("H # 8, R # 16 / 8", "R # 16 % 8", [8, 2] * 5 + [0] * 6),
    ("R # 12 / 4, A, R # 12 % 4", "1", [1] * 26 + [0, 0, 1, 1, 0, 0, 1, 1, 0, 0]),
    ("A", "1 # 8", [1, 1, 1]),
])
def test_counts_are_the_live_prefix_of_every_flit(time, packet, counts):
    config = derive_vcg(_q("X"), _q(time), _q(packet))
    assert valid_sizes(config, _q(time).size).tolist() == counts


def _kernel(time, packet, trim, element=None, h=5, r=10, dtype="f32"):
    elem = "" if element is None else f'm("{element}")'
    src = f'''
from npu_opt import *
axes(A=256, H={h}, R={r})
@device(chip=1)
def k(ctx: Context, x: HbmTensor[{dtype}, m("1"), m("A, H, R # 16")]) -> HbmTensor[{dtype}, m("1"), m("A, H, R")]:
    x = x.to_dm(ctx.tdma, DmTensor[{dtype}, m("1"), m("1 # 2"), m("A"), m("H # 8, R # 16")])
    y = (ctx.sub.begin(x.view()).fetch(m("H # 8"), m("R # 16")).collect(m("{time}"), m("{packet}"))
         .commit_trim(m("{trim}")).commit_valid_count_pack().commit({elem}))
    return y.to_hbm(ctx.tdma)
'''
    return src


def _load(tmp_path, src, name="k"):
    path = tmp_path / "k.py"
    path.write_text(src)
    return runpy.run_path(str(path))[name]


def _both(kernel, x):
    return both_backends(kernel, x, " pack={")[0]


def test_varlen_pack_example_against_numpy():
    kernel = runpy.run_path(str(ROOT / "examples" / "varlen_pack.py"))["varlen_pack"]
    x = RNG.standard_normal((256, 5, 10)).astype(np.float32)
    np.testing.assert_array_equal(_both(kernel, x), x)


def test_default_element_packs_the_rows(tmp_path):
    kernel = _load(tmp_path, _kernel("H # 8, R # 16 / 8", "R # 16 % 8", "R # 16 % 8"))
    x = RNG.standard_normal((256, 5, 10)).astype(np.float32)
    np.testing.assert_array_equal(_both(kernel, x), x)


def test_short_rows_with_one_flit_each(tmp_path):
    """Rows of 3 in slots of 16: the clipper counts 3 of one flit; the second flit of a slot is
    dropped whole."""
    kernel = _load(tmp_path, _kernel("H # 8, R # 16 / 8", "R # 16 % 8", "R # 16 % 8", "H, R", h=2, r=3))
    x = RNG.standard_normal((256, 2, 3)).astype(np.float32)
    np.testing.assert_array_equal(_both(kernel, x), x)


def test_i32_pack(tmp_path):
    kernel = _load(tmp_path, _kernel("H # 8, R # 16 / 8", "R # 16 % 8", "R # 16 % 8", dtype="i32"))
    x = RNG.integers(-(2**31), 2**31, (256, 5, 10), dtype=np.int64).astype(np.int32)
    np.testing.assert_array_equal(_both(kernel, x), x)


def _packed_record(text):
    lines = text.splitlines()
    return next(i for i, line in enumerate(lines) if " pack={" in line), lines


@pytest.mark.parametrize("old, new", [
    ("axis_size=10", "axis_size=11"),           # counts cells the stream lacks
    ("thres=5", "thres=6"),                     # a padding row counted live
    ("seq=[8:1, 2:0]", "seq=[4:1, 2:0]"),       # the filter walks 8 steps of 16
])
def test_edited_pack_config_is_refused_by_cmt_6(old, new):
    kernel = runpy.run_path(str(ROOT / "examples" / "varlen_pack.py"))["varlen_pack"]
    text = npu_opt.compile(kernel).text
    i, lines = _packed_record(text)
    assert old in lines[i]
    lines[i] = lines[i].replace(old, new, 1)
    with pytest.raises(Exception, match="CMT-6"):
        verify_text("\n".join(lines) + "\n", rngd())


def _first(tmp_path, src):
    from npu_opt.device import DeviceKernel

    path = tmp_path / "bad.py"
    path.write_text(src)
    kernel = next(v for v in runpy.run_path(str(path)).values() if isinstance(v, DeviceKernel))
    report = npu_opt.check(kernel)
    assert report.diagnostics, "the kernel was accepted"
    return report.diagnostics[0]


@pytest.mark.parametrize("page_code", ["VCG-1", "VCG-2", "VCG-3", "VCG-4", "VCG-5"])
def test_refusal_at_the_users_line(tmp_path, page_code):
    from driver.explain import page

    src = page(page_code).example
    d = _first(tmp_path, src)
    assert d.code == page_code, d.render()
    marked = next(n for n, line in enumerate(src.splitlines(), 1) if "# <--" in line)
    assert d.line == marked


def test_packed_element_in_another_order_is_refused(tmp_path):
    d = _first(tmp_path, _kernel("H # 8, R # 16 / 8", "R # 16 % 8", "R # 16 % 8", "R, H"))
    assert d.code == "VCG-5" and "H, R" in d.render()


def test_the_cost_counts_the_packed_bytes():
    kernel = runpy.run_path(str(ROOT / "examples" / "varlen_pack.py"))["varlen_pack"]
    assert "  dm_write_bytes=200\n" in npu_opt.compile(kernel).text    # 5 x 10 f32 per slice


def _random_kernel(tmp_path, seed):
    rng = np.random.default_rng(seed)
    r = int(rng.integers(1, 33))
    p = min(32, -(-r // 8) * 8 + 8 * int(rng.integers(0, 2)))
    h = int(rng.integers(1, 6))
    hp = h + int(rng.integers(0, 4))
    src = f'''
from npu_opt import *
axes(A=256, H={h}, R={r})
@device(chip=1)
def k(ctx: Context, x: HbmTensor[i32, m("1"), m("A, H # {hp}, R # {p}")]) -> HbmTensor[i32, m("1"), m("A, H, R")]:
    x = x.to_dm(ctx.tdma, DmTensor[i32, m("1"), m("1 # 2"), m("A"), m("H # {hp}, R # {p}")])
    y = (ctx.sub.begin(x.view()).fetch(m("H # {hp}"), m("R # {p}")).collect(m("H # {hp}, R # {p} / 8"), m("R # {p} % 8"))
         .commit_trim(m("R # {p} % 8")).commit_valid_count_pack().commit())
    return y.to_hbm(ctx.tdma)
'''
    path = tmp_path / f"k{seed}.py"
    path.write_text(src)
    return runpy.run_path(str(path))["k"], (256, h, r)


@pytest.mark.parametrize("seed", range(5))
def test_random_row_shapes(tmp_path, seed):
    """Rows of 1..32 cells in slots padded by up to one more flit, up to 3 padding rows."""
    kernel, shape = _random_kernel(tmp_path, seed)
    x = np.random.default_rng(100 + seed).integers(-(2**31), 2**31, shape, dtype=np.int64).astype(np.int32)
    np.testing.assert_array_equal(_both(kernel, x).reshape(shape), x)   # a size-1 H may print as no axis


def test_other_axes_of_time_merge_into_one_sequencer_entry():
    """Nine sub-expressions of Time, but R's filter walks them as two entries (VCG-4 does not fire)."""
    ax = {"R": 5, **{n: 2 for n in "BCDFGHIJ"}, "E": 8}
    config = derive_vcg(m("1", axes=ax), m("R # 8, B, C, D, F, G, H, I, J", axes=ax), m("E", axes=ax))
    assert [(e.size, e.stride) for e in config.filters[0].seq] == [(8, 1), (256, 0)]
    assert valid_sizes(config, 8 * 256).tolist() == [8] * (5 * 256) + [0] * (3 * 256)


def test_the_reference_count_argument_is_accepted_and_discarded(tmp_path):
    """Rule 2: the reference's `commit_valid_count_pack(_valid_count)` ports as written; the
    count is discarded (as the reference's record does), so the artifact is the same bytes."""
    plain = _load(tmp_path, _kernel("H # 8, R # 16 / 8", "R # 16 % 8", "R # 16 % 8"))
    src = _kernel("H # 8, R # 16 / 8", "R # 16 % 8", "R # 16 % 8").replace(
        ".commit_valid_count_pack()", ".commit_valid_count_pack(10)")
    counted = _load(tmp_path, src)
    x = RNG.standard_normal((256, 5, 10)).astype(np.float32)
    np.testing.assert_array_equal(_both(counted, x), x)
    assert npu_opt.compile(counted).text == npu_opt.compile(plain).text


@pytest.mark.parametrize("count", ["-1", "2.5", "True", '"10"'])
def test_a_count_that_is_not_a_usize_is_type_6(tmp_path, count):
    src = _kernel("H # 8, R # 16 / 8", "R # 16 % 8", "R # 16 % 8").replace(
        ".commit_valid_count_pack()", f".commit_valid_count_pack({count})")
    result = npu_opt.check(_load(tmp_path, src))
    assert [d.code for d in result.diagnostics][:1] == ["TYPE-6"]
