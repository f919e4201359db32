"""`npu-opt visa --exec` runs every shipped example (issue 39, item 4): each artifact of
`npu-opt compile examples/` (its subdirectories and the resident-buffer kernels
included), executed from the command line on `.npy` inputs, exits 0 and writes the same
files, bit for bit, as `npu-opt run --backend cpu` on the kernel's source. A resident DM
parameter is given as its buffer's host array, as `run` takes it."""

from __future__ import annotations

import json
import zlib
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

from driver.cli import main
from ir.resident import Device, DmBuffer
from ir.topology import chip_host_dims
from visa import parse_visa
from visa.interp.host import host_shape

ROOT = Path(__file__).parents[2]
INDEX_NAMES = ("offset", "slot", "table")  # gather byte offsets and page numbers: 0 is always in range


@pytest.fixture(scope="module")
def compiled(tmp_path_factory) -> tuple[Path, dict[str, str]]:
    """`npu-opt compile examples/` once: the artifacts' directory, and each kernel's file."""
    out = tmp_path_factory.mktemp("examples") / "artifacts"
    assert main(["compile", str(ROOT / "examples"), "-o", str(out), "--no-cache"]) == 0
    manifest = json.loads((out / "manifest.json").read_text())
    return out, {e["name"]: e["file"] for e in manifest["kernels"]}


def _names() -> list[str]:
    names = []
    for path in sorted((ROOT / "examples").rglob("*.py")):
        text = path.read_text()
        names += [line.split("def ", 1)[1].split("(", 1)[0] for line, before in zip(text.splitlines()[1:],
                                                                                     text.splitlines())
                  if before.strip().startswith("@device") and line.lstrip().startswith("def ")]
    return sorted(names)


def _array(p, rng: np.random.Generator) -> np.ndarray:
    a = _random(p, rng)
    copies = 0 if p.type.kind == "scalar" or p.at is not None else len(chip_host_dims(p.type.chip))
    if copies:  # a broadcast Chip's copies are one value per chip, equal on input (rule 11)
        a[...] = a[(0,) * copies]
    return a


def _random(p, rng: np.random.Generator) -> np.ndarray:
    t = p.type
    d = t.dtype
    if t.kind == "scalar":
        return np.array(1, d.host_dtype)
    if p.at is not None:  # a resident DM buffer: its host array
        shape = DmBuffer(t, str(t), Device("rngd")).shape
    else:
        shape = chip_host_dims(t.chip) + host_shape(t.element)
    if any(n in p.name for n in INDEX_NAMES):
        return np.zeros(shape, d.host_dtype)
    if d.value == "bf16":
        return rng.uniform(-1, 1, shape).astype(ml_dtypes.bfloat16).view(np.uint16)
    if d.is_float:
        return rng.uniform(-1, 1, shape).astype(np.float32)
    return rng.integers(max(d.min, -1000), min(d.max, 1000) + 1, shape).astype(d.host_dtype)


def test_every_example_kernel_is_compiled(compiled):
    assert sorted(compiled[1]) == _names()


@pytest.mark.parametrize("name", _names())
def test_visa_exec_runs_the_example_as_run_does(compiled, tmp_path, capsys, name):
    out, files = compiled
    artifact = parse_visa((out / f"{name}.visa").read_text())
    rng = np.random.default_rng(zlib.crc32(name.encode()))
    inputs = []
    for p in artifact.kernel.params:
        path = tmp_path / f"{p.name}.npy"
        np.save(path, _array(p, rng))
        inputs += ["--input", f"{p.name}={path}"]
    by_visa, by_cpu = tmp_path / "visa", tmp_path / "cpu"
    status = main(["visa", str(out / f"{name}.visa"), "--exec", *inputs, "-o", str(by_visa)])
    err = capsys.readouterr().err
    assert status == 0, err
    assert main(["run", f"{ROOT / files[name]}::{name}", *inputs, "-o", str(by_cpu)]) == 0, capsys.readouterr().err
    written = sorted(p.name for p in by_visa.iterdir())
    assert written and written == sorted(p.name for p in by_cpu.iterdir())
    for file in written:
        got, want = np.load(by_visa / file), np.load(by_cpu / file)
        assert got.dtype == want.dtype and got.shape == want.shape and got.tobytes() == want.tobytes(), file
