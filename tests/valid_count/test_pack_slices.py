"""The packed commit with counts that differ per slice (a padded axis split into Slice):
each slice writes its own live cells back to back and leaves the rest of its element zero.
cpu (by the mappings) against a numpy oracle of hand-computed indices, cpu == visa (by the
record's `pack=`), the default element, and VCG-5 on an element that is not the runs."""

from __future__ import annotations

import runpy

import numpy as np
import pytest

import npu_opt
from tests.agree import both_backends

RNG = np.random.default_rng(2613)

_SRC = '''
from npu_opt import *
axes(S=256, E={e}, F={e}, R={r}, X={x}, B=4)
@device(chip=1)
def k(ctx: Context, x: HbmTensor[f32, m("1"), m("S, E")]) -> HbmTensor[f32, m("1"), m("S, F")]:
    x = x.to_dm(ctx.tdma, DmTensor[f32, m("1"), m("1 # 2"), m("S"), m("E")])
    v = x.reshape(m("1"), m("1 # 2"), m("{slice}"), m("{time}, B"))
    y = (ctx.sub.begin(v).fetch(m("{time}"), m("B")).collect(m("{time}"), m("B # 8"))
         .commit_trim(m("B")).commit_valid_count_pack().commit({element}))
    return y.reshape(m("1"), m("1 # 2"), m("S"), m("F")).to_hbm(ctx.tdma)
'''


def _kernel(tmp_path, r, slice_, time, x, element=None):
    e = 4 * int(np.prod([int(t.rsplit(" ", 1)[1]) for t in time.split(", ")]))
    src = _SRC.format(e=e, r=r, x=x, slice=slice_, time=time, element="" if element is None else f'm("{element}")')
    path = tmp_path / "k.py"
    path.write_text(src)
    return runpy.run_path(str(path))["k"], e


def _both(kernel, x):
    return both_backends(kernel, x, " pack={", "slice_mask=")[0]  # the reshaped view's feed verifies too


@pytest.mark.parametrize("r, padded, k, default", [(21, 32, 8, True), (13, 16, 4, False), (30, 32, 8, True)])
def test_slice_major_rows_pack_per_slice(tmp_path, r, padded, k, default):
    """Slice `R # P / k, X`, Time `R # P % k`: slice group g packs R = k*g .. min(k*g + k, r) - 1."""
    groups = padded // k
    xs = 256 // groups
    elem = None if default else f"R # {padded} % {k}, B"
    kernel, e = _kernel(tmp_path, r, f"R # {padded} / {k}, X", f"R # {padded} % {k}", xs, elem)
    x = RNG.standard_normal((256, e)).astype(np.float32)
    cpu = _both(kernel, x)
    for s in range(256):
        live = k * (s // xs) + np.arange(k) < r
        if live.any():
            want = x[s].reshape(k, 4)[live].reshape(-1)
            np.testing.assert_array_equal(cpu[s, :want.size], want, err_msg=f"slice {s}")
            assert not cpu[s, want.size:].any()


def test_time_major_rows_pack_per_slice(tmp_path):
    """Slice `X, R # 16 % 4`, Time `R # 16 / 4`, R = 14: slices c = 2, 3 drop their last step."""
    kernel, e = _kernel(tmp_path, 14, "X, R # 16 % 4", "R # 16 / 4", 64)
    x = RNG.standard_normal((256, e)).astype(np.float32)
    cpu = _both(kernel, x)
    for s in range(256):
        live = 4 * np.arange(4) + s % 4 < 14
        want = x[s].reshape(4, 4)[live].reshape(-1)
        np.testing.assert_array_equal(cpu[s, :want.size], want)
        assert not cpu[s, want.size:].any()


def test_an_element_that_is_not_the_runs_is_vcg_5(tmp_path):
    from tests.valid_count.test_pack import _first

    _, e = _kernel(tmp_path, 21, "R # 32 / 8, X", "R # 32 % 8", 64)
    src = (tmp_path / "k.py").read_text().replace(".commit())", '.commit(m("B, R # 32 % 8")))')
    d = _first(tmp_path, src)
    assert d.code == "VCG-5" and "R # 32 % 8, B" in d.render()
