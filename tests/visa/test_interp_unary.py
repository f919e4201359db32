"""The interpreter's float64 unary ops in kept buffers (`visa.interp.fast.unary`, issue 29) give
the bits of the shared numerics' step (`run_step`, what the cpu backend runs) and of an
independent numpy version (the op in float64, rounded once to f32, one canonical NaN),
on ordinary values, edge values and streams of several shapes."""

from __future__ import annotations

import numpy as np
import pytest

from ir.vector.numerics.steps import run_step
from visa.interp.fast import unary

_NUMPY = {"EXP": np.exp, "LOG": np.log, "TANH": np.tanh, "SIN": np.sin, "COS": np.cos}
_EDGES = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1e-45, -1e-45, 1.1754942e-38, 3.4028235e38, -3.4028235e38,
                   88.72, 88.73, -103.9, -87.3, 1.0, -1.0, 0.5, 1e4, -1e4, 2.0 ** -20], np.float32)


def _oracle(op: str, x: np.ndarray) -> np.ndarray:
    with np.errstate(all="ignore"):
        out = _NUMPY[op](x.astype(np.float64)).astype(np.float32)
    bits = out.view(np.uint32).copy()
    bits[np.isnan(out)] = 0x7FC00000
    return bits


def _stream(shape: tuple[int, ...], rng) -> np.ndarray:
    x = (rng.standard_normal(shape) * rng.choice([1e-3, 1.0, 30.0, 1e3], shape)).astype(np.float32)
    flat = x.reshape(-1)
    flat[:len(_EDGES)] = _EDGES[:flat.size]
    flat[-3:] = np.frombuffer(np.array([0x7FC00001, 0xFFC00000, 0x00000001], np.uint32).tobytes(), np.float32)
    return x.view(np.uint32)


def test_the_fast_ops_are_the_ops_computed_in_float64():
    assert set(unary.VIA_F64) == set(_NUMPY)


@pytest.mark.parametrize("op", sorted(_NUMPY))
@pytest.mark.parametrize("shape", [(1, 16384, 4), (3, 7, 4), (2, 5, 8), (1, 1, 4)])
def test_fast_unary_matches_the_step_and_numpy(op, shape):
    values = _stream(shape, np.random.default_rng(len(op) * 31 + shape[1]))
    fast = unary.via_f64(op, values)
    assert fast is not None and fast.shape == values.shape and fast.dtype == np.uint32
    general = run_step("FP_UNARY", op, 0, values)
    assert fast.tobytes() == general.tobytes()
    assert fast.tobytes() == _oracle(op, values.view(np.float32)).tobytes()


def test_fast_unary_reuses_its_buffers_without_mixing_results():
    rng = np.random.default_rng(5)
    big, small = _stream((1, 4096, 4), rng), _stream((1, 10, 4), rng)
    first = unary.via_f64("EXP", big)
    second = unary.via_f64("LOG", small)
    assert first.tobytes() == _oracle("EXP", big.view(np.float32)).tobytes()
    assert second.tobytes() == _oracle("LOG", small.view(np.float32)).tobytes()


def test_other_ops_and_integers_take_the_general_path():
    assert unary.via_f64("SQRT", np.zeros((1, 2, 4), np.uint32)) is None
    assert unary.via_f64("SIGMOID", np.zeros((1, 2, 4), np.uint32)) is None
    assert unary.via_f64("EXP", np.zeros((1, 2, 4), np.int32)) is None


def test_the_switch_turns_the_float64_shortcut_off(monkeypatch):
    """`via_f64` is a shortcut on the plain interpreter's hook (visa/interp/shortcuts.py): it runs
    with the speed switch on only, and the plain path (the shared numerics' step) gives the same bits."""
    import npu_opt
    from ir.vector.enums import FpUnaryOp
    from tests.vector.kernels import float_kernel
    from visa.interp import execute, shortcuts
    from visa.parser import parse_visa

    calls: list[str] = []

    def counted(op, values):
        calls.append(op)
        return unary.via_f64(op, values)

    monkeypatch.setitem(shortcuts._SHORTCUTS, "fp_unary", counted)
    artifact = parse_visa(npu_opt.compile(float_kernel([("vector_fp_unary", FpUnaryOp.EXP)])).text)
    x = _stream((8, 64), np.random.default_rng(5)).view(np.float32)
    plain = execute(artifact, [x], fast=False)
    assert calls == []
    fast = execute(artifact, [x], fast=True)
    assert calls == ["EXP"]
    np.testing.assert_array_equal(np.asarray(plain).view(np.uint32), np.asarray(fast).view(np.uint32))
