"""Rule 10 (v0.8 parameters): the context parameter under any name and as `Device`, a
fixed-size array `[T; N]` as `tuple[T, T, ...]`, nested borrowed structs, and a loop index
selecting a member (`model.layers[i].weight`), on cpu and visa against numpy; a
`tuple[T, ...]` without its length is PARAM-2 at the annotation, not a traceback
(issue 36 item 4)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import npu_opt
from npu_opt import *

axes(A=8, B=32)
Chip, Cluster = m("1"), m("1 # 2")
T = HbmTensor[i32, Chip, m("A, B")]
D = DmTensor[i32, Chip, Cluster, m("A # 64"), m("B")]


@dataclasses.dataclass
class Layer:
    weight: T
    out: Mut[T]


@dataclasses.dataclass
class Model:
    layers: tuple[Layer, Layer, Layer]      # [Layer; 3]
    bias: T


@device(chip=1)
def copy_layers(device: Context, model: Model, xs: tuple[T, T]) -> T:
    for i in range(3):
        model.layers[i].weight.to_dm(device.tdma, D).to_hbm(device.tdma, model.layers[i].out)
    return xs[1].to_dm(device.tdma, D).to_hbm(device.tdma)


@device(chip=1)
def device_context(device: Device, x: T) -> T:
    return x.to_dm(device.tdma, D).to_hbm(device.tdma)


@dataclasses.dataclass
class Unsized:
    layers: tuple[Layer, ...]


@device(chip=1)
def unsized_layers(device: Context, model: Unsized) -> None:
    for layer in model.layers:
        layer.weight.to_dm(device.tdma, D).to_hbm(device.tdma, layer.out)


RNG = np.random.default_rng(3610)


@pytest.mark.parametrize("backend", ["cpu", "visa"])
def test_nested_structs_arrays_and_a_loop_index_run(backend):
    ws = [RNG.integers(-2 ** 31, 2 ** 31, (8, 32)).astype(np.int32) for _ in range(3)]
    outs = [np.zeros((8, 32), np.int32) for _ in range(3)]
    x = RNG.integers(-2 ** 31, 2 ** 31, (8, 32)).astype(np.int32)
    model = Model(tuple(Layer(w, o) for w, o in zip(ws, outs)), ws[0])
    result = npu_opt.run(copy_layers, model, (ws[0], x), backend=backend)
    assert np.array_equal(result[0], x)
    assert all(np.array_equal(o, w) for o, w in zip(outs, ws))


@pytest.mark.parametrize("backend", ["cpu", "visa"])
def test_the_context_parameter_may_be_annotated_device(backend):
    x = RNG.integers(-2 ** 31, 2 ** 31, (8, 32)).astype(np.int32)
    assert np.array_equal(npu_opt.run(device_context, x, backend=backend), x)


def test_an_array_without_its_length_is_param_2_not_a_traceback():
    diags = unsized_layers.trace().diagnostics
    assert diags and diags[0].code == "PARAM-2", diags
    assert "must list its member types" in diags[0].message and diags[0].line is not None
