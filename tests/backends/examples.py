"""Load the kernels of /work/main/examples (each file declares its own axes, so each is
imported as its own module) and build the inputs docs/testing.md prescribes."""

from __future__ import annotations

import functools
import importlib.util
from pathlib import Path
from types import ModuleType

import numpy as np

from tests.backends.oracles import f32_to_bf16_bits

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


@functools.cache
def load(path: Path | str) -> ModuleType:
    """Import one kernel file under a private module name."""
    path = Path(path)
    spec = importlib.util.spec_from_file_location(f"_cpu_test_{path.parent.name}_{path.stem}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def example(stem: str, kernel: str):
    """The kernel `kernel` of examples/<stem>.py."""
    return getattr(load(EXAMPLES / f"{stem}.py"), kernel)


def bf16_uniform(rng: np.random.Generator, shape: tuple[int, ...] | int) -> np.ndarray:
    """bf16 bit patterns of values uniform in [-1, 1) (docs/testing.md)."""
    return f32_to_bf16_bits(rng.uniform(-1.0, 1.0, shape).astype(np.float32))


def i8_uniform(rng: np.random.Generator, shape: tuple[int, ...] | int) -> np.ndarray:
    """i8 values uniform over the whole range."""
    return rng.integers(-128, 128, shape, dtype=np.int8)
