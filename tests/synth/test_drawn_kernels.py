"""benchmarks/drawn_kernels.py: the kernels the benchmarks draw are valid (each passes
`npu-opt check` as a kernel file) and compute their contraction: the cpu backend and the
VISA interpreter both equal an independent numpy oracle, bit for bit, at small sizes."""

from __future__ import annotations

from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

from backends import get_backend
from benchmarks.drawn_kernels import FORMS, draw, draw_space, pinned
from driver.cli import main
from synth.space import source, space_of

SEEDS = (0, 1)
COUNT = 3


def _oracle(d, arrays: list[np.ndarray]) -> np.ndarray:
    """The padded result, from the operands alone (not the code under test): an einsum in
    int64 / float64 of the einsum's operands as stored (`k` first for an operand the kernel
    transposes on the device), the result dtype's rounding (i32 wraps)."""
    letters = {i: chr(ord("a") + n) for n, i in enumerate(d.spec.sizes)}
    expr = ",".join("".join(letters[i] for i in d.spec.stored(name)) for name, _ in d.spec.operands)
    expr += "->" + "".join(letters[i] for i in d.spec.result[1])
    wide = [a.astype(np.int64 if a.dtype == np.int8 else np.float64) for a in arrays[:2]]
    full = np.einsum(expr, *wide)
    out = {"i32": np.int32, "f32": np.float32, "bf16": ml_dtypes.bfloat16}[d.spec.dtype_out]
    return full.astype(np.int64).astype(np.int32) if out is np.int32 else full.astype(out)


@pytest.mark.parametrize("seed", SEEDS)
def test_every_drawn_kernel_checks_and_equals_the_oracle_on_cpu_and_visa(tmp_path: Path, seed: int) -> None:
    for d in draw(seed, COUNT):
        _checks_and_equals_the_oracle(tmp_path, d, seed)


def _checks_and_equals_the_oracle(tmp_path: Path, d, seed: int) -> None:
    path = tmp_path / f"{d.name}.py"
    path.write_text(source(d.spec, d.point))
    assert main(["check", str(path)]) == 0, d.layout
    arrays = d.inputs(np.random.default_rng(seed))
    want = _oracle(d, arrays)
    assert want.shape == arrays[-1].shape
    for backend in ("cpu", "visa"):
        args = [a.copy() for a in arrays]
        get_backend(backend).run(d.kernel, tuple(args))
        assert args[-1].dtype == want.dtype and np.array_equal(args[-1], want), (backend, d.layout)


def test_an_operand_stored_k_first_is_drawn_and_transposed_on_the_device(tmp_path: Path) -> None:
    """Issue 61 asks the draws for stored-transposed operands: seed 2's first GEMM stores `a`
    as `a[k,m]` and the kernel reads it as stored (its parameter is `k`-first); `pinned` with
    the layout's `transpose=device` rebuilds the same kernel."""
    (d,) = draw(2, 1, forms=("gemm",))
    assert d.spec.device_transposed == ("a",) and "a[k,m]" in d.spec.text and "transpose=device" in d.layout
    assert 'm("K, M")' in source(d.spec, d.point)
    _checks_and_equals_the_oracle(tmp_path, d, 2)
    again = pinned("again", d.spec.text, f"{d.spec.dtype_in}:{d.spec.dtype_out}", d.spec.sizes, d.point, d.form,
                   transpose="device")
    assert source(again.spec, again.point).replace("again", d.name) == source(d.spec, d.point)


def test_the_draws_are_seeded_and_vary() -> None:
    first, again = draw(3, 4), draw(3, 4)
    assert [d.layout for d in first] == [d.layout for d in again]
    layouts = {d.layout for s in range(4) for d in draw(s, 3)}
    assert len(layouts) == 12
    forms = {d.form for s in range(4) for d in draw(s, 3)}
    assert forms == set(FORMS)


def test_a_drawn_space_has_at_least_the_asked_candidates() -> None:
    """Counted after the space's deduplication and budget filter (`Space.points()`), not as
    the product of the levers' values (seed 0's tiled GEMM had 240 of those, 66 distinct)."""
    for seed in (0, 4):
        spec = draw_space(seed)
        assert len(space_of(spec, run=False).points()) >= 100, seed
    assert draw_space(4).sizes != draw_space(0).sizes
