"""Hardware level predicates of docs/machine/index.md, reported under docs/machine/index.md aliases."""

from __future__ import annotations

from ir.machine import RNGD as C
from ir.mapping import levels, m

AX = {"A": 2048, "I": 512, "J": 512, "K": 64}


def mm(text):
    return m(text, axes=AX)


def test_cluster_and_slice_sizes():
    assert levels.cluster(mm("1 # 2"), C.CLUSTER_SIZES) is None
    bad = levels.cluster(mm("1 # 4"), C.CLUSTER_SIZES)
    assert bad.predicate == "CLUSTER-REF" and bad.code == "SPACE-2"
    assert levels.slice_(mm("A / 8 # 256"), C.SLICE_SIZES) is None
    assert levels.slice_(mm("A / 8 % 32"), C.SLICE_SIZES).code == "SPACE-3"


def test_chip_count():
    assert levels.chip(mm("1"), 1) is None
    assert levels.chip(mm("2"), 1).code == "SPACE-1"


def test_dm_and_trf_capacity():
    assert levels.dm_cap(mm("I % 32, K"), 16, C.DM_SLICE_BYTES) is None
    assert levels.dm_cap(mm("A, I"), 8, C.DM_SLICE_BYTES).code == "MEM-1"  # 1 MiB of i8
    assert levels.trf_lane(mm("J % 8"), C.LANES) is None
    assert levels.trf_lane(mm("1 # 3"), C.LANES).code == "TRF-1"
    assert levels.trf_cap(mm("J % 8"), mm("J / 8 % 4, K"), 16, C.TRF_BYTES) is None
    over = levels.trf_cap(mm("J % 8"), mm("J / 4, K"), 16, C.TRF_BYTES)  # 8 x 128*64*2 bytes
    assert over.code == "TRF-2" and "65536" in over.message


def test_packet_predicates():
    assert levels.pkt_flit(mm("K % 16"), 16) is None
    assert levels.pkt_flit(mm("K % 16"), 8).code == "COLLECT-2"
    assert levels.pkt_commit(mm("K % 2"), 16).code == "TRIM-1"
    odd = levels.pkt_flit(mm("1 # 3"), 4)
    assert odd is not None and "whole number of bytes" in odd.message


def test_a_limit_is_the_callers():
    assert levels.dm_cap(mm("A, I"), 8, 2 * C.DM_SLICE_BYTES) is None  # what a target with twice the DM holds
    assert levels.slice_(mm("A / 8 % 32"), (32, 64)) is None
