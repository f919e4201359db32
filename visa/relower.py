"""Re-derive a parsed record's derived fields from its types.

`npu-opt visa --verify` (visa/visa.lark) must refuse a record whose fields disagree with its
types. A program record declares its derived fields itself (`TuOp.derived` in `tu_ops`, from
`ir.rules`: read plans, collect plans, TRF and contraction geometry, time reductions, write
plans, transpose parameters), the lowering fills the record with the same declaration, and
this module compares a parsed record with it, so a fault in the lowering cannot hide behind
its own re-run. A Vector Engine pass (`vector`, `vector_pair`, `vector_branch` and their `_rf`
forms) declares its derived fields the same way: each reduce step's `vcg=` and each VRF
tensor's `rf_read` walk, from its types and its steps. The DMA kinds are re-derived by their
builders (`dma_record` and the view, gather, SPM and redistribute builders).
`first_difference` names the first field (as a dotted path into the record) where a parsed
record and its re-derivation differ.

What the types do not carry is taken from the record itself, as the user's choice it is:
the feed's conversions, lifts, mask axis and switch, the lane fold's mode (the time
reducer's mode is the program's lane fold's), the commit conversion and the trim (`commit_trim`
keeps the packet's first `valid_bytes` worth of cells, TRIM-2). Allocation results are not
re-derived here (the verifier checks them against the allocation rules): a DMA's DM-side
bases are offset by the allocation facts of `visa.facts.with_facts`, as the allocation pass
offsets them; a `trf_load`'s `base_row`, a `vrf_load`'s `base` and a `commit`'s `dest` are
skipped.
"""

from __future__ import annotations

from typing import Any, Callable, Iterable

import attrs

from ir.mapping.nodes import Mapping
from tu_ops.base import Derivation
from tu_ops.dma import moved
from tu_ops.dma_commands import dma_record
from tu_ops.dma_records import view_record
from tu_ops.printing import mapping_text
__all__ = ["Underivable", "built", "expected_dma", "expected_program", "first_difference", "placed", "SKIPPED"]


class Underivable(Exception):
    """The record's types fix no record (`op` is the record)."""

    def __init__(self, op: Any, detail: str) -> None:
        super().__init__(detail)
        self.op = op
        self.detail = detail

# Fields filled by the allocation pass and checked against the allocation rules instead.
SKIPPED: dict[str, frozenset[str]] = {"trf_load": frozenset({"base_row"}), "commit": frozenset({"dest"}),
                                      "vrf_load": frozenset({"base"})}


# --- DMA ---------------------------------------------------------------------------------------

def expected_dma(op: Any, target: Any) -> Any:
    """The DmaOp `op`'s types fix (`tu_ops.dma_commands.dma_record`), its DM-side bases offset by the
    allocations `op` carries (`src_alloc` / `dst_alloc`, from `with_facts`)."""
    src_t, dst_t = op.input_type, op.output_type
    src_off, dst_off = _offset(src_t, op.src_alloc), _offset(dst_t, op.dst_alloc)
    try:
        if hasattr(op, "view_types"):  # dma_window / dma_into: the lowering's view builder
            return view_record(op, target, (src_off, dst_off))
        low = dma_record(op.result, op.src, src_t, dst_t, target, op.loc)
    except Exception as e:  # noqa: BLE001 - any failure of the derivation means: not derivable
        raise Underivable(op, _reason(e)) from None
    return placed(op, low, src_off, dst_off)


def built(op: Any, build: Callable[[], Any], traced: Any = None) -> Any:
    """`build()` (an indexed DMA's record builder), once `traced`'s trace rules accept the
    traced op rebuilt from `op`'s types; Underivable otherwise."""
    found = None if traced is None else traced.check()
    if found is not None:
        raise Underivable(op, f"[{found.code}] {found.message}")
    try:
        return build()
    except Exception as e:  # noqa: BLE001 - any failure of the builder means: not derivable
        raise Underivable(op, str(e).splitlines()[0] if str(e) else type(e).__name__) from None


def placed(op: Any, low: Any, src: int = 0, dst: int = 0) -> Any:
    """A re-derived DMA record `low` at the allocations: its commands' DM-side bases moved by
    `src` / `dst`, and the allocation facts `op` carries."""
    return attrs.evolve(low, commands=moved(low.commands, src, dst), aggregate=None, src_alloc=op.src_alloc,
                        dst_alloc=op.dst_alloc)


def _offset(t: Any, alloc: Any) -> int:
    """The allocation base the allocation pass adds to a DM side's addresses (0 for HBM)."""
    if getattr(t, "kind", None) != "dm" or alloc is None:
        return 0
    return alloc.base


# --- TU programs ------------------------------------------------------------------------------

def expected_program(program: Any, types: dict[int, Any], target: Any) -> list[tuple[Any, Any]]:
    """(record, re-derived record) for every record of `program`, in order. `types` maps a
    value id to its type (parameters and every record's result)."""
    ops = tuple(program.ops)
    if not ops or ops[0].MNEMONIC != "feed_buffer":
        raise Underivable(ops[0] if ops else None, "a program starts with its feed_buffer")
    out = []
    for i, rec in enumerate(ops):
        try:
            low = rec.derived(Derivation(ops, i, types, program.context, target))
            if low is None:
                raise Underivable(rec, f"a `{rec.MNEMONIC}` record has no place in a TU program")
        except Underivable:
            raise
        except Exception as e:  # noqa: BLE001 - any failure of the derivation means: not derivable
            raise Underivable(rec, _reason(e)) from None
        out.append((rec, low))
    return out


def _reason(e: Exception) -> str:
    return getattr(e, "detail", None) or str(e) or type(e).__name__


# --- comparison -------------------------------------------------------------------------------

def first_difference(found: Any, expected: Any) -> tuple[str, Any, Any] | None:
    """(field path, found value, expected value) of the first printed field where two records
    of one op differ, or None. Mappings compare by their text (visa/visa.lark rule 5); the
    allocation fields of `SKIPPED` are not compared."""
    skip = SKIPPED.get(found.MNEMONIC, frozenset())
    return _first_diff((name, a, b) for (name, a), (_, b) in zip(found.fields(), expected.fields())
                       if name not in skip)


def _struct(v: Any) -> bool:
    return attrs.has(type(v)) and getattr(type(v), "TEXT_STYLE", None) in ("struct", "tuple")


def _first_diff(items: Iterable[tuple[str, Any, Any]]) -> tuple[str, Any, Any] | None:
    """The first difference among `(path, found, expected)` items, in order (the rest unread):
    a record's fields, a struct's fields or a list's items."""
    return next((diff for diff in (_diff(*item) for item in items) if diff is not None), None)


def _diff(path: str, a: Any, b: Any) -> tuple[str, Any, Any] | None:
    if isinstance(a, Mapping) or isinstance(b, Mapping):
        same = isinstance(a, Mapping) and isinstance(b, Mapping) and mapping_text(a) == mapping_text(b)
        return None if same else (path, a, b)
    if _struct(a) and type(a) is type(b):
        return _first_diff((f"{path}.{f.name}", getattr(a, f.name), getattr(b, f.name)) for f in attrs.fields(type(a)))
    if (isinstance(a, (tuple, list)) and isinstance(b, (tuple, list)) and len(a) == len(b)
            and any(_struct(x) for x in a)):
        return _first_diff((f"{path}[{k}]", x, y) for k, (x, y) in enumerate(zip(a, b)))
    if isinstance(a, (tuple, list)) and isinstance(b, (tuple, list)):
        return None if tuple(a) == tuple(b) else (path, a, b)
    return None if a == b else (path, a, b)
