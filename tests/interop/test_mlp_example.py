"""examples/interop/quantized_mlp.py: the int8 MLP's layers equal an integer numpy oracle
exactly, and its errors against the float model are those of int8 quantization."""

from __future__ import annotations

import numpy as np

from tests.optional_deps import Deferred, need

need("torch", "torch")

# imported when a test first reads them, not at collection (tests/optional_deps.Deferred)
torch = Deferred("torch")
quantized_mlp = Deferred("examples.interop.quantized_mlp")


def test_quantized_layers_equal_an_integer_oracle() -> None:
    model = quantized_mlp.float_model(seed=3)
    x = torch.randn(quantized_mlp.TOKENS, quantized_mlp.FEATURES, generator=torch.Generator().manual_seed(4))
    q = quantized_mlp.QuantizedMLP(model, x)
    x_q = q.quantize_input(x)
    h_q = q.layer1(x_q)
    acc = x_q.numpy().astype(np.int64) @ q.w1.astype(np.int64).T + q.b1
    # requant by a power of two is exact: round half up, then ReLU and the i8 top
    want_h = np.clip(np.floor(acc * q.requant + 0.5), 0, 127).astype(np.int8)
    assert q.requant < 1 and np.array_equal(h_q.numpy(), want_h)
    # the calibration's power of two (rounded down) maps the largest hidden value into the top octave
    assert 64 <= want_h.max() <= 127
    y = q.layer2(h_q)
    want_y = want_h.astype(np.int64) @ q.w2.astype(np.int64).T + q.b2
    assert np.array_equal(y.numpy(), want_y.astype(np.int32))


def test_errors_against_the_float_model_are_small_but_not_zero() -> None:
    errors = quantized_mlp.compare(seed=0, show=False)
    assert set(errors) == {"layer 1 (up, ReLU, requant)", "layer 2 (down) alone", "end to end"}
    # per-tensor symmetric int8 of normal data: about 1-3 % in the Frobenius norm
    assert all(0.002 < e < 0.05 for e in errors.values()), errors
