"""How the Cast and Commit rules render a mapping (`m("...")`) and a packet's byte count."""

from __future__ import annotations

from ir.dtypes import DType
from ir.mapping.nodes import Mapping
from ir.rules.contract_text import raw

__all__ = ["m_text", "bytes_text"]


def m_text(mp: Mapping) -> str:
    """`m("...")` text of a mapping, without the outer brackets of a pair."""
    return f'm("{raw(mp)}")'


def bytes_text(n: int, d: DType) -> str:
    return f"{n} x {d} = {n * d.bits / 8:g} bytes"

