"""`both_backends(kernel, x, *markers)`: the check most Vector Engine tests end with (`x` is
one array, or a tuple of the kernel's inputs). The kernel compiles to an artifact that
verifies and holds every `marker`, and the artifact run by the VISA interpreter gives the
cpu result bit for bit. Returns (cpu result, artifact text)."""

from __future__ import annotations

import numpy as np

import npu_opt
from tu_ops import rngd
from visa.interp import execute
from visa.parser import parse_visa
from visa.verify import verify_text


def both_backends(kernel, x, *markers):
    """`x` is the kernel's one input array, or a tuple of its input arrays."""
    xs = x if isinstance(x, tuple) else (x,)
    text = npu_opt.compile(kernel).text
    verify_text(text, rngd())
    for marker in markers:
        assert marker in text, marker
    cpu = npu_opt.run(kernel, *xs)
    np.testing.assert_array_equal(cpu.view(np.uint32), execute(parse_visa(text), list(xs)).view(np.uint32))
    return cpu, text
