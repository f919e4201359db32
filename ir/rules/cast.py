"""Cast Engine and commit conversion rules (docs/machine/cast.md): CAST-1..4, TRIM-1..2, CTX-4, CCAST-1..2."""

from __future__ import annotations

import attrs

from ir.diagnostic import Violation
from ir.dtypes import CAST_ENGINE, COMMIT_CASTS, DType
from ir.errors import MappingError
from ir.mapping import levels
from ir.mapping.nodes import Mapping, Pad, Resize
from ir.rules.commit_plan import COMMIT_WIDTHS
from ir.rules.commit_text import bytes_text, m_text
from ir.rules.space import predicate
from ir.types import MAIN
from ir.words import a_an

__all__ = ["check_cast", "check_trim", "check_commit_cast"]


# --- cast --------------------------------------------------------------------------------


def _cast_targets(d: DType) -> str:
    targets = sorted(str(b) for a, b in CAST_ENGINE if a == d)
    return ", ".join(targets) if targets else "nothing"


def check_cast(op) -> Violation | None:
    """CAST-1..4 (docs/machine/cast.md)."""
    try:
        return _check_cast(op)
    except MappingError as e:  # only the equivalence of CAST-4 needs factor forms
        return Violation("CAST-4", f"the cast packet cannot be compared with the input packet: {e.detail}")


def _check_cast(op) -> Violation | None:
    t = op.input.type
    d, d2, p, out = t.dtype, op.dtype, t.packet, op.packet
    if (d, d2) not in CAST_ENGINE:
        what = "an identity" if d == d2 else f"{d} -> {d2}"
        return Violation("CAST-1", f"the Cast Engine has no {what} conversion",
                         label=f"{d} narrows only to {_cast_targets(d)}",
                         help=f"cast {d} to one of {_cast_targets(d)}, or commit the {d} result as it is "
                              f"(drop the `.cast(...)`)")
    found = predicate(levels.pkt_flit(p, d.bits), "CAST-2")
    if found is not None:
        return attrs.evolve(found, message="the Cast Engine takes exactly one 32-byte flit per time step",
                            label=f"input packet {m_text(p)} is {bytes_text(p.size, d)}")
    found = predicate(levels.pkt_flit(out, d2.bits), "CAST-3")
    if found is not None:
        want = 32 * 8 // d2.bits
        return attrs.evolve(found, message="the Cast Engine writes exactly one 32-byte flit per time step",
                            label=f"packet {m_text(out)} is {bytes_text(out.size, d2)}",
                            help=f"use {m_text(Pad(p, want))}" if want >= p.size else None)
    want = d2.flit_elems
    try:
        expected = Pad(p, want)
    except MappingError:
        expected = None
    if expected is None or not out.equivalent(expected):
        shown = m_text(expected) if expected is not None else f"{p} padded to {want} cells"
        return Violation("CAST-4", "the cast packet must be the input packet padded to one flit",
                         label=f"expected {shown}, got {m_text(out)}",
                         help=f"use {shown}: the live cells keep their positions, the tail is padding")
    return None


# --- commit_trim -------------------------------------------------------------------------


def check_trim(op) -> Violation | None:
    """TRIM-1, TRIM-2 (docs/machine/commit.md)."""
    try:
        return _check_trim(op)
    except MappingError as e:  # only the equivalence of TRIM-2 needs factor forms
        return Violation("TRIM-2", f"the trimmed packet cannot be compared with the packet: {e.detail}")


def _check_trim(op) -> Violation | None:
    t = op.input.type
    d, p, out = t.dtype, t.packet, op.packet
    found = predicate(levels.pkt_commit(out, d.bits), "TRIM-1")
    if found is not None:
        return attrs.evolve(found, message=f"a committed packet is {', '.join(map(str, COMMIT_WIDTHS[:-1]))} "
                                           f"or {COMMIT_WIDTHS[-1]} bytes",
                            label=f"packet {m_text(out)} is {bytes_text(out.size, d)}",
                            help=_trim_help(out, d))
    if out.size > p.size:
        return Violation("TRIM-2", "commit_trim keeps a prefix of the packet; it cannot grow it",
                         label=f"{m_text(out)} has {out.size} cells, the packet {m_text(p)} only {p.size}")
    prefix = Resize(p, out.size)
    if not out.equivalent(prefix):
        return Violation("TRIM-2", "commit_trim keeps the leading cells of the packet",
                         label=f"{m_text(out)} is not the first {out.size} cells of the packet {m_text(p)}",
                         help=f"use {m_text(prefix.normalize())}")
    return None


def _trim_help(out: Mapping, d: DType) -> str:
    for width in COMMIT_WIDTHS:
        n = width * 8 // d.bits
        if n >= out.size:
            return (f"trim to a multiple of 8 bytes, e.g. {m_text(Pad(out, n))} ({bytes_text(n, d)}), "
                    f"and commit into an element with the same padding")
    return f"keep at most {COMMIT_WIDTHS[-1] * 8 // d.bits} x {d} per packet"


# --- commit_cast / commit_cast_relu ------------------------------------------------------


def check_commit_cast(op) -> Violation | None:
    """CTX-4, CCAST-1, CCAST-2 (docs/machine/commit-adapter.md)."""
    t = op.input.type
    name = "commit_cast_relu" if op.relu else "commit_cast"
    if t.context != MAIN:
        return Violation("CTX-4", f"`{name}` requires a main-context stream",
                         label=f"this stream runs in ctx.{t.context}",
                         help=f"start the stream with ctx.main.begin(...), or convert with `.cast(bf16, packet)` "
                              f"before `commit_trim`")
    if (t.dtype, op.dtype) not in COMMIT_CASTS:
        return Violation("CCAST-1", f"the Commit Adapter converts only f32 -> bf16, not {t.dtype} -> {op.dtype}",
                         label=f"`{name}({op.dtype})` on {a_an(t.dtype)} stream",
                         help="use the Cast Engine (`.cast(dtype, packet)` before `commit_trim`) for other "
                              "narrowings")
    n = t.packet.size
    if (n * 4) % 16:  # bytes(P, f32) a multiple of COMMIT_BASE * 32 / 16
        example = f" (e.g. {m_text(Pad(t.packet, 4 if n <= 4 else 8))})" if n < 8 else ""
        return Violation("CCAST-2", f"`{name}` needs 16 or 32 bytes of f32 per packet",
                         label=f"packet {m_text(t.packet)} is {bytes_text(n, t.dtype)}",
                         help=f"trim to 4 or 8 x f32{example}")
    return None
