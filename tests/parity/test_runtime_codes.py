"""A run-time refusal raised from Python names its rule code in its text, as
`npu-opt explain CODE` names the rule (issue 36 item 13)."""

from __future__ import annotations

import io

import numpy as np
import pytest

import npu_opt
from driver.run_command import _execute
from ir.errors import NpuOptError
from npu_opt import *
from tests.runtime import tile_kernels as tk

axes(T=200, W=32, G=16)


@device(chip=1)
def lookup(ctx: Context, table: HbmTensor[i32, m("1"), m("T, W")],
           offsets: HbmTensor[i32, m("1"), m("G")]) -> HbmTensor[i32, m("1"), m("G, W")]:
    out = table.gather(m("T"), m("W")).by_byte_offsets(offsets).to_dm(
        ctx.tdma, DmTensor[i32, m("1"), m("1 # 2"), m("G # 64"), m("W")])
    return out.to_hbm(ctx.tdma, HbmTensor[i32, m("1"), m("G, W")])


@pytest.mark.parametrize("backend", ["cpu", "visa"])
def test_a_gather_index_error_says_gather_6(backend):
    table = np.arange(200 * 32, dtype=np.int32).reshape(200, 32)
    offsets = np.zeros(16, np.int32)
    offsets[5] = 7           # not a multiple of a row's 128 bytes
    with pytest.raises(NpuOptError) as e:
        npu_opt.run(lookup, table, offsets, backend=backend)
    assert e.value.code == "GATHER-6"
    assert str(e.value).startswith("GATHER-6: gather index [G=5]")
    assert "GATHER-6" not in e.value.message      # the message itself stays the sentence


@pytest.mark.parametrize("backend", ["cpu", "visa"])
def test_a_runtime_tile_start_past_its_range_says_runtime_10(backend):
    with pytest.raises(NpuOptError) as e:
        npu_opt.run(tk.group_by_index, np.zeros((64, 4, 16), np.int32), 2 ** 40, backend=backend)
    assert str(e.value).startswith("RUNTIME-10: ")


def test_the_cli_names_the_code_once():
    table = np.zeros((200, 32), np.int32)
    offsets = np.full(16, -128, np.int32)
    err = io.StringIO()
    _execute(lookup, [table, offsets], "cpu", "chip", err)
    assert err.getvalue().startswith("error[GATHER-6]: gather index [G=0]"), err.getvalue()
