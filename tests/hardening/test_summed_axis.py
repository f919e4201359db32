"""An axis summed away, then returned in a layout that still has it (issue 28 item 3).

A kernel whose `contract_lane` names a digit that `contract_time` left out gets LANE-5.
Its help used to say only `use m(<the time>)`: followed, the kernel compiled, the digit was
summed, and the DMA back to HBM filled the returned layout's copy of that digit with the
same sums (every column equal). Now that DMA is refused (DMA-4, at the user's line), and
the help says to keep the digit in `contract_time`, which gives the right kernel."""

from __future__ import annotations

import re

import numpy as np

import npu_opt
from tests.kernel_files import load_source

KERNEL = '''from npu_opt import *

axes(A=8, C=4, E=32, R=8)

Chip = m("1")
Cluster = m("1 # 2")
Slice = m("1 # 256")

@device(chip=1)
def keep_c(ctx: Context,
           x: HbmTensor[i8, Chip, m("A, C, E")],
           w: HbmTensor[i8, Chip, m("R, E")]) -> HbmTensor[i32, Chip, m("C, A, R")]:
    x = x.to_dm(ctx.tdma, DmTensor[i8, Chip, Cluster, Slice, m("A, C, E")])
    w = w.to_dm(ctx.tdma, DmTensor[i8, Chip, Cluster, Slice, m("R, E")])
    w_trf = (ctx.sub.begin(w.view()).fetch(m("R"), m("E"))
             .collect(m("R"), m("E")).to_trf(m("R"), m("E")))
    y = (ctx.main.begin(x.view()).fetch(m("A, C"), m("E"))
         .collect(m("A, C"), m("E"))
         .contract_outer(w_trf, m("A, C"), m("E"))
         .contract_packet(m("1"))
         .contract_time(m("TIME"))
         .contract_lane(m("LANE"), m("R"), LaneMode.INTERLEAVED)
         .commit_trim(m("R"))
         .commit())
    return y.to_hbm(ctx.tdma)  # the returned layout has C
'''

RNG = np.random.default_rng(28)
X = RNG.integers(-8, 8, (8, 4, 32)).astype(np.int8)
W = RNG.integers(-8, 8, (8, 32)).astype(np.int8)
WANT = np.einsum("ace,re->car", X.astype(np.int64), W.astype(np.int64)).astype(np.int32)


def kernel(name: str, time: str, lane: str):
    source = KERNEL.replace('m("TIME")', f'm("{time}")').replace('m("LANE")', f'm("{lane}")')
    return load_source(source.replace("def keep_c", f"def {name}"), f"summed_axis_{name}").__dict__[name]


def _line(needle: str) -> int:
    return next(i for i, text in enumerate(KERNEL.splitlines(), 1) if needle in text)


def test_lane5_help_names_contract_time_and_following_it_gives_the_right_kernel():
    report = npu_opt.check(kernel("dropped", "A", "C, A"))
    (d,) = report.diagnostics
    assert d.code == "LANE-5" and "contract_time summed `C` away" in d.help, d.render()
    time, lane = re.search(r'\.contract_time\(m\("([^"]+)"\)\)` and use m\("([^"]+)"\) here', d.help).groups()
    fixed = kernel("followed", time, lane)
    cpu = npu_opt.run(fixed, X, W)
    np.testing.assert_array_equal(cpu, WANT)
    np.testing.assert_array_equal(npu_opt.run(fixed, X, W, backend="visa"), WANT)


def test_the_old_help_followed_is_refused_at_the_return_not_copied():
    report = npu_opt.check(kernel("summed", "A", "A"))
    (d,) = report.diagnostics
    assert d.code == "DMA-4" and "layout has `C`" in d.render()
    assert d.line == _line("return y.to_hbm"), d.render()
    assert "replicat" in d.message and "contract_time" in d.help


def test_copies_written_out_in_to_hbm_stay_legal():
    """Asked for with the layout written out, the repeat is what the kernel says (and the
    weights of every shipped gemm reach each slice as copies into DM)."""
    from tests.kernel_files import example

    source = KERNEL.replace('m("TIME")', 'm("A")').replace('m("LANE")', 'm("A")').replace(
        "return y.to_hbm(ctx.tdma)", 'return y.to_hbm(ctx.tdma, HbmTensor[i32, Chip, m("C, A, R")])')
    asked = load_source(source.replace("def keep_c", "def asked"), "summed_axis_asked").__dict__["asked"]
    summed = np.einsum("ace,re->ar", X.astype(np.int64), W.astype(np.int64)).astype(np.int32)
    np.testing.assert_array_equal(npu_opt.run(asked, X, W), np.broadcast_to(summed, (4, 8, 8)))
    assert not npu_opt.check(example("gemm_kernel")).diagnostics
