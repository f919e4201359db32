"""Host arrays of padded HBM parameters: a parameter `HbmTensor[..., m("A, R # 16")]` takes a
host array of its live shape (|A|, |R|) (docs/parameters.md), so the differential harness
builds its inputs in that shape, and the generator produces such parameters."""

from __future__ import annotations

import numpy as np
from hypothesis import given, seed, settings

import npu_opt

from tests.differential.harness import load_kernel
from tests.differential.strategies import kernels, make_inputs
from tests.differential.test_naive_model import SUPPRESS, differences, wide_inputs

# Rows of 12 bf16 values stored in HBM in slots of 16; the DMA unpads them into DM rows
# of 12 (24 bytes each), and the result goes back dense.
PADDED_ROWS = '''\
from npu_opt import *

axes(S=64, R=12)

Chip = m("1")
Cluster = m("1 # 2")


@device(chip=1)
def padded_rows(ctx: Context, x: HbmTensor[bf16, Chip, m("S, R # 16")]) -> HbmTensor[bf16, Chip, m("S, R")]:
    d = x.to_dm(ctx.tdma, DmTensor[bf16, Chip, Cluster, m("S"), m("R")])
    return d.to_hbm(ctx.tdma, HbmTensor[bf16, Chip, m("S, R")])
'''


def test_a_padded_parameter_gets_a_host_array_of_its_live_shape():
    kernel = load_kernel(PADDED_ROWS)
    (x,) = wide_inputs(kernel, np.random.default_rng(3))
    assert x.shape == (64, 12)
    assert differences(kernel, [x]) is None


def test_the_generator_produces_padded_parameters_that_agree_with_the_model():
    found = []

    @seed(20261202)
    @settings(max_examples=60, deadline=None, database=None, suppress_health_check=SUPPRESS)
    @given(g=kernels(illegal_rate=0, copy_rate=15))
    def prop(g):
        if "padded_param" in g.features and len(found) < 2:
            found.append(g.source)

    prop()
    assert found, "no generated kernel has a padded HBM parameter"
    for source in found:
        kernel = load_kernel(source)
        assert npu_opt.check(kernel).ok, source
        assert differences(kernel, wide_inputs(kernel, np.random.default_rng(5))) is None, source
        assert differences(kernel, make_inputs(kernel, 5)) is None, source
