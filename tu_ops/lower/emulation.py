"""Target dtype support at lowering time: DTYPE-EMU, W-DTYPE-EMU and compat mode
(docs/numerics.md, tu_ops/targets/rngd.toml, docs/reference/cli.md).

The trace checks pairs against the built-in tables; the target decides which are native.
A pair the target lists with `native = false` is supported only through a declared
emulation path (VISA 1: an 8-bit float Multiplier operand decoded by a table lookup to
the other 8-bit float). In compat mode the pass inserts `fetch_table_lookup(to)` right
after the `fetch` of each operand's feed and warns W-DTYPE-EMU; a feed in `ctx.sub` or
one that already has a lookup, `compat=False`, or a pair without a path is refused with
DTYPE-EMU, whose help shows the explicit stage the author can write. A pair the target
does not list at all is refused with the stage's own rule (OUTER-1, CAST-1, ...).
"""

from __future__ import annotations

from typing import Any

import attrs

from ir import ops as ir
from ir.diagnostic import Diagnostic
from ir.dtypes import TABLE_LOOKUPS, DType
from ir.kernel import Kernel
from tu_ops.lower.errors import LoweringRefusal, refusal
from tu_ops.lower.program import ProgramChain, chains_of

__all__ = ["emulate_dtypes"]

_RETYPED = (ir.FetchTableLookup, ir.FetchCast, ir.FetchZeroPointSub, ir.Collect, ir.ToTrf,
            ir.ContractOuter, ir.ContractPacket, ir.ContractTime)


def _pair_check(op: ir.Op, target: Any) -> tuple[str, Any, str] | None:
    """(rule, target entry or None, pair text) of a stage that uses a target table."""
    src = op.input.type.dtype if hasattr(op, "input") else None
    if isinstance(op, ir.FetchTableLookup):
        return "FLUT-1", target.table_lookup(src, op.dtype), f"fetch_table_lookup {src} -> {op.dtype}"
    if isinstance(op, ir.FetchCast) and op.dtype != src:
        return "FCAST-1", target.fetch_cast_entry(src, op.dtype), f"fetch_cast {src} -> {op.dtype}"
    if isinstance(op, ir.FetchZeroPointSub):
        return "FZPS-1", target.zero_point_entry(src, op.dtype), f"fetch_zero_point_sub {src} -> {op.dtype}"
    if isinstance(op, ir.Cast):
        return "CAST-1", target.cast_entry(src, op.dtype), f"cast {src} -> {op.dtype}"
    if isinstance(op, ir.CommitCast):
        return "CCAST-1", target.commit_cast_entry(src, op.dtype), f"commit_cast {src} -> {op.dtype}"
    if isinstance(op, ir.ContractOuter):
        w = op.trf.type.dtype
        return "OUTER-1", target.mac_entry(src, w), f"{src} x {w} Multiplier pair"
    return None


def _mac_help(s: DType, w: DType, target: Any) -> str:
    """The explicit stage an author can write for a Multiplier pair the target lacks."""
    lookups = {e.dst for e in target.fetch_table_lookup if e.native and e.src in (s, w)}
    for x in sorted(lookups & {b for _, b in TABLE_LOOKUPS}, key=str):
        mac = target.mac_entry(x, x)
        if mac is not None and mac.native and all(d == x or _lookup_ok(target, d, x) for d in (s, w)):
            return (f"decode the operands explicitly: `.fetch_table_lookup({x})` right after each operand's "
                    f"`fetch` (main context); it changes the packet bytes, so rewrite the mappings that follow")
    return (f"target `{target.name}` has no native Multiplier pair reachable from {s} x {w} by a fetch "
            f"adapter stage; use a target that lists it natively, or store the operands in another dtype")


def _lookup_ok(target: Any, src: DType, dst: DType) -> bool:
    e = target.table_lookup(src, dst)
    return e is not None and e.native and (src, dst) in TABLE_LOOKUPS


def _pair_help(op: ir.Op, target: Any) -> str:
    if isinstance(op, ir.ContractOuter):
        return _mac_help(op.input.type.dtype, op.trf.type.dtype, target)
    return (f"target `{target.name}` declares no emulation path for this `{op.STAGE}`; "
            f"convert with another stage the target supports natively, or use a target that lists the pair")


@attrs.define
class _State:
    target: Any
    compat: bool
    chains: dict[int, ProgramChain]
    errors: list[Diagnostic] = attrs.field(factory=list)
    warnings: list[Diagnostic] = attrs.field(factory=list)
    inserts: dict[int, DType] = attrs.field(factory=dict)  # fetch value id -> lookup target
    retype: dict[int, tuple[DType, DType]] = attrs.field(factory=dict)  # op result id -> (from, to)


def _refuse(st: _State, op: ir.Op, code: str, message: str, help: str, label: str | None = None) -> None:
    st.errors.append(refusal(code, message, op.loc, stage=op.STAGE, op=op.text(), label=label, help=help))


def _chain_of(st: _State, value_id: int) -> ProgramChain | None:
    for chain in st.chains.values():
        if any(op.result is not None and op.result.id == value_id for op in chain.ops):
            return chain
    return None


def _emulate(st: _State, op: ir.ContractOuter, path: Any) -> None:
    """Plan the lookup insertion on both operand feeds of an emulated Multiplier pair."""
    feeds = [_chain_of(st, op.input.id), st.chains.get(op.trf.id)]
    for chain in feeds:
        if chain is None:
            continue
        why = None
        if chain.context == "sub":
            why = "its feed runs in ctx.sub, where no table lookup exists (CTX-3)"
        elif chain.first(ir.FetchTableLookup) is not None:
            why = "its feed already has a table lookup"
        if why is not None:
            _refuse(st, op, "DTYPE-EMU",
                    f"the {op.input.type.dtype} x {op.trf.type.dtype} Multiplier pair is not native on target "
                    f"`{st.target.name}` and cannot be emulated here: {why}",
                    _mac_help(op.input.type.dtype, op.trf.type.dtype, st.target),
                    label=f"emulation path: fetch_table_lookup({path.to}) on each operand's feed")
            return
    for chain in feeds:
        if chain is None or chain.fetch.result.id in st.inserts:
            continue
        src = chain.fetch.result.type.dtype
        st.inserts[chain.fetch.result.id] = path.to
        for x in chain.ops[2:]:
            if isinstance(x, _RETYPED):
                st.retype[x.result.id] = (src, path.to)
        st.warnings.append(refusal(
            "W-DTYPE-EMU", f"compat mode inserted `fetch_table_lookup({path.to})` after this fetch: target "
                           f"`{st.target.name}` has no native {op.input.type.dtype} x {op.trf.type.dtype} Multiplier",
            chain.fetch.loc, stage="fetch", op=chain.fetch.text(),
            label=f"{src} is decoded to {path.to} here (the lookup may round or saturate)",
            help=f"this is target `{st.target.name}`'s declared emulation path; compile with --no-compat "
                 "to refuse it instead"))


def _check(st: _State, op: ir.Op) -> None:
    found = _pair_check(op, st.target)
    if found is None:
        return
    rule, entry, text = found
    if entry is None:
        _refuse(st, op, rule, f"target `{st.target.name}` does not support the {text}",
                f"use a stage the target lists in its `dtypes` tables")
        return
    if isinstance(op, ir.FetchZeroPointSub) and not entry.min <= op.zero_point <= entry.max:
        _refuse(st, op, "FZPS-2", f"zero point {op.zero_point} is outside [{entry.min}, {entry.max}] on target "
                                  f"`{st.target.name}`", "pass a zero point in the source range")
        return
    if entry.native:
        return
    path = st.target.emulation_for(op.input.type.dtype, op.trf.type.dtype) \
        if isinstance(op, ir.ContractOuter) else None
    if path is None:
        _refuse(st, op, "DTYPE-EMU", f"the {text} is not native on target `{st.target.name}` and has no "
                                     "emulation path", _pair_help(op, st.target))
    elif not st.compat:
        _refuse(st, op, "DTYPE-EMU", f"the {text} is not native on target `{st.target.name}`; compat mode is off, "
                                     "so its emulation path is refused",
                f"compile without --no-compat to let npu-opt insert `fetch_table_lookup({path.to})` after "
                f"each operand's fetch; or {_mac_help(op.input.type.dtype, op.trf.type.dtype, st.target)[0].lower()}"
                f"{_mac_help(op.input.type.dtype, op.trf.type.dtype, st.target)[1:]}")
    else:
        _emulate(st, op, path)


def emulate_dtypes(kernel: Kernel, target: Any, compat: bool) -> tuple[Kernel, tuple[Diagnostic, ...]]:
    """Check every stage's dtype pair against `target`; return the kernel with the compat
    lookups inserted and the W-DTYPE-EMU warnings. Refusals raise LoweringRefusal."""
    st = _State(target, compat, chains_of(kernel))
    for op in kernel.ops:
        _check(st, op)
    if st.errors:
        raise LoweringRefusal(st.errors + st.warnings)
    if not st.inserts:
        return kernel, tuple(st.warnings)
    return _rewrite(kernel, st), tuple(st.warnings)


def _retype(t: Any, pair: tuple[DType, DType]) -> Any:
    return attrs.evolve(t, dtype=pair[1]) if t.dtype == pair[0] else t


def _rewrite(kernel: Kernel, st: _State) -> Kernel:
    """Insert the planned lookups and carry the new dtype down each emulated chain."""
    values: dict[int, ir.Value] = {}
    next_id = 1 + max(op.result.id for op in kernel.ops if op.result is not None)
    out: list[ir.Op] = []
    for op in kernel.ops:
        changes: dict[str, Any] = {}
        for f in attrs.fields(type(op)):
            if f.metadata.get("role") != "operand":
                continue
            v = getattr(op, f.name)
            changes[f.name] = tuple(values.get(x.id, x) for x in v) if isinstance(v, tuple) else values.get(v.id, v)
        if op.result is not None and op.result.id in st.retype:
            pair = st.retype[op.result.id]
            changes["result"] = ir.Value(op.result.id, _retype(op.result.type, pair))
            if isinstance(op, ir.FetchCast) and op.dtype == pair[0]:
                changes["dtype"] = pair[1]
        new = attrs.evolve(op, **changes)
        if new.result is not None:
            values[op.result.id] = new.result
        out.append(new)
        to = st.inserts.get(op.result.id) if op.result is not None else None
        if to is not None:
            lookup = ir.FetchTableLookup(input=new.result, dtype=to, loc=op.loc,
                                         result=ir.Value(next_id, attrs.evolve(new.result.type, dtype=to)))
            next_id += 1
            values[op.result.id] = lookup.result
            out.append(lookup)
    return attrs.evolve(kernel, ops=tuple(out))
