"""A chain over a reshaped DM view (`t.reshape(...)`, VIEW-5: the same cells relabelled, every
level's size kept) compiles to an artifact that `verify` accepts: its feed reads the tensor
under the relabelled mappings, which are neither the tensor's element nor a window of it. The
artifact runs to the cpu result and to the input itself (a copy); a source of another size is
still refused."""

from __future__ import annotations

import runpy

import numpy as np
import pytest

import npu_opt
from tu_ops import rngd
from visa.artifact import VisaTextError
from visa.interp import execute
from visa.parser import parse_visa
from visa.verify import verify_text

SRC = '''
from npu_opt import *
axes(S=256, G=4, H=64, A=4, B=8, C=32)

@device(chip=1)
def relabel_copy(ctx: Context, x: HbmTensor[i32, m("1"), m("S, A, B")]) -> HbmTensor[i32, m("1"), m("S, A, B")]:
    x = x.to_dm(ctx.tdma, DmTensor[i32, m("1"), m("1 # 2"), m("S"), m("A, B")])
    v = x.reshape(m("1"), m("1 # 2"), m("{slices}"), m("C"))
    y = (ctx.sub.begin(v).fetch(m("C / 8"), m("C % 8")).collect(m("C / 8"), m("C % 8"))
         .commit_trim(m("C % 8")).commit())
    return y.reshape(m("1"), m("1 # 2"), m("S"), m("A, B")).to_hbm(ctx.tdma)
'''


def _kernel(tmp_path, slices):
    path = tmp_path / "relabel.py"
    path.write_text(SRC.format(slices=slices))
    return runpy.run_path(str(path))["relabel_copy"]


@pytest.mark.parametrize("slices", ["S", "G, H"])
def test_a_reshaped_view_verifies_and_runs(tmp_path, slices):
    kernel = _kernel(tmp_path, slices)
    text = npu_opt.compile(kernel).text
    verify_text(text, rngd())
    assert 'f32' not in text and '"C")' in text  # the feed reads the relabelled element
    x = np.random.default_rng(7).integers(-2**31, 2**31 - 1, (256, 4, 8), dtype=np.int64).astype(np.int32)
    cpu = np.asarray(npu_opt.run(kernel, x))
    np.testing.assert_array_equal(cpu, x)
    np.testing.assert_array_equal(np.asarray(execute(parse_visa(text), [x])), cpu)


def test_a_source_of_another_size_is_still_refused(tmp_path):
    text = npu_opt.compile(_kernel(tmp_path, "S")).text
    assert text.count('i32, "C")') == 1
    bad = text.replace('i32, "C")', 'i32, "C / 2")')
    with pytest.raises(VisaTextError, match="not a window of it"):
        verify_text(bad, rngd())
