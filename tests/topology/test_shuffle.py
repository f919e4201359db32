"""Chip and cluster shuffles on HBM and DM against numpy, cpu == visa, artifacts verify."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import npu_opt
from tests.topology import shuffle_kernels as s
from visa.artifact import VisaTextError
from visa.verify import verify_text

RNG = np.random.default_rng(152)


def _both(kernel, x):
    a, b = (npu_opt.run(kernel, x, backend=k) for k in ("cpu", "visa"))
    assert a.tobytes() == b.tobytes()
    return a


def test_cluster_swap():
    x = RNG.integers(-128, 128, (2, 256, 64)).astype(np.int8)
    assert (_both(s.swap_clusters, x) == x[[1, 0]]).all()


def test_dm_chip_rotation_moves_chip_t_plus_1_to_t():
    x = RNG.standard_normal((4, 2, 256, 64)).astype(ml_dtypes.bfloat16)
    out = _both(s.rotate_chips, x)
    assert (out.view(np.uint16) == x[[1, 2, 3, 0]].view(np.uint16)).all()


def test_hbm_chip_shuffle_may_repeat_a_source():
    x = RNG.integers(-2 ** 31, 2 ** 31, (4, 256, 64)).astype(np.int32)
    assert (_both(s.hbm_broadcast_chip, x) == x[[2, 2, 2, 2]]).all()


def test_shuffle_artifacts_verify_and_a_changed_pattern_is_refused():
    text = npu_opt.compile(s.swap_clusters).text
    assert "= dma_shuffle " in text and "level=CLUSTER pattern=[1, 0]" in text
    verify_text(text)
    with pytest.raises(VisaTextError, match="SHUFFLEOP-1"):
        verify_text(text.replace("pattern=[1, 0]", "pattern=[1, 5]"))
    verify_text(npu_opt.compile(s.rotate_chips).text)
    hbm = npu_opt.compile(s.hbm_broadcast_chip).text
    verify_text(hbm)
    with pytest.raises(VisaTextError):
        verify_text(hbm.replace("pattern=[2, 2, 2, 2]", "pattern=[1, 2, 2, 2]"))


def test_the_chip_count_may_be_left_to_the_patterns_length():
    x = RNG.integers(-2 ** 31, 2 ** 31, (4, 256, 64)).astype(np.int32)
    assert (_both(s.hbm_rotation_dim_inferred, x) == x[[1, 2, 3, 0]]).all()
    assert (_both(s.dm_rotation_dim_inferred, x) == x[[3, 0, 1, 2]]).all()


@pytest.mark.parametrize("kernel, code", [(s.wrong_dim, "SHUFFLE-1"), (s.on_the_tensor_unit, "CTX-1"),
                                          (s.short_pattern, "SHUFFLE-1")])
def test_refused_shuffles(kernel, code):
    assert [d.code for d in kernel.trace().diagnostics] == [code]
