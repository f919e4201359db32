"""Hardware level predicates of docs/machine/index.md, as functions the stage rules call.

Each predicate returns None when it holds, or a `LevelViolation` naming the predicate,
its docs/machine/index.md alias (the diagnostic code, docs/machine/index.md) and a readable reason.
Numbers default to the built-in `rngd` target; a target file may pass others.
"""

from __future__ import annotations

import attrs

from ir.mapping.nodes import Mapping, Modulo, Pair, Stride

__all__ = [
    "LevelViolation", "ALIASES", "FLIT_BYTES", "bytes_of", "chip", "cluster", "slice_",
    "dm_cap", "trf_lane", "trf_cap", "trf_load", "pkt_align", "pkt_flit",
    "pkt_outer", "pkt_commit", "pkt_reduce", "seq", "reshape",
]

FLIT_BYTES = 32

# docs/machine/index.md predicate -> the docs/machine/index.md rule it is reported under (docs/machine/index.md).
ALIASES = {
    "CHIP": "SPACE-1", "CLUSTER-REF": "SPACE-2", "SLICE-REF": "SPACE-3", "DM-CAP": "MEM-1",
    "VRF-CAP": "MEM-1", "TRF-LANE": "TRF-1", "TRF-CAP": "TRF-2", "TRF-LOAD": "TRF-4",
    "PKT-ALIGN": "COLLECT-1", "PKT-FLIT": "COLLECT-2", "PKT-OUTER": "OUTER-3",
    "PKT-COMMIT": "TRIM-1", "PKT-REDUCE": "PACKET-2", "SEQ": "FETCH-4", "RESHAPE": "DMA-3",
}


@attrs.frozen
class LevelViolation:
    """A failed level predicate: `predicate` (docs/mapping-language.md name), `code` (docs/machine/index.md alias)."""

    predicate: str
    message: str
    code: str = ""

    def __attrs_post_init__(self) -> None:
        if not self.code:
            object.__setattr__(self, "code", ALIASES.get(self.predicate, self.predicate))


def bytes_of(mapping: Mapping | int, bits: int) -> int | None:
    """`size(M) * bits / 8`, or None when that is not a whole number of bytes."""
    n = mapping if isinstance(mapping, int) else mapping.size
    total = n * bits
    return None if total % 8 else total // 8


def _bytes(mapping: Mapping, bits: int, predicate: str) -> int | LevelViolation:
    b = bytes_of(mapping, bits)
    if b is None:
        return LevelViolation(predicate, f"{mapping.size} elements of {bits} bits are not a whole number of bytes")
    return b


def chip(mapping: Mapping, chips: int) -> LevelViolation | None:
    """CHIP: |Chip| equals the device's chip count."""
    if mapping.size != chips:
        return LevelViolation("CHIP", f"Chip mapping `{mapping}` has size {mapping.size}, but the device has {chips} chip(s)")
    return None


def cluster(mapping: Mapping, sizes: frozenset[int] = frozenset({1, 2})) -> LevelViolation | None:
    """CLUSTER-REF: |Cluster| is a legal cluster count (write fewer live clusters as `1 # 2`)."""
    if mapping.size not in sizes:
        return LevelViolation("CLUSTER-REF", f"Cluster mapping `{mapping}` has size {mapping.size}; "
                              f"it must be one of {sorted(sizes)} (pad unused clusters, e.g. `1 # 2`)")
    return None


def slice_(mapping: Mapping, sizes: frozenset[int] = frozenset({64, 128, 256})) -> LevelViolation | None:
    """SLICE-REF: |Slice| is a legal slice count (pad unused slices, e.g. `A / 8 # 256`)."""
    if mapping.size not in sizes:
        return LevelViolation("SLICE-REF", f"Slice mapping `{mapping}` has size {mapping.size}; "
                              f"it must be one of {sorted(sizes)} (pad unused slices: "
                              f"`{padded_to(mapping, sizes)}`)")
    return None


def padded_to(mapping: Mapping, sizes: frozenset[int]) -> str:
    """`mapping` padded to the smallest legal size that holds it, as text: a several-term
    mapping is bracketed, `(M / 32, N / 32) # 256`, since `#` binds to the last term only."""
    bigger = sorted(s for s in sizes if s >= mapping.size) or [max(sizes)]
    text = str(mapping)
    if "," in text and not (text.startswith("(") and text.endswith(")")):
        text = f"({text})"
    return f"{text} # {bigger[0]}"


def dm_cap(element: Mapping, bits: int, limit: int = 524288) -> LevelViolation | None:
    """DM-CAP: one slice's element fits the slice's DM."""
    b = _bytes(element, bits, "DM-CAP")
    if isinstance(b, LevelViolation):
        return b
    if b > limit:
        return LevelViolation("DM-CAP", f"element `{element}` needs {b} bytes per slice; DM holds {limit}")
    return None


def trf_lane(lane: Mapping, lanes: frozenset[int] = frozenset({1, 2, 4, 8})) -> LevelViolation | None:
    """TRF-LANE: |Lane| is 1, 2, 4 or 8."""
    if lane.size not in lanes:
        return LevelViolation("TRF-LANE", f"Lane mapping `{lane}` has size {lane.size}; it must be one of {sorted(lanes)}")
    return None


def trf_cap(lane: Mapping, element: Mapping, bits: int, limit: int = 65536) -> LevelViolation | None:
    """TRF-CAP: |Lane| * bytes(Element) fits the slice's TRF."""
    b = _bytes(element, bits, "TRF-CAP")
    if isinstance(b, LevelViolation):
        return b
    if lane.size * b > limit:
        return LevelViolation("TRF-CAP", f"{lane.size} lane(s) x {b} bytes = {lane.size * b} bytes; "
                              f"the TRF holds {limit} bytes per slice ({limit // max(lane.size, 1)} per lane)")
    return None


def trf_load(time: Mapping, packet: Mapping, lane: Mapping, element: Mapping) -> LevelViolation | None:
    """TRF-LOAD: |Lane| divides |Time|, Lane is Time's outer part, Element is (inner Time, Packet)."""
    if time.size % lane.size:
        return LevelViolation("TRF-LOAD", f"Lane size {lane.size} does not divide the time size {time.size}", "TRF-3")
    inner_n = time.size // lane.size
    outer, inner = Stride(time, inner_n), Modulo(time, inner_n)
    if not lane.equivalent(outer):
        return LevelViolation("TRF-LOAD", f"Lane `{lane}` is not the outer {lane.size} positions of the time `{time}`", "TRF-4")
    if not element.equivalent(Pair(inner, packet)):
        return LevelViolation("TRF-LOAD", f"Element `{element}` is not (inner time, packet) = `{Pair(inner, packet)}`", "TRF-5")
    return None


def _packet_bytes(packet: Mapping, bits: int, predicate: str, allowed: frozenset[int], what: str) -> LevelViolation | None:
    b = _bytes(packet, bits, predicate)
    if isinstance(b, LevelViolation):
        return b
    if b not in allowed:
        return LevelViolation(predicate, f"packet `{packet}` is {packet.size} x {bits}-bit = {b} bytes; {what}")
    return None


def pkt_align(packet: Mapping, bits: int, align: int = 8) -> LevelViolation | None:
    """PKT-ALIGN: the packet is a positive multiple of 8 bytes."""
    b = _bytes(packet, bits, "PKT-ALIGN")
    if isinstance(b, LevelViolation):
        return b
    if b == 0 or b % align:
        return LevelViolation("PKT-ALIGN", f"packet `{packet}` is {b} bytes; it must be a multiple of {align} bytes")
    return None


def pkt_flit(packet: Mapping, bits: int) -> LevelViolation | None:
    """PKT-FLIT: the packet is exactly one 32-byte flit."""
    return _packet_bytes(packet, bits, "PKT-FLIT", frozenset({FLIT_BYTES}), "it must be exactly one 32-byte flit")


def pkt_outer(packet: Mapping, bits: int) -> LevelViolation | None:
    """PKT-OUTER: a contraction outer packet is one or two flits (32 or 64 bytes)."""
    return _packet_bytes(packet, bits, "PKT-OUTER", frozenset({32, 64}), "it must be 32 or 64 bytes")


def pkt_commit(packet: Mapping, bits: int) -> LevelViolation | None:
    """PKT-COMMIT: a committed packet is 8, 16, 24 or 32 bytes."""
    return _packet_bytes(packet, bits, "PKT-COMMIT", frozenset({8, 16, 24, 32}), "it must be 8, 16, 24 or 32 bytes")


def pkt_reduce(packet: Mapping, cols: int = 32) -> LevelViolation | None:
    """PKT-REDUCE: a reduced packet has a power-of-two size of at most 32."""
    n = packet.size
    if n > cols:
        return LevelViolation("PKT-REDUCE", f"packet `{packet}` has {n} columns; at most {cols} fit", "PACKET-2")
    if n & (n - 1):
        return LevelViolation("PKT-REDUCE", f"packet `{packet}` has {n} columns; it must be a power of two", "PACKET-3")
    return None


def seq(entries: list[tuple[int, int]], packet_bytes: int, max_entries: int = 8, max_iter: int = 65536,
        access: frozenset[int] = frozenset({1, 2, 4, 8, 16, 32})) -> LevelViolation | None:
    """SEQ: a sequencer program fits the hardware (entry count, iterations, access size)."""
    if packet_bytes not in access:
        return LevelViolation("SEQ", f"an access of {packet_bytes} bytes is not one of {sorted(access)}")
    if len(entries) > max_entries:
        return LevelViolation("SEQ", f"{len(entries)} loop entries after merging; a sequencer has {max_entries}", "FETCH-4")
    for size, _stride in entries:
        if size > max_iter:
            return LevelViolation("SEQ", f"a loop of {size} iterations exceeds the limit of {max_iter}", "FETCH-5")
    return None


def reshape(src: tuple[Mapping, ...], dst: tuple[Mapping, ...], with_element: bool = False) -> LevelViolation | None:
    """RESHAPE: Chip, Cluster, Slice sizes (and Element for a reshape) are preserved."""
    names = ("Chip", "Cluster", "Slice", "Element")
    count = 4 if with_element else 3
    for name, a, b in list(zip(names, src, dst))[:count]:
        if a.size != b.size:
            return LevelViolation("RESHAPE", f"{name} size changes from {a.size} to {b.size}")
    return None
