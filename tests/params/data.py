"""Inputs shared by the parameter tests: the executing backends and random i8 arrays."""

from __future__ import annotations

import numpy as np

BACKENDS = ("cpu", "visa")


def i8_array(rng: np.random.Generator, *shape: int) -> np.ndarray:
    """Uniform i8 values over the whole range."""
    return rng.integers(-128, 128, shape).astype(np.int8)
