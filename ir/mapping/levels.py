"""Hardware level predicates of docs/machine/index.md, as functions the stage rules call.

Each predicate returns None when it holds, or a `LevelViolation` naming the predicate,
its docs/machine/index.md alias (the diagnostic code, docs/machine/index.md) and a readable reason.
The machine's numbers are arguments: a rule passes those of the target it checks against
(ir/machine.py `constants()`).
"""

from __future__ import annotations

import attrs

from ir.mapping.nodes import Mapping

__all__ = [
    "LevelViolation", "ALIASES", "FLIT_BYTES", "chip", "cluster", "slice_",
    "dm_cap", "trf_lane", "trf_cap", "pkt_flit", "pkt_commit",
]

FLIT_BYTES = 32

# docs/machine/index.md predicate -> the docs/machine/index.md rule it is reported under (docs/machine/index.md).
ALIASES = {
    "CHIP": "SPACE-1", "CLUSTER-REF": "SPACE-2", "SLICE-REF": "SPACE-3", "DM-CAP": "MEM-1",
    "TRF-LANE": "TRF-1", "TRF-CAP": "TRF-2", "PKT-FLIT": "COLLECT-2", "PKT-COMMIT": "TRIM-1",
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


def _bytes(mapping: Mapping, bits: int, predicate: str) -> int | LevelViolation:
    """`size(M) * bits / 8`, or the violation of `predicate` when that is not a whole number of bytes."""
    if mapping.size * bits % 8:
        return LevelViolation(predicate, f"{mapping.size} elements of {bits} bits are not a whole number of bytes")
    return mapping.size * bits // 8


def chip(mapping: Mapping, chips: int) -> LevelViolation | None:
    """CHIP: |Chip| equals the device's chip count."""
    if mapping.size != chips:
        return LevelViolation("CHIP", f"Chip mapping `{mapping}` has size {mapping.size}, but the device has {chips} chip(s)")
    return None


def cluster(mapping: Mapping, sizes: frozenset[int] | tuple[int, ...]) -> LevelViolation | None:
    """CLUSTER-REF: |Cluster| is a legal cluster count (CLUSTER_SIZES) (write fewer live clusters as `1 # 2`)."""
    if mapping.size not in sizes:
        return LevelViolation("CLUSTER-REF", f"Cluster mapping `{mapping}` has size {mapping.size}; "
                              f"it must be one of {sorted(sizes)} (pad unused clusters, e.g. `1 # 2`)")
    return None


def slice_(mapping: Mapping, sizes: frozenset[int] | tuple[int, ...]) -> LevelViolation | None:
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


def dm_cap(element: Mapping, bits: int, limit: int) -> LevelViolation | None:
    """DM-CAP: one slice's element fits the slice's DM (DM_SLICE_BYTES)."""
    b = _bytes(element, bits, "DM-CAP")
    if isinstance(b, LevelViolation):
        return b
    if b > limit:
        return LevelViolation("DM-CAP", f"element `{element}` needs {b} bytes per slice; DM holds {limit}")
    return None


def trf_lane(lane: Mapping, lanes: frozenset[int] | tuple[int, ...]) -> LevelViolation | None:
    """TRF-LANE: |Lane| is a legal lane count (LANES)."""
    if lane.size not in lanes:
        return LevelViolation("TRF-LANE", f"Lane mapping `{lane}` has size {lane.size}; it must be one of {sorted(lanes)}")
    return None


def trf_cap(lane: Mapping, element: Mapping, bits: int, limit: int) -> LevelViolation | None:
    """TRF-CAP: |Lane| * bytes(Element) fits the slice's TRF."""
    b = _bytes(element, bits, "TRF-CAP")
    if isinstance(b, LevelViolation):
        return b
    if lane.size * b > limit:
        return LevelViolation("TRF-CAP", f"{lane.size} lane(s) x {b} bytes = {lane.size * b} bytes; "
                              f"the TRF holds {limit} bytes per slice ({limit // max(lane.size, 1)} per lane)")
    return None


def _packet_bytes(packet: Mapping, bits: int, predicate: str, allowed: frozenset[int], what: str) -> LevelViolation | None:
    b = _bytes(packet, bits, predicate)
    if isinstance(b, LevelViolation):
        return b
    if b not in allowed:
        return LevelViolation(predicate, f"packet `{packet}` is {packet.size} x {bits}-bit = {b} bytes; {what}")
    return None


def pkt_flit(packet: Mapping, bits: int) -> LevelViolation | None:
    """PKT-FLIT: the packet is exactly one 32-byte flit."""
    return _packet_bytes(packet, bits, "PKT-FLIT", frozenset({FLIT_BYTES}), "it must be exactly one 32-byte flit")


def pkt_commit(packet: Mapping, bits: int) -> LevelViolation | None:
    """PKT-COMMIT: a committed packet is 8, 16, 24 or 32 bytes."""
    return _packet_bytes(packet, bits, "PKT-COMMIT", frozenset({8, 16, 24, 32}), "it must be 8, 16, 24 or 32 bytes")
