"""A generic kernel whose DMA drops a digit stays refused (issue 56 item 4): npu-opt has no
build-only kernel, every kernel a factory makes is checked whole, and a DMA never drops
data. Its lossless sibling runs, cpu == visa == the input."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import npu_opt
from tests.parity import kernels_generic_copy as k


def test_the_copy_that_drops_r_mod_2_is_dma_4_at_its_to_dm():
    (found,) = npu_opt.check(k.lossy_g).diagnostics
    line = Path(k.__file__).read_text(encoding="utf-8").splitlines()[found.line - 1]
    assert found.code == "DMA-4" and "never drops data" in found.message and "x.to_dm(" in line


@pytest.mark.parametrize("kernel, inner", [(k.lossless_g, 16), (k.lossless_h, 32)])
@pytest.mark.parametrize("backend", ["cpu", "visa"])
def test_the_lossless_copy_moves_every_row(kernel, inner, backend):
    x = np.arange(512 * inner, dtype=np.int32).reshape(512, inner) * 7 - 3
    assert np.array_equal(npu_opt.run(kernel, x, backend=backend), x)
