"""`npu-opt run --numerics chip|reference` (docs/reference/cli.md, docs/numerics.md).

The oracle of the reference order is numpy alone: both bf16 operands widened from their bit
patterns (a subnormal reads as a zero of its sign), the products added from +0.0 one f32
addition at a time in K order."""

from __future__ import annotations

from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

from driver.cli import main

ROOT = Path(__file__).parents[2]
GEMM_BF16 = f"{ROOT / 'examples' / 'gemm_bf16.py'}::gemm_bf16_kernel"


def _widen(x: np.ndarray) -> np.ndarray:
    bits = x.view(np.uint16).astype(np.uint32)
    return np.where((bits & 0x7F80) == 0, (bits & 0x8000) << 16, bits << 16).astype(np.uint32).view(np.float32)


def _host_fold(a: np.ndarray, w: np.ndarray) -> np.ndarray:
    af, wf = _widen(a), _widen(w)
    acc = np.zeros((a.shape[0], w.shape[0]), np.float32)
    for k in range(a.shape[1]):
        acc = acc + np.multiply.outer(af[:, k], wf[:, k])
    return acc


@pytest.fixture(scope="module")
def operands(tmp_path_factory):
    rng = np.random.default_rng(13)
    a = (rng.standard_normal((512, 128)) * np.exp2(rng.integers(-4, 5, (512, 128)))).astype(ml_dtypes.bfloat16)
    w = (rng.standard_normal((512, 128)) * np.exp2(rng.integers(-4, 5, (512, 128)))).astype(ml_dtypes.bfloat16)
    a.view(np.uint16)[:, ::7] = 0x0011            # subnormals, which the host reads as +0
    d = tmp_path_factory.mktemp("bf16")
    np.save(d / "a.npy", a.view(np.uint16))
    np.save(d / "w.npy", w.view(np.uint16))
    return a, w, [f"a={d / 'a.npy'}", f"w={d / 'w.npy'}"]


def _cli(capsys, *words: str) -> tuple[int, str, str]:
    status = main(list(words))
    captured = capsys.readouterr()
    assert "Traceback" not in captured.out + captured.err
    return status, captured.out, captured.err


def _inputs(inputs: list[str]) -> list[str]:
    return [word for name in inputs for word in ("--input", name)]


def test_reference_numerics_writes_the_hosts_fold(operands, tmp_path, capsys):
    a, w, inputs = operands
    status, _, err = _cli(capsys, "run", GEMM_BF16, *_inputs(inputs), "--numerics", "reference",
                          "-o", str(tmp_path / "ref"))
    assert status == 0, err
    ref = np.load(tmp_path / "ref" / "out.npy")
    np.testing.assert_array_equal(ref.view(np.uint32), _host_fold(a, w).view(np.uint32))
    status, _, err = _cli(capsys, "run", GEMM_BF16, *_inputs(inputs), "-o", str(tmp_path / "chip"))
    assert status == 0, err
    chip = np.load(tmp_path / "chip" / "out.npy")   # the default is the chip's order
    assert np.count_nonzero(chip.view(np.uint32) != ref.view(np.uint32)) > chip.size // 2


def test_chip_numerics_is_the_default(operands, tmp_path, capsys):
    _, _, inputs = operands
    for name, extra in (("default", []), ("chip", ["--numerics", "chip"])):
        status, _, err = _cli(capsys, "run", GEMM_BF16, *_inputs(inputs), *extra, "-o", str(tmp_path / name))
        assert status == 0, err
    assert (tmp_path / "default" / "out.npy").read_bytes() == (tmp_path / "chip" / "out.npy").read_bytes()


@pytest.mark.parametrize("words, message", [
    (["--numerics", "exact"], "unknown numerics 'exact'; expected one of: chip, reference"),
    (["--numerics", "reference", "--backend", "visa"],
     "--numerics reference is an option of the cpu backend; the visa backend computes what the chip computes"),
])
def test_bad_numerics_is_a_usage_error(operands, tmp_path, capsys, words, message):
    _, _, inputs = operands
    status, out, err = _cli(capsys, "run", GEMM_BF16, *_inputs(inputs), *words, "-o", str(tmp_path))
    assert status == 2
    assert err == f"error[USAGE]: {message}\n"
    assert not list(tmp_path.glob("*.npy")) and out == ""


def test_the_help_names_the_option(capsys):
    with pytest.raises(SystemExit):
        main(["run", "--help"])
    out = capsys.readouterr().out
    assert "--numerics chip|reference" in out
