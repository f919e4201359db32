"""Hardware level predicates of docs/machine/index.md, reported under docs/machine/index.md aliases."""

from __future__ import annotations

from ir.mapping import levels, m

AX = {"A": 2048, "I": 512, "J": 512, "K": 64}


def mm(text):
    return m(text, axes=AX)


def test_cluster_and_slice_sizes():
    assert levels.cluster(mm("1 # 2")) is None
    bad = levels.cluster(mm("1 # 4"))
    assert bad.predicate == "CLUSTER-REF" and bad.code == "SPACE-2"
    assert levels.slice_(mm("A / 8 # 256")) is None
    assert levels.slice_(mm("A / 8 % 32")).code == "SPACE-3"


def test_chip_count():
    assert levels.chip(mm("1"), 1) is None
    assert levels.chip(mm("2"), 1).code == "SPACE-1"


def test_dm_and_trf_capacity():
    assert levels.dm_cap(mm("I % 32, K"), 16) is None
    assert levels.dm_cap(mm("A, I"), 8).code == "MEM-1"  # 1 MiB of i8
    assert levels.trf_lane(mm("J % 8")) is None
    assert levels.trf_lane(mm("1 # 3")).code == "TRF-1"
    assert levels.trf_cap(mm("J % 8"), mm("J / 8 % 4, K"), 16) is None
    over = levels.trf_cap(mm("J % 8"), mm("J / 4, K"), 16)  # 8 x 128*64*2 bytes
    assert over.code == "TRF-2" and "65536" in over.message


def test_packet_predicates():
    assert levels.pkt_flit(mm("K % 16"), 16) is None
    assert levels.pkt_flit(mm("K % 16"), 8).code == "COLLECT-2"
    assert levels.pkt_commit(mm("K % 2"), 16).code == "TRIM-1"
    odd = levels.pkt_flit(mm("1 # 3"), 4)
    assert odd is not None and "whole number of bytes" in odd.message
