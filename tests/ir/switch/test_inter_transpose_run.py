"""SWITCH-19 (furiosa-opt v0.9): an INTER_TRANSPOSE hands each slice time0 * slice1 packets
back to back; the run, in 32-byte flits, is at most 16. The rule at its boundary, and as
kernels refused at the `switch` line on every entry point, or accepted and run bit for
bit alike on cpu and in the VISA interpreter against numpy."""

from __future__ import annotations

import numpy as np
import pytest

import npu_opt
from ir.dtypes import DType
from ir.mapping import m
from ir.switch.config import SwitchConfig as SC
from ir.switch.rules import MAX_CONSECUTIVE_FLITS, check_inter_transpose_run, check_switch
from npu_opt.compile_api import compile_kernel
from tests.differential.harness import load_kernel
from tests.kernel_files import marked_line
from visa import parse_visa
from visa.interp import execute
from visa.verify import verify_text

IT = SC.INTER_TRANSPOSE


@pytest.mark.parametrize("config,packet,dtype,flits", [
    (IT(slice1=2, slice0=1, time0=1), "144", DType.BF16, None),        # 144 bf16: 9 flits, 2 packets: 18
    (IT(slice1=2, slice0=1, time0=3), "48", DType.BF16, None),         # 48 bf16: 3 flits, 6 packets: 18
    (IT(slice1=16, slice0=16, time0=1), "4", DType.BF16, 16),          # 8 bytes count one flit: 16
    (IT(slice1=2, slice0=1, time0=1), "128", DType.BF16, 16),          # 128 bf16: 8 flits: 16
    (IT(slice1=4, slice0=1, time0=4), "32", DType.I8, 16),             # 16 one-flit packets
    (IT(slice1=4, slice0=1, time0=4), "33", DType.I8, None),           # 33 i8: 2 flits, 32 in a row
    (IT(slice1=1, slice0=16, time0=17), "8", DType.I8, None),          # 17 one-flit packets
], ids=["fpp9", "chunk3", "eight-byte", "fpp8", "i8-16", "i8-33", "seventeen"])
def test_run_limit(config, packet, dtype, flits) -> None:
    got = check_inter_transpose_run(config, m(packet), dtype)
    if flits is None:
        assert got is not None and got.code == "SWITCH-19" and got.help, got
        assert f"more than the ring's {MAX_CONSECUTIVE_FLITS}" in got.message
    else:
        assert got is None, got


def test_only_inter_transpose_has_the_run() -> None:
    for config in (SC.BROADCAST1(slice1=2, slice0=1), SC.TRANSPOSE(slice1=2, slice0=1), SC.FORWARDING):
        assert check_inter_transpose_run(config, m("1024"), DType.F32) is None


def test_help_names_a_time0_that_fits() -> None:
    got = check_inter_transpose_run(IT(slice1=2, slice0=1, time0=3), m("48"), DType.BF16)
    assert "time0 = 2 gives 12 flits" in got.help


def test_check_switch_reports_it_after_the_layout_rules() -> None:
    axes = {"L": 256, "T": 4}
    got = check_switch(m("L", axes=axes), m("T", axes=axes), m("L / 2 % 128, T / 2 % 2", axes=axes),
                       m("T / 4, L % 2", axes=axes), IT(slice1=2, slice0=1, time0=1), m("144"), DType.BF16)
    assert got is not None and got.code == "SWITCH-7"  # a wrong layout is said first
    ok_layout = check_switch(m("L", axes=axes), m("T", axes=axes), m("L / 2, T / 1 % 2", axes=axes),
                             m("T / 2, L % 2", axes=axes), IT(slice1=2, slice0=1, time0=1), m("144"), DType.BF16)
    assert ok_layout is not None and ok_layout.code == "SWITCH-19", ok_layout


KERNEL = '''from npu_opt import *

axes(D=2, H=2, W=2, P={p})

Chip = m("1")
Cluster = m("1 # 2")

@device(chip=1)
def run_{p}(ctx: Context, x: HbmTensor[bf16, Chip, m("D, H, W, P")]) -> HbmTensor[bf16, Chip, m("W, H, D, P")]:
    x = x.to_dm(ctx.tdma, DmTensor[bf16, Chip, Cluster, m("1 # 128, D"), m("H, W, P")])
    y = (ctx.main.begin(x.view())
         .fetch(m("H, W"), m("P"))
         .switch(m("1 # 128, W"), m("H, D"), SwitchConfig.INTER_TRANSPOSE(slice1=2, slice0=1, time0=1))  # <--
         .collect(m("H, D, P / 16"), m("P % 16"))
         .commit_trim(m("P % 16"))
         .commit())
    return y.to_hbm(ctx.tdma)
'''


def _kernel(p: int):
    return load_kernel(KERNEL.format(p=p))


def test_an_eighteen_flit_run_is_refused_at_the_switch_everywhere() -> None:
    k = _kernel(144)
    (first, *_) = npu_opt.check(k).diagnostics
    assert (first.code, first.line) == ("SWITCH-19", marked_line(k))
    with pytest.raises(Exception) as info:
        npu_opt.run(k, np.zeros((2, 2, 2, 144), np.float32))
    assert getattr(info.value, "code", None) == "SWITCH-19" or "SWITCH-19" in str(info.value)
    outcome = compile_kernel(k)
    assert outcome.status != "ok" and outcome.diagnostics[0].code == "SWITCH-19"


@pytest.mark.parametrize("p", [128, 48])
def test_runs_within_the_limit_compile_and_agree(p: int) -> None:
    import ml_dtypes

    k = _kernel(p)
    assert npu_opt.check(k).diagnostics == ()
    x = np.random.default_rng(p).uniform(-2, 2, (2, 2, 2, p)).astype(ml_dtypes.bfloat16)
    want = np.transpose(x, (2, 1, 0, 3))  # y[w, h, d] = x[d, h, w]: slice digit D and time digit W swap
    got = np.asarray(npu_opt.run(k, x))
    np.testing.assert_array_equal(got.view(np.uint16), want.view(np.uint16))
    outcome = compile_kernel(k)
    assert outcome.status == "ok", outcome.diagnostics
    verify_text(outcome.text)
    out = np.asarray(execute(parse_visa(outcome.text), [x]))
    np.testing.assert_array_equal(out.view(np.uint16), got.view(np.uint16))
