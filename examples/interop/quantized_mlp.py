"""What the chip's int8 numerics do to a model: a float MLP beside the same MLP whose two
`Linear` layers are npu-opt int8 GEMMs (examples/interop/mlp_kernels.py) called as PyTorch
operators (`npu_opt.torch.op`), on a seeded batch. Run it: `python examples/interop/quantized_mlp.py`
(it needs the `torch` extra: `pip install -e '.[torch]'`).

The quantization is the plain symmetric per-tensor kind:
- the input and each weight matrix are scaled so their largest magnitude is 127 and rounded
  to i8 (`s_x`, `s_w1`, `s_w2`);
- a bias is rounded to i32 at the scale of its sums (`s_x * s_w1`), and added by the kernel;
- the first layer's kernel requantizes its ReLU output to i8 by a power of two, chosen from
  the float model's own hidden activations so that the largest of them maps near 127;
- the second layer's i32 sums are scaled back to floats on the host.

`compare` returns the relative error (Frobenius norm) of each layer's output against the
float model, both per layer (the quantized layer fed the float model's own input) and
end to end, and prints it. torch is imported inside the functions, so `npu-opt compile
examples/` loads this file on a machine without torch.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

TOKENS, FEATURES, HIDDEN = 256, 64, 256


def _quantize(x: np.ndarray) -> tuple[np.ndarray, float]:
    scale = float(np.abs(x).max()) / 127
    return np.clip(np.rint(x / scale), -127, 127).astype(np.int8), scale


def float_model(seed: int = 0) -> Any:
    """The float MLP: Linear(64, 256), ReLU, Linear(256, 64), with seeded weights."""
    import torch

    torch.manual_seed(seed)
    return torch.nn.Sequential(torch.nn.Linear(FEATURES, HIDDEN), torch.nn.ReLU(), torch.nn.Linear(HIDDEN, FEATURES))


class QuantizedMLP:
    """The float model's weights in i8, its Linear layers replaced by the npu-opt kernels
    (`backend`: "cpu" for the cpu backend, "visa" for the VISA interpreter)."""

    def __init__(self, model: Any, calibration: Any, backend: str = "cpu") -> None:
        import torch

        import npu_opt.torch as npu_torch
        from examples.interop import mlp_kernels

        first, _, second = model
        self.w1, self.s_w1 = _quantize(first.weight.detach().numpy())
        self.w2, self.s_w2 = _quantize(second.weight.detach().numpy())
        self.s_x = float(calibration.abs().max()) / 127
        hidden = torch.relu(first(calibration)).detach().numpy()
        # the requant scale: the power of two that maps the largest hidden value to at most 127
        raw = 127 * self.s_x * self.s_w1 / float(hidden.max())
        self.requant = 2.0 ** math.floor(math.log2(raw))
        self.s_h = self.s_x * self.s_w1 / self.requant
        self.b1 = np.rint(first.bias.detach().numpy() / (self.s_x * self.s_w1)).astype(np.int32)
        self.b2 = np.rint(second.bias.detach().numpy() / (self.s_h * self.s_w2)).astype(np.int32)
        self.up = npu_torch.op(mlp_kernels.make_up(self.requant), backend=backend)
        self.down = npu_torch.op(mlp_kernels.mlp_down, backend=backend)

    def quantize_input(self, x: Any) -> Any:
        import torch

        return torch.from_numpy(np.clip(np.rint(x.detach().numpy() / self.s_x), -127, 127).astype(np.int8))

    def layer1(self, x_q: Any) -> Any:
        """The i8 hidden activations (their float value is `h_q * s_h`)."""
        import torch

        h_q = torch.zeros(TOKENS, HIDDEN, dtype=torch.int8)
        self.up(x_q, torch.from_numpy(self.w1), torch.from_numpy(self.b1), h_q)
        return h_q

    def layer2(self, h_q: Any) -> Any:
        """The i32 sums of the second layer (their float value is `y * s_h * s_w2`)."""
        import torch

        y = torch.zeros(TOKENS, FEATURES, dtype=torch.int32)
        self.down(h_q, torch.from_numpy(self.w2), torch.from_numpy(self.b2), y)
        return y

    def __call__(self, x: Any) -> Any:
        return self.layer2(self.layer1(self.quantize_input(x))).double() * (self.s_h * self.s_w2)


def _relative(got: np.ndarray, want: np.ndarray) -> float:
    return float(np.linalg.norm(got - want) / np.linalg.norm(want))


def compare(seed: int = 0, backend: str = "cpu", show: bool = True) -> dict[str, float]:
    """Relative errors of the quantized MLP against the float one on a seeded batch."""
    import torch

    model = float_model(seed)
    x = torch.randn(TOKENS, FEATURES, generator=torch.Generator().manual_seed(seed + 1))
    quantized = QuantizedMLP(model, x, backend)
    first, relu, second = model
    with torch.no_grad():
        h = relu(first(x))
        y = second(h)
        h_q = quantized.layer1(quantized.quantize_input(x))
        h_got = h_q.double().numpy() * quantized.s_h
        # layer 2 alone: fed the float hidden activations, quantized at the kernel's scale
        h_in = torch.from_numpy(np.clip(np.rint(h.numpy() / quantized.s_h), -127, 127).astype(np.int8))
        y_alone = quantized.layer2(h_in).double().numpy() * (quantized.s_h * quantized.s_w2)
        y_got = quantized(x).numpy()
    errors = {"layer 1 (up, ReLU, requant)": _relative(h_got, h.double().numpy()),
              "layer 2 (down) alone": _relative(y_alone, y.double().numpy()),
              "end to end": _relative(y_got, y.double().numpy())}
    if show:
        print(f"int8 MLP on npu-opt's {backend} backend against float32 PyTorch "
              f"({TOKENS} tokens, {FEATURES} -> {HIDDEN} -> {FEATURES}), requant scale 2^{math.log2(quantized.requant):.0f}")
        for name, error in errors.items():
            print(f"  {name:30} relative error {error:.4f}")
    return errors


if __name__ == "__main__":
    compare()
