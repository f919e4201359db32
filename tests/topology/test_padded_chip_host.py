"""The host array of a tensor on a padded Chip (`m("1 # 4")` on a 4-chip kernel), issue 56
item 2. Only chip 0 holds data, so the array is that one copy: the element's shape, as the
reference reads it with `to_host::<Element>()`. The reference's own tests state the same
tensor as `HostTensor<m![1, ..]>` (cluster_chip_shuffle_slice's read-only padded swap), so
an input with a leading dimension of 1 is the same data; a leading 4 would put rows where
the padding chips hold nothing, and is USAGE."""

from __future__ import annotations

import numpy as np
import pytest

import npu_opt
from ir.errors import NpuOptError
from ir.mapping import m
from ir.topology import accepted_host_shapes, chip_host_dims
from ir.types import HbmType
from ir.dtypes import i32
from tests.topology import padded_chip_kernels as k

X = np.random.default_rng(56).integers(-2 ** 31, 2 ** 31, (256, 8), dtype=np.int64).astype(np.int32)


@pytest.mark.parametrize("backend", ["cpu", "visa"])
@pytest.mark.parametrize("lead", [(), (1,)])
def test_the_one_copy_goes_in_with_or_without_a_leading_1(backend: str, lead: tuple[int, ...]) -> None:
    x = X.reshape(lead + X.shape)
    out = np.zeros(lead + X.shape, np.int32)
    y = npu_opt.run(k.one_chip_of_four_transpose, x, out, backend=backend)[0]
    assert y.shape == (8, 256) and np.array_equal(y, X.T)
    assert out.shape == lead + X.shape and np.array_equal(out.reshape(X.shape), X)  # written in place


@pytest.mark.parametrize("backend", ["cpu", "visa"])
def test_a_row_per_chip_is_usage_naming_both_shapes(backend: str) -> None:
    x = np.stack([X] * 4)
    with pytest.raises(NpuOptError) as caught:
        npu_opt.run(k.one_chip_of_four_transpose, x, np.zeros_like(X), backend=backend)
    msg = str(caught.value)
    assert caught.value.code == "USAGE" and "(4, 256, 8)" in msg
    assert "(256, 8)" in msg and "(1, 256, 8)" in msg and "chips 1 to 3 hold padding" in msg


def test_which_chips_add_a_dimension() -> None:
    ax = {"C": 4, "A": 256}

    def hbm(chip: str) -> HbmType:
        return HbmType(i32, m(chip, axes=ax), m("A", axes=ax))

    assert [chip_host_dims(hbm(c).chip) for c in ("1", "1 # 4", "4", "C")] == [(), (), (4,), (4,)]
    assert accepted_host_shapes(hbm("1 # 4")) == ((256,), (1, 256))
    assert [accepted_host_shapes(hbm(c)) for c in ("1", "4", "C")] == [((256,),), ((4, 256),), ((4, 256),)]
