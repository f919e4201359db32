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


def test_trf_load_shape():
    time, packet = mm("J % 8, J / 8 % 4, K / 16"), mm("K % 16")
    assert levels.trf_load(time, packet, mm("J % 8"), mm("J / 8 % 4, K / 16, K % 16")) is None
    assert levels.trf_load(time, packet, mm("J / 8 % 4"), mm("J % 8, K")).code == "TRF-4"
    assert levels.trf_load(time, packet, mm("J % 8"), mm("K, J / 8 % 4")).code == "TRF-5"


def test_packet_predicates():
    assert levels.pkt_flit(mm("K % 16"), 16) is None
    assert levels.pkt_flit(mm("K % 16"), 8).code == "COLLECT-2"
    assert levels.pkt_align(mm("K % 4"), 8).code == "COLLECT-1"
    assert levels.pkt_outer(mm("K % 32"), 16) is None
    assert levels.pkt_commit(mm("K % 2"), 16).code == "TRIM-1"
    assert levels.pkt_reduce(mm("K % 16")) is None
    assert levels.pkt_reduce(mm("K")).code == "PACKET-2"
    assert levels.pkt_reduce(mm("1 # 3")).code == "PACKET-3"
    odd = levels.pkt_flit(mm("1 # 3"), 4)
    assert odd is not None and "whole number of bytes" in odd.message


def test_sequencer_limits():
    assert levels.seq([(8, 64), (4, 512), (64, 1)], 32) is None
    assert levels.seq([(2, 1)] * 9, 32).code == "FETCH-4"
    assert levels.seq([(65537, 1)], 32).code == "FETCH-5"
    assert levels.seq([(4, 1)], 3).predicate == "SEQ"


def test_reshape_preserves_spatial_sizes():
    same = (mm("1"), mm("1 # 2"), mm("A / 8 # 256"), mm("A % 8"))
    assert levels.reshape(same, same, with_element=True) is None
    other = (mm("1"), mm("1 # 2"), mm("A / 16 # 128"), mm("A % 16"))
    assert levels.reshape(same, other).code == "DMA-3"
