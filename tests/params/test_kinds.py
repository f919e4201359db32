"""Tuple, struct (attrs and dataclass) and view parameters: the trace names each tensor by
its path, `run` takes arrays grouped like the annotation, and writes go through."""

from __future__ import annotations

import numpy as np
import pytest

import npu_opt
from tests.params.data import BACKENDS, i8_array
from tests.params import kernels_struct as ks

RNG = np.random.default_rng(13)


@pytest.mark.parametrize("backend", BACKENDS)
def test_tuple_parameter_with_an_in_out_member(backend):
    x, out = i8_array(RNG, 64, 8), np.zeros((64, 8), np.int8)
    assert npu_opt.run(ks.tuple_in_out, (x, out), backend=backend) is out
    np.testing.assert_array_equal(out, x)


@pytest.mark.parametrize("backend", BACKENDS)
def test_attrs_struct_parameter(backend):
    x, dst = i8_array(RNG, 64, 8), np.zeros((8, 64), np.int8)
    result, written = npu_opt.run(ks.struct_in_out, ks.Pair(x, dst), backend=backend)
    np.testing.assert_array_equal(result, x)
    assert written is dst
    np.testing.assert_array_equal(dst, x.T)


@pytest.mark.parametrize("backend", BACKENDS)
def test_dataclass_with_a_tuple_field_and_view_parameters(backend):
    a, b, v, dst = i8_array(RNG, 64, 8), i8_array(RNG, 64, 8), i8_array(RNG, 64, 8), np.zeros((64, 8), np.int8)
    result, written = npu_opt.run(ks.nested, ks.Nested((a, b), dst), v, backend=backend)
    np.testing.assert_array_equal(result, v)
    np.testing.assert_array_equal(dst, b)
    assert written is dst


def test_leaves_are_named_by_their_path_and_in_out_ones_are_marked():
    params = ks.nested.trace().kernel.params
    assert [(p.name, p.index, p.mutable) for p in params] == [
        ("n.inner.0", 0, False), ("n.inner.1", 1, False), ("n.dst", 2, True), ("v", 3, False)]
    text = npu_opt.compile(ks.nested).text
    assert 'param %2 "n.dst" inout : hbm[i8, "1", "A, B"]' in text
    assert 'param %0 "n.inner.0" : hbm' in text


def test_a_struct_field_without_a_tensor_type_is_param_2_at_the_parameter():
    (d,) = npu_opt.check(ks.struct_with_int).diagnostics
    assert d.code == "PARAM-2" and "`scale`" in d.message
    assert d.line == ks.struct_with_int.line + 1  # the `def` line holds the annotation


@pytest.mark.parametrize("kernel, label", [("write_read_only", "p.src"), ("write_view", "x")])
def test_writing_a_read_only_member_or_view_is_param_1(kernel, label):
    (d,) = npu_opt.check(getattr(ks, kernel)).diagnostics
    assert d.code == "PARAM-1" and f"`{label}`" in d.message and d.line > getattr(ks, kernel).line


def test_ir_text_of_an_in_out_kernel_reads_back():
    from ir.kernel import print_kernel
    from tests.kernel_text import parse_kernel
    from tests.params import kernels as k

    kernel = k.swap_into.trace().kernel
    text = print_kernel(kernel)
    assert "facts(mutable)" in text and "= final %1, %4 : hbm<" in text
    back = parse_kernel(text)
    assert print_kernel(back) == text
    assert [p.mutable for p in back.params] == [False, True] and back.finals[0].value.id == 4


@pytest.mark.parametrize("backend", BACKENDS)
def test_in_place_by_tensor_and_by_view_with_a_returned_result(backend):
    a, b = i8_array(RNG, 64, 8), i8_array(RNG, 64, 8)
    by_ref, by_view = np.zeros((64, 8), np.int8), np.zeros((1, 64, 8), np.int8)  # `1 #{!} 2` keeps one cell
    result, r, v = npu_opt.run(ks.mixed_outputs, a, b, by_ref, by_view, backend=backend)
    assert r is by_ref and v is by_view
    np.testing.assert_array_equal(result, b.T)
    np.testing.assert_array_equal(by_ref, a)
    np.testing.assert_array_equal(by_view[0], b)


def test_a_tuple_without_member_types_is_param_2():
    for kernel in (ks.bare_tuple, ks.open_tuple):
        (d,) = npu_opt.check(kernel).diagnostics
        assert d.code == "PARAM-2" and "must list its member types" in d.message
