"""Bad arguments refused where they are given (issue 39, item 11): `Device("nonexistent")`
at construction (it waited for the first launch), and a numpy masked array wherever host
data goes in (`run` on both backends, the interpreter's `execute`, `DmBuffer.write`): its
mask would be ignored."""

from __future__ import annotations

import sys

import numpy as np
import pytest

import npu_opt
from ir import host_layout
from ir.errors import NpuOptError
from tests.kernel_files import example
from visa import parse_visa
from visa.interp import execute



@pytest.mark.parametrize("target", ["nonexistent", "rngd-3chip", "/no/such/target.toml"])
def test_a_device_on_an_unknown_target_is_refused_when_made(target):
    with pytest.raises(NpuOptError) as e:
        npu_opt.Device(target)
    assert e.value.code == "USAGE" and "rngd" in str(e.value) and repr(target) in str(e.value)


def test_a_device_on_a_known_target_allocates():
    kernel = example("resident_readout")  # declares S and H
    buf = kernel.fn.__globals__["Acc"].alloc(npu_opt.Device("rngd"))
    assert buf.read().shape == (1, 1, 256, 8, 64)


def _masked(shape, dtype):
    data = np.arange(int(np.prod(shape))).reshape(shape).astype(dtype)
    return np.ma.masked_array(data, mask=data % 2 == 0)


@pytest.mark.parametrize("backend", ["cpu", "visa"])
def test_run_refuses_a_masked_array(backend):
    kernel = example("fetch_commit_simple")
    [p] = parse_visa(npu_opt.compile(kernel).text).kernel.params
    with pytest.raises(NpuOptError) as e:
        npu_opt.run(kernel, _masked(_shape(kernel), np.int8), backend=backend)
    assert e.value.code == "USAGE" and "masked array" in str(e.value) and f"`{p.name}`" in str(e.value)


def _shape(kernel):
    from visa.interp.host import host_shape

    [p] = parse_visa(npu_opt.compile(kernel).text).kernel.params
    return host_shape(p.type.element)


def test_execute_refuses_a_masked_array():
    kernel = example("fetch_commit_simple")
    artifact = parse_visa(npu_opt.compile(kernel).text)
    with pytest.raises(NpuOptError) as e:
        execute(artifact, [_masked(_shape(kernel), np.int8)])
    assert e.value.code == "USAGE" and "masked array" in str(e.value)


def test_a_buffer_refuses_a_masked_array():
    kernel = example("resident_readout")
    buf = kernel.fn.__globals__["Acc"].alloc(npu_opt.Device("rngd"))
    with pytest.raises(NpuOptError) as e:
        buf.write(_masked(buf.shape, np.int32))
    assert e.value.code == "USAGE" and "masked array" in str(e.value)


def test_a_plain_array_is_checked_without_importing_numpy_ma(monkeypatch):
    # numpy.ma costs 0.5 MiB of a first run's memory (issue 61); no masked array can exist
    # before it is imported, so the check must not import it
    monkeypatch.delitem(sys.modules, "numpy.ma", raising=False)
    monkeypatch.delattr(np, "ma", raising=False)  # else `np.ma` reads the attribute left by the import
    host_layout.refuse_masked("parameter `x`", np.zeros(3))
    assert "numpy.ma" not in sys.modules


GATHER = '''
from npu_opt import *

axes(K=300, E=64, G=512)
Chip = m("1")
Cluster = m("1 # 2")


@device(chip=1)
def first_rows(ctx: Context, table: HbmTensor[i8, Chip, m("K, E")], offsets: HbmTensor[i32, Chip, m("G")],
               n: HbmScalar[i32]) -> HbmTensor[i8, Chip, m("G, E")]:
    valid = n.to_spm(ctx.tdma)
    rows = table.gather(m("K"), m("E")).by_byte_offsets(offsets).sparse_prefix(valid).to_dm(
        ctx.tdma, DmTensor[i8, Chip, Cluster, m("G / 2"), m("G % 2, E")])
    return rows.to_hbm(ctx.tdma, HbmTensor[i8, Chip, m("G, E")])
'''


@pytest.mark.parametrize("backend", ["cpu", "visa"])
def test_gather_6_checks_entries_past_a_runtime_sparse_prefix(backend):
    """issue 39, item 11, decided against the issue's proposal: furiosa-opt's book (DMA
    Engine, "Sparse gather", at 5ec3763) says every position of the index list must hold a
    valid byte offset whatever the runtime length, because the device stops at a coarser
    boundary than the length and may read any of them. So an entry past the prefix that
    selects no row is still GATHER-6, on both backends; entries past it that are valid
    (0 when unused) gather nothing past the prefix."""
    from tests.kernel_files import load_source

    kernel = load_source(GATHER, "sparse_prefix_first_rows").first_rows
    table = np.arange(300 * 64).reshape(300, 64).astype(np.int8)
    picks = np.random.default_rng(1).integers(0, 300, 512).astype(np.int32)
    offsets = picks * 64
    offsets[37:] = 0  # what a runtime should leave in the unused entries: a valid offset
    want = table[picks].copy()
    want[37:] = 0
    assert (npu_opt.run(kernel, table, offsets, np.int32(37), backend=backend) == want).all()
    offsets[400] = 12345  # garbage past the prefix: not a multiple of the 64-byte row
    with pytest.raises(NpuOptError) as e:
        npu_opt.run(kernel, table, offsets, np.int32(37), backend=backend)
    assert e.value.code == "GATHER-6" and "12345" in str(e.value)
