"""Bad arguments refused where they are given (issue 39, item 11): `Device("nonexistent")`
at construction (it waited for the first launch), and a numpy masked array wherever host
data goes in (`run` on both backends, the interpreter's `execute`, `DmBuffer.write`): its
mask would be ignored."""

from __future__ import annotations

import numpy as np
import pytest

import npu_opt
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
