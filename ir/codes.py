"""The rule index: every diagnostic code npu-opt can raise (pipeline.md 15, api.md 5).

Each entry says which phase raises it: `trace` ([T] rules, every backend), `lower`
([L] rules and op verifiers, npu backend only), `mapping` (MAP-*), `cli`, `internal`.
A code is listed here once npu-opt implements its check; `npu-opt explain` has a page
for every listed code, and a test checks that each page's example triggers its code. A
few checks are shadowed by an earlier rule with the same limit (e.g. SPACE-2 on a DM
type is first reported by DMA-3 at the DMA that creates it); their pages say which.
"""

from __future__ import annotations

import attrs

__all__ = ["CodeInfo", "CODES", "MAPPING_CATEGORIES", "code_info"]

MAPPING_CATEGORIES = (
    "syntax", "unknown_axis", "unknown_escape", "escape_type", "zero_divisor",
    "stride_not_divisible", "modulo_not_divisible", "resize_too_large", "padding_too_small",
    "zero_size", "invalid_axis_decl", "overshoot",
)


@attrs.frozen
class CodeInfo:
    """Index entry of one code."""

    code: str
    title: str
    phase: str
    section: str


def _rules(family: str, count: int, section: str, titles: list[str], phase: str = "trace") -> list[CodeInfo]:
    assert len(titles) == count
    return [CodeInfo(f"{family}-{n}", titles[n - 1], phase, section) for n in range(1, count + 1)]


_ENTRIES: list[CodeInfo] = [
    *_rules("TYPE", 8, "pipeline.md 2.1", [
        "method not offered at this stage", "i5/i9 stream used outside collect/contract_outer",
        "i5/i9 in a stored tensor", "contract_outer on a non-MAC dtype", "cast on a non-32-bit stream",
        "argument of the wrong kind", "stream object used twice", "stream never reaches a sink"]),
    *_rules("CTX", 4, "pipeline.md 2.2", [
        "wrong engine for the call", "contraction outside the main context",
        "table lookup outside the main context", "commit conversion outside the main context"]),
    *_rules("SPACE", 4, "pipeline.md 2.3", [
        "chip count mismatch", "illegal cluster count", "illegal slice count",
        "Tensor Unit stage changes Chip/Cluster/Slice"]),
    CodeInfo("MEM-1", "DM tensor larger than a slice's DM", "trace", "pipeline.md 2.4"),
    *_rules("DMA", 6, "pipeline.md 4", [
        "DMA changes the dtype", "DMA changes the chip mapping", "illegal DM destination",
        "DMA move is not well defined", "DMA burst into DM not 8-byte aligned",
        "DMA destination stride not 8-byte aligned"]),
    *_rules("FETCH", 10, "pipeline.md 6", [
        "ill-formed fetch", "fetch cannot be placed", "fetch leaves part of the source unread",
        "too many sequencer entries", "sequencer loop too long", "packet not a whole number of bytes",
        "fetch places a digit twice", "sub-context packet does not fill an 8-byte read",
        "sub-context widening above 4x", "strided 4-bit packet"]),
    CodeInfo("FLUT-1", "no such table lookup", "trace", "pipeline.md 7.1"),
    CodeInfo("FCAST-1", "not a Fetch Adapter cast", "trace", "pipeline.md 7.2"),
    *_rules("FZPS", 2, "pipeline.md 7.3", ["not a zero-point pair", "zero point out of range"]),
    *_rules("COLLECT", 5, "pipeline.md 8.1", [
        "packet not a multiple of 8 bytes", "collect packet is not one flit",
        "collect packet is not the padded flit", "collect time is not (time, flits)",
        "collect places a digit twice"]),
    *_rules("TRF", 7, "pipeline.md 8.2", [
        "illegal lane count", "TRF capacity exceeded", "lane count does not divide time",
        "lane is not the outer time", "element is not (inner time, packet)",
        "dtype cannot be stored in the TRF", "element given without lane"]),
    *_rules("OUTER", 11, "pipeline.md 9.1", [
        "not a MAC operand pair", "illegal lane count", "outer packet not 32 or 64 bytes",
        "inner flit is not the stream packet", "packed time factor mismatch",
        "out_time size not a multiple of the stream time", "out_time reorders the stream time",
        "TRF data spread over the packet", "TRF element not walked by time",
        "contraction places a digit twice", "TRF read walk exceeds the sequencer"]),
    *_rules("PACKET", 4, "pipeline.md 9.2", [
        "reduce input not 32 or 64 bytes", "more than 32 output columns",
        "output columns not a power of two", "output packet is not a reduction of the input"]),
    *_rules("TIME", 4, "pipeline.md 9.3", [
        "out_time is not part of the time", "kept time factors reordered",
        "padding or broadcast of its own in out_time", "padded kept factor changes extent"]),
    *_rules("LANE", 6, "pipeline.md 9.4", [
        "more than 32 accumulator columns", "lane fold output is not 8 values",
        "lane fold packet does not match the mode", "lane fold time does not end in the fold",
        "lane fold time does not start with the time", "accumulator capacity exceeded"]),
    *_rules("CAST", 4, "pipeline.md 10.1", [
        "not a Cast Engine pair", "cast input is not one flit", "cast output is not one flit",
        "cast packet is not the padded input"]),
    *_rules("TRIM", 2, "pipeline.md 10.2", ["commit width not 8/16/24/32 bytes",
                                          "trim is not a prefix of the packet"]),
    *_rules("CCAST", 2, "pipeline.md 10.3", ["not a commit conversion", "commit conversion width"]),
    *_rules("COMMIT", 7, "pipeline.md 10.4", [
        "commit width not 8/16/24/32 bytes", "commit cannot be placed", "commit does not write every cell once",
        "too many commit entries", "commit loop too long", "commit stride not 8-byte aligned",
        "commit places a digit twice"]),
    *[CodeInfo(f"MAP-{c}", f"mapping error: {c.replace('_', ' ')}", "mapping", "mapping.md 4")
      for c in MAPPING_CATEGORIES if c != "overshoot"],
    CodeInfo("USAGE", "bad invocation or input file", "cli", "api.md 4"),
]

CODES: dict[str, CodeInfo] = {e.code: e for e in _ENTRIES}


def code_info(code: str) -> CodeInfo | None:
    """Index entry of a code (case-insensitive), or None."""
    return CODES.get(code.upper() if not code.upper().startswith("MAP-") else "MAP-" + code[4:])
