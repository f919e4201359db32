"""A DMA command copied through strided views moves each packet as whole words when the
packet and every address allow it (issue 61: a DM -> HBM DMA of 4-byte packets took
1.7 ms a byte at a time, 0.2 ms as words); the bytes are the byte-by-byte copy's."""

from __future__ import annotations

import numpy as np
import pytest

from visa.interp import dma
from visa.interp.strided import flat_walk, view


@pytest.mark.parametrize("packet, base, stride, word", [(4, 0, 8, 4), (8, 16, 24, 8), (6, 0, 12, 2), (4, 2, 8, 2),
                                                       (4, 1, 8, 1), (3, 0, 6, 1), (16, 8, 16, 8)])
def test_a_packet_moves_as_the_widest_word_every_address_allows(packet, base, stride, word):
    rng = np.random.default_rng(packet * 31 + base)
    src = rng.integers(0, 256, 4096, dtype=np.uint8)
    sizes, src_strides, dst_strides = [5, 7, packet], [stride * 7, stride, 1], [packet, 5 * packet, 1]
    dst = np.zeros(4096, np.uint8)
    want = dst.copy()
    byte_src = view(flat_walk(src, base, sizes, src_strides, 1), sizes, np.dtype(np.uint8))
    byte_dst = view(flat_walk(want, 64, sizes, dst_strides, 1), sizes, np.dtype(np.uint8))
    byte_dst[...] = byte_src
    sv, dv = dma._word_views(flat_walk(src, base, sizes, src_strides, 1), flat_walk(dst, 64, sizes, dst_strides, 1),
                             sizes)
    assert sv.dtype.itemsize == dv.dtype.itemsize == word
    assert dma.copy_strided(src, base, src_strides, dst, 64, dst_strides, sizes)
    assert np.array_equal(dst, want)


def test_a_broadcast_packet_is_copied_as_words_into_every_copy():
    src = np.arange(64, dtype=np.uint8)
    dst = np.zeros(4 * 64, np.uint8)
    assert dma.copy_strided(src, 0, [0, 1], dst, 0, [64, 1], [4, 64])
    assert np.array_equal(dst.reshape(4, 64), np.broadcast_to(src, (4, 64)))
    sv, _ = dma._word_views(flat_walk(src, 0, [4, 64], [0, 1], 1), flat_walk(dst, 0, [4, 64], [64, 1], 1), [4, 64])
    assert sv.dtype.itemsize == 8
