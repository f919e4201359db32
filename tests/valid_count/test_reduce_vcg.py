"""The Valid Count Generator inside `vector_intra_slice_reduce`: a reduce over a padded axis
folds only its live cells, per slice when the axis is split into Slice (SLICE_MAJOR and
TIME_MAJOR time filters). Oracles are numpy folds over indices computed by hand in each
test; the cpu backend excludes by the mappings, the interpreter by the record's `vcg=`, so
cpu == visa tests the configuration."""

from __future__ import annotations

import runpy

import numpy as np
import pytest

import npu_opt
from ir.mapping.api import m
from ir.valid_count import FilterMode, derive_vcg, slice_counts
from tu_ops import rngd
from tu_ops.vector import VectorEngineOp
from visa.interp import execute
from visa.parser import parse_visa
from visa.verify import verify_text

RNG = np.random.default_rng(1313)

_SRC = '''
from npu_opt import *
axes({axes})
@device(chip=1)
def k(ctx: Context, x: HbmTensor[{dt}, m("1"), m("S, E")]) -> HbmTensor[{dt}, m("1"), m("S, F")]:
    x = x.to_dm(ctx.tdma, DmTensor[{dt}, m("1"), m("1 # 2"), m("S"), m("E")])
    v = x.reshape(m("1"), m("1 # 2"), m("{slice}"), m("{elem}"))
    y = (ctx.main.begin(v).fetch(m("{fetch_time}"), m("{fetch_packet}"))
         .collect(m("{fetch_time}"), m("{collect_packet}")).vector_init()
         .vector_intra_slice_tag(TagMode.ZERO).{narrow}
         .vector_intra_slice_reduce(m("{axis}"), m("{out_time}"), m("{out_packet}"), {op})
         .vector_widen_pad(m("{widen}")).vector_final()
         .commit_trim(m("{trim}")).commit(m("{commit}")))
    return y.reshape(m("1"), m("1 # 2"), m("S"), m("F")).to_hbm(ctx.tdma)
'''


def _kernel(tmp_path, *, axes, slice, elem, time, packet, out_time, axis="R", tree=False, dt="i32", op=None,
            split=None):
    """A reduce of `axis` over a DM tensor relabelled (reshape) from a plain (S, E) one, so
    DM cell (s, e) is x[s, e] whatever the relabelled mappings say; the output (S, F)."""
    op = op or ("IntraSliceReduceOpI32.MIN" if dt == "i32" else "IntraSliceReduceOpF32.ADD")
    out_packet = "1 # 4" if tree else packet
    widen, trim = ("1 # 8", "1 # 2") if tree else (f"{packet} # 8", packet)
    commit = ", ".join(x for x in (out_time, trim) if x != "1") or "1"
    fetch_time, fetch_packet = split or (time, packet)
    collect_packet = fetch_packet if split else f"{packet} # 8"
    narrow = f'vector_narrow_split(m("{time}"), m("{packet}"))' if split else f'vector_narrow_trim(m("{packet}"))'
    src = _SRC.format(axes=axes, dt=dt, slice=slice, elem=elem, time=time, packet=packet, axis=axis,
                      fetch_time=fetch_time, fetch_packet=fetch_packet, collect_packet=collect_packet, narrow=narrow,
                      out_time=out_time, out_packet=out_packet, op=op, widen=widen, trim=trim, commit=commit)
    path = tmp_path / "k.py"
    path.write_text(src)
    return runpy.run_path(str(path))["k"]


def _run(kernel, x):
    """cpu result and the artifact's text; the interpreter agrees bit for bit."""
    text = npu_opt.compile(kernel).text
    assert " vcg={" in text
    cpu = npu_opt.run(kernel, x)
    got = execute(parse_visa(text), [x])
    np.testing.assert_array_equal(cpu.view(np.uint32), got.view(np.uint32))
    return cpu, text


def _vector_records(text):
    return [op for op in parse_visa(text).kernel.ops() if isinstance(op, VectorEngineOp)]


# --- SLICE_MAJOR: R's Slice part major, Time minor ----------------------------------------

@pytest.mark.parametrize("r, padded, k", [(21, 32, 8), (24, 32, 8), (17, 32, 8), (11, 16, 4), (13, 16, 4)])
def test_slice_major_min_over_full_partial_and_dead_slices(tmp_path, r, padded, k):
    """Slice `R # P / k, X`, Time `R # P % k`: slice group g holds R = k*g + t. Groups below the
    boundary keep every step, the boundary group a prefix, groups past R none."""
    groups = padded // k
    xs = 256 // groups
    kernel = _kernel(tmp_path, axes=f"S=256, E={4 * k}, F=4, R={r}, X={xs}, B=4", slice=f"R # {padded} / {k}, X",
                     elem=f"R # {padded} % {k}, B", time=f"R # {padded} % {k}", packet="B", out_time="1")
    x = RNG.integers(-1000, 1000, (256, 4 * k), dtype=np.int64).astype(np.int32)
    cpu, text = _run(kernel, x)
    g = np.arange(256) // xs
    cells = x.reshape(256, k, 4)
    for s in range(256):
        t_live = k * g[s] + np.arange(k) < r
        if t_live.any():
            np.testing.assert_array_equal(cpu[s], cells[s][t_live].min(0), err_msg=f"slice {s}")
    (rec,) = _vector_records(text)
    (step,) = [s for s in rec.steps if s.vcg is not None]
    (f,) = step.vcg.filters
    assert f.mode is FilterMode.SLICE_MAJOR and f.slice_mask == (groups - 1) << (xs.bit_length() - 1)


def test_slice_major_two_slice_parts_in_descending_order(tmp_path):
    """Slice `R # 16 / 8, X, R # 16 / 4 % 2`: the two bits of R sit at both ends of the slice id."""
    kernel = _kernel(tmp_path, axes="S=256, E=16, F=4, R=11, X=64, B=4", slice="R # 16 / 8, X, R # 16 / 4 % 2",
                     elem="R # 16 % 4, B", time="R # 16 % 4", packet="B", out_time="1", op="IntraSliceReduceOpI32.MAX")
    x = RNG.integers(-(2**31), 2**31, (256, 16), dtype=np.int64).astype(np.int32)
    cpu, text = _run(kernel, x)
    s = np.arange(256)
    r_slice = 8 * (s // 128) + 4 * (s % 2)
    for i in range(256):
        live = r_slice[i] + np.arange(4) < 11
        if live.any():
            np.testing.assert_array_equal(cpu[i], x[i].reshape(4, 4)[live].max(0))
    assert "slice_mask=129" in text and "slice_thres=128" in text   # bits 7 and 0; boundary R = 8


def test_slice_parts_whose_strides_are_not_powers_of_2(tmp_path):
    """Slice `R # 24 / 12, X, R # 24 / 3 % 4`, Time `R # 24 % 3` with R = 20: R's Slice parts
    step by 12 and 3, yet each is a bit field of the slice id (bits 7 and 1..0) and the masked
    bits order the slices as r_slice does, so one threshold finds the boundary: r_slice 18
    (12 + 3 * 2) keeps 2 steps. main refused the strides (the bit-field rule, VCG 7)."""
    kernel = _kernel(tmp_path, axes="S=256, E=12, F=4, R=20, X=32, B=4", slice="R # 24 / 12, X, R # 24 / 3 % 4",
                     elem="R # 24 % 3, B", time="R # 24 % 3", packet="B", out_time="1",
                     op="IntraSliceReduceOpI32.ADD_SAT")
    x = RNG.integers(-(2**31), 2**31, (256, 12), dtype=np.int64).astype(np.int32)
    cpu, text = _run(kernel, x)
    s = np.arange(256)
    r_slice = 12 * (s // 128) + 3 * (s % 4)
    for i in range(256):
        live = r_slice[i] + np.arange(3) < 20
        if live.any():
            acc = np.zeros(4, np.int64)
            for row in x[i].reshape(3, 4)[live]:
                acc = np.clip(acc + row, -(2**31), 2**31 - 1)   # a saturating add per step
            np.testing.assert_array_equal(cpu[i], acc.astype(np.int32), err_msg=f"slice {i}")
    assert "thres=2, slice_mask=131, slice_thres=130" in text and "mode=TIME_MAJOR" not in text


# --- TIME_MAJOR: R's Time part major, Slice minor -----------------------------------------

@pytest.mark.parametrize("r", [13, 14, 15, 12])
def test_time_major_drops_the_last_iteration_past_the_boundary(tmp_path, r):
    """Slice `X, R # 16 % 4`, Time `R # 16 / 4`: slice c holds R = 4*t + c; slices c >= r % 4
    lose their last step (r = 12: every slice keeps three, padded by 4 = the slice span)."""
    kernel = _kernel(tmp_path, axes=f"S=256, E=16, F=4, R={r}, X=64, B=4", slice="X, R # 16 % 4",
                     elem="R # 16 / 4, B", time="R # 16 / 4", packet="B", out_time="1", dt="f32")
    x = RNG.integers(-64, 64, (256, 16)).astype(np.float32) / 8   # exact sums in any order
    cpu, text = _run(kernel, x)
    c = np.arange(256) % 4
    for s in range(256):
        live = 4 * np.arange(4) + c[s] < r
        want = np.float32(0) + x[s].reshape(4, 4)[live].sum(0, dtype=np.float32)
        np.testing.assert_array_equal(cpu[s], want, err_msg=f"slice {s}")
    assert "mode=TIME_MAJOR" in text


# --- several padded axes, and a Slice part that takes over the packet clipper ----------------

def test_two_sliced_filters_and_the_clipper_on_a_reduced_packet(tmp_path):
    """H (3 of 4) and C (7 of 8) split between Slice and Time, W (3 of 4) reduced in the
    packet: two SLICE_MAJOR filters and the clipper; y[h, c, x] = min over w."""
    kernel = _kernel(tmp_path, axes="S=256, E=32, F=16, H=3, C=7, W=3, X=64",
                     slice="H # 4 / 2, C # 8 / 4, X", elem="H # 4 % 2, C # 8 % 4, W # 4",
                     time="H # 4 % 2, C # 8 % 4", packet="W # 4", axis="W", out_time="H # 4 % 2, C # 8 % 4",
                     tree=True)
    x = RNG.integers(-(2**31), 2**31, (256, 32), dtype=np.int64).astype(np.int32)
    cpu, text = _run(kernel, x)
    cells = x.reshape(256, 2, 4, 4)
    for s in range(256):
        h1, c1 = s // 128, (s // 64) % 2
        for h0 in range(2):
            for c0 in range(4):
                if 2 * h1 + h0 < 3 and 4 * c1 + c0 < 7:
                    assert cpu[s, 2 * (4 * h0 + c0)] == cells[s, h0, c0, :3].min()
    (rec,) = _vector_records(text)
    (step,) = [s for s in rec.steps if s.vcg is not None]
    assert [f.slice_mask for f in step.vcg.filters] == [128, 64] and step.vcg.clipper.axis_size == 3


def test_slice_and_packet_with_whole_packets_counts_by_a_filter(tmp_path):
    """R = 44 of 64: Slice `R # 64 / 8, X`, Time `R # 64 / 4 % 2`, Packet `R # 64 % 4`; every
    packet is full or empty, so a time filter counts in units of packets (slice group 5 keeps
    its first packet) and the clipper passes whole packets."""
    kernel = _kernel(tmp_path, axes="S=256, E=8, F=2, R=44, X=32", slice="R # 64 / 8, X", elem="R # 64 % 8",
                     time="R # 64 / 4 % 2", packet="R # 64 % 4", out_time="1", tree=True,
                     op="IntraSliceReduceOpI32.ADD_SAT")
    x = RNG.integers(-1000, 1000, (256, 8), dtype=np.int64).astype(np.int32)
    cpu, text = _run(kernel, x)
    for s in range(256):
        live = 8 * (s // 32) + np.arange(8) < 44
        if live.any():
            assert cpu[s, 0] == x[s][live].sum()
    (rec,) = _vector_records(text)
    (step,) = [s for s in rec.steps if s.vcg is not None]
    assert step.vcg.clipper.seq == () and step.vcg.filters[0].slice_mask == 0b11100000


# --- the counts of the chip's formula against indices computed by hand ------------------------

@pytest.mark.parametrize("axes, sl, ti, pa, index", [
    ({"R": 21, "X": 32}, "R # 32 / 4, X", "R # 32 % 4", "1 # 4", lambda s, t: 4 * (s // 32) + t),
    ({"R": 27, "X": 16}, "X, R # 32 % 16", "R # 32 / 16", "1 # 4", lambda s, t: 16 * t + s % 16),
    ({"R": 9, "X": 32}, "R # 16 / 8, X, R # 16 / 2 % 4", "R # 16 % 2", "1 # 4",
     lambda s, t: 8 * (s // 128) + 2 * (s % 4) + t),
])
def test_slice_counts_match_hand_indices(axes, sl, ti, pa, index):
    config = derive_vcg(m(sl, axes=axes), m(ti, axes=axes), m(pa, axes=axes))
    steps = m(ti, axes=axes).size
    got = slice_counts(config, np.arange(256), steps)
    want = np.array([[int(index(s, t) < axes["R"]) for t in range(steps)] for s in range(256)])
    dead = np.array([all(index(s, t) >= axes["R"] for t in range(steps)) for s in range(256)])
    np.testing.assert_array_equal(got[~dead], want[~dead])
    assert not got[dead].any()   # a slice wholly past R counts nothing (SLICE_MAJOR's "above")


# --- the record: a time-only padded reduce verifies; edits are refused by VEOP-7 ------------

_TIME_ONLY = '''
from npu_opt import *
axes(X=256, R=12, B=4)
@device(chip=1)
def k(ctx: Context, x: HbmTensor[i32, m("1"), m("X, R # 16, B")]) -> HbmTensor[i32, m("1"), m("X, B")]:
    x = x.to_dm(ctx.tdma, DmTensor[i32, m("1"), m("1 # 2"), m("X"), m("R # 16, B")])
    y = (ctx.main.begin(x.view()).fetch(m("R # 16"), m("B"))
         .collect(m("R # 16"), m("B # 8")).vector_init()
         .vector_intra_slice_tag(TagMode.ZERO).vector_narrow_trim(m("B"))
         .vector_intra_slice_reduce(m("R"), m("1"), m("B"), IntraSliceReduceOpI32.MIN)
         .vector_widen_pad(m("B # 8")).vector_final()
         .commit_trim(m("B")).commit(m("B")))
    return y.to_hbm(ctx.tdma)
'''


def _time_only(tmp_path):
    path = tmp_path / "t.py"
    path.write_text(_TIME_ONLY)
    return runpy.run_path(str(path))["k"]


def test_time_only_padding_verifies_and_counts(tmp_path):
    kernel = _time_only(tmp_path)
    x = RNG.integers(-1000, 1000, (256, 12, 4), dtype=np.int64).astype(np.int32)
    cpu, text = _run(kernel, x)
    verify_text(text, rngd())
    np.testing.assert_array_equal(cpu, x.min(1))
    assert "vcg={filters=[{seq=[16:1], thres=12}], clipper={seq=[], axis_size=4, span=4}}" in text


@pytest.mark.parametrize("old, new", [
    ("thres=12", "thres=13"),                           # a padding step folded
    ("seq=[16:1]", "seq=[8:1, 2:0]"),                   # the wrong index walk
    ("thres=12}]", "thres=12, slice_mask=1}]"),         # a slice split that is not there
    (", vcg={filters=[{seq=[16:1], thres=12}], clipper={seq=[], axis_size=4, span=4}}", ""),  # no counts
])
def test_edited_reduce_vcg_is_refused_by_veop_7(tmp_path, old, new):
    text = npu_opt.compile(_time_only(tmp_path)).text
    assert old in text
    with pytest.raises(Exception, match="VEOP-7"):
        verify_text(text.replace(old, new, 1), rngd())


def test_per_slice_record_verifies_and_an_edit_is_refused(tmp_path):
    """The reshaped kernels' feeds do not verify (the relabelled view is not in the artifact),
    so their vector record is verified alone."""
    kernel = _kernel(tmp_path, axes="S=256, E=32, F=4, R=21, X=64, B=4", slice="R # 32 / 8, X",
                     elem="R # 32 % 8, B", time="R # 32 % 8", packet="B", out_time="1")
    (rec,) = _vector_records(npu_opt.compile(kernel).text)
    rec.verify(rngd())
    step = next(s for s in rec.steps if s.vcg is not None)
    import attrs

    bad = attrs.evolve(step.vcg, filters=[attrs.evolve(step.vcg.filters[0], slice_thres=64)])
    edited = attrs.evolve(rec, steps=tuple(attrs.evolve(s, vcg=bad) if s is step else s for s in rec.steps))
    with pytest.raises(Exception, match="does not count"):
        edited.verify(rngd())
