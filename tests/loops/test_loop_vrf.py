"""A VRF tensor stored before a rolled loop and read in its body keeps its words through the
loop: a VRF tensor the body stores after that read is placed elsewhere (every iteration reads
the outer one again). The interpreter keeps VRF contents by value, so the placement itself is
what is checked, with the results against numpy."""

from __future__ import annotations

import numpy as np

import npu_opt
from tests.loops.vrf_kernels import two_mins
from tu_ops.vrf_memory import vrf_words
from visa import parse_visa


def test_the_outer_vrf_tensor_keeps_its_words_through_the_loop():
    kernel = parse_visa(npu_opt.compile(two_mins).text).kernel
    loads = [op for op in kernel.ops() if op.MNEMONIC == "vrf_load"]
    assert len(loads) == 2
    (a0, a1), (b0, b1) = ((op.base, op.base + vrf_words(op)) for op in loads)
    assert a1 <= b0 or b1 <= a0


def test_both_minimums_are_right_on_both_backends():
    rng = np.random.default_rng(5)
    x = rng.integers(-1000, 1000, (4, 8, 64), dtype=np.int32)
    b, c = (rng.integers(-1000, 1000, 64, dtype=np.int32) for _ in range(2))
    for backend in ("cpu", "visa"):
        got_b, got_c = npu_opt.run(two_mins, x, b, c, backend=backend)
        assert np.array_equal(got_b, np.minimum(x, b)) and np.array_equal(got_c, np.minimum(x, c))
