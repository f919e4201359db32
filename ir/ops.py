"""Traced IR ops: one frozen attrs record per stage call (docs/porting.md).

Fields carry metadata saying operand, attribute or result, so one generic printer and
walker serve every op. `check()` runs the op's [T] rules (in `ir/rules/`) in the order
docs/machine/index.md lists them and returns the first violation, or None.
"""

from __future__ import annotations

import enum
from typing import Any, ClassVar

import attrs

from ir.diagnostic import Violation
from ir.dtypes import DType
from ir.location import Location
from ir.mapping.nodes import Mapping
from ir.types import Type

__all__ = [
    "LaneMode", "Value", "Op", "Param", "ToDm", "ToHbm", "View", "Begin", "Fetch",
    "FetchTableLookup", "FetchCast", "FetchZeroPointSub", "Collect", "ToTrf", "ContractOuter",
    "ContractPacket", "ContractTime", "ContractLane", "Cast", "CommitTrim", "CommitCast",
    "Commit", "Return", "OP_CLASSES",
]


class LaneMode(enum.Enum):
    """How the Lane Folder drains the accumulator (docs/machine/contraction.md)."""

    INTERLEAVED = "interleaved"
    SEQUENTIAL = "sequential"

    def __str__(self) -> str:
        return self.value


@attrs.frozen
class Value:
    """An SSA value: a number and its type."""

    id: int
    type: Type

    def __str__(self) -> str:
        return f"%{self.id}"


def operand() -> Any:
    return attrs.field(metadata={"role": "operand"})


def attr(default: Any = attrs.NOTHING) -> Any:
    return attrs.field(default=default, metadata={"role": "attr"})


def fact(default: Any = False) -> Any:
    """A recorded fact about the call (e.g. an inferred argument): not printed, not compared."""
    return attrs.field(default=default, eq=False, metadata={"role": "fact"})


@attrs.frozen(kw_only=True)
class Op:
    """Base of every traced op. `loc` is excluded from equality."""

    NAME: ClassVar[str] = "ir.op"
    STAGE: ClassVar[str] = ""
    result: Value | None = attrs.field(default=None, metadata={"role": "result"})
    loc: Location | None = attrs.field(default=None, eq=False, repr=False, metadata={"role": "loc"})

    def operands(self) -> list[Value]:
        """Operand values, in field order (tuples flattened)."""
        out: list[Value] = []
        for f in attrs.fields(type(self)):
            if f.metadata.get("role") != "operand":
                continue
            v = getattr(self, f.name)
            out.extend(v if isinstance(v, tuple) else [v])
        return out

    def attributes(self) -> list[tuple[str, Any]]:
        """(name, value) of every attribute field, in field order."""
        return [(f.name, getattr(self, f.name)) for f in attrs.fields(type(self))
                if f.metadata.get("role") == "attr"]

    def check(self) -> Violation | None:
        """The first [T] rule this op breaks, or None."""
        return None

    def text(self) -> str:
        """One-line printed form: `%5 = collect %4 time=(...) packet=(...) : stream<...>`."""
        head = f"{self.result} = " if self.result is not None else ""
        ops = ", ".join(str(v) for v in self.operands())
        attrs_text = " ".join(f"{k}={_attr_text(v)}" for k, v in self.attributes())
        body = " ".join(x for x in (self.STAGE or self.NAME, ops, attrs_text) if x)
        tail = f" : {self.result.type}" if self.result is not None else ""
        return head + body + tail


def _attr_text(v: Any) -> str:
    if isinstance(v, Mapping):
        return f'm"{v}"'
    if isinstance(v, (DType, LaneMode)):
        return str(v)
    if isinstance(v, str):
        return repr(v)
    return str(v)


def _rules(module: str, name: str):
    """Late import of a rule checker so ir.rules can import ir.ops freely."""
    import importlib

    return getattr(importlib.import_module(f"ir.rules.{module}"), name)


@attrs.frozen(kw_only=True)
class Param(Op):
    """A kernel parameter living in HBM: `%0 = param "a" 0 : hbm<...>`."""

    NAME = "ir.param"
    STAGE = "param"
    name: str = attr()
    index: int = attr()


@attrs.frozen(kw_only=True)
class ToDm(Op):
    """Tensor DMA into DM (from HBM or DM): `%3 = to_dm %0 : dm<...>`."""

    NAME = "ir.to_dm"
    STAGE = "to_dm"
    src: Value = operand()

    def check(self) -> Violation | None:
        return _rules("dma", "check_dma")(self)


@attrs.frozen(kw_only=True)
class ToHbm(Op):
    """Tensor DMA into HBM (from DM or HBM): `%9 = to_hbm %8 : hbm<...>`."""

    NAME = "ir.to_hbm"
    STAGE = "to_hbm"
    src: Value = operand()
    inferred: bool = fact()

    def check(self) -> Violation | None:
        return _rules("dma", "check_dma")(self)


@attrs.frozen(kw_only=True)
class View(Op):
    """A read view of a DM tensor: the identity on data and type."""

    NAME = "ir.view"
    STAGE = "view"
    src: Value = operand()


@attrs.frozen(kw_only=True)
class Begin(Op):
    """Start a Tensor Unit stream over a DM view in `ctx.main` or `ctx.sub`."""

    NAME = "ir.begin"
    STAGE = "begin"
    view: Value = operand()
    context: str = attr()

    def check(self) -> Violation | None:
        return _rules("fetch", "check_begin")(self)


@attrs.frozen(kw_only=True)
class Fetch(Op):
    """Fetch Engine: read DM into (time, packet)."""

    NAME = "ir.fetch"
    STAGE = "fetch"
    input: Value = operand()
    time: Mapping = attr()
    packet: Mapping = attr()

    def check(self) -> Violation | None:
        return _rules("fetch", "check_fetch")(self)


@attrs.frozen(kw_only=True)
class FetchTableLookup(Op):
    """Fetch Adapter table lookup to `dtype` (main context only)."""

    NAME = "ir.fetch_table_lookup"
    STAGE = "fetch_table_lookup"
    input: Value = operand()
    dtype: DType = attr()

    def check(self) -> Violation | None:
        return _rules("fetch", "check_table_lookup")(self)


@attrs.frozen(kw_only=True)
class FetchCast(Op):
    """Fetch Adapter type cast to `dtype` (identity allowed)."""

    NAME = "ir.fetch_cast"
    STAGE = "fetch_cast"
    input: Value = operand()
    dtype: DType = attr()

    def check(self) -> Violation | None:
        return _rules("fetch", "check_fetch_cast")(self)


@attrs.frozen(kw_only=True)
class FetchZeroPointSub(Op):
    """Fetch Adapter zero-point subtraction to i5/i9."""

    NAME = "ir.fetch_zero_point_sub"
    STAGE = "fetch_zero_point_sub"
    input: Value = operand()
    dtype: DType = attr()
    zero_point: int = attr()

    def check(self) -> Violation | None:
        return _rules("fetch", "check_zero_point_sub")(self)


@attrs.frozen(kw_only=True)
class Collect(Op):
    """Collect Engine: pad the packet to whole flits, move flits into time."""

    NAME = "ir.collect"
    STAGE = "collect"
    input: Value = operand()
    time: Mapping = attr()
    packet: Mapping = attr()

    def check(self) -> Violation | None:
        return _rules("collect", "check_collect")(self)


@attrs.frozen(kw_only=True)
class ToTrf(Op):
    """Store a collected stream into the TRF as (lane, element)."""

    NAME = "ir.to_trf"
    STAGE = "to_trf"
    input: Value = operand()
    lane: Mapping = attr()
    element: Mapping = attr()
    inferred_lane: bool = fact()
    inferred_element: bool = fact()

    def check(self) -> Violation | None:
        return _rules("collect", "check_to_trf")(self)


@attrs.frozen(kw_only=True)
class ContractOuter(Op):
    """Contraction Engine outer product of the stream and a TRF tensor."""

    NAME = "ir.contract_outer"
    STAGE = "contract_outer"
    input: Value = operand()
    trf: Value = operand()
    time: Mapping = attr()
    packet: Mapping = attr()

    def check(self) -> Violation | None:
        return _rules("contract", "check_outer")(self)


@attrs.frozen(kw_only=True)
class ContractPacket(Op):
    """Packet Reducer: adjacent-pair tree inside the packet."""

    NAME = "ir.contract_packet"
    STAGE = "contract_packet"
    input: Value = operand()
    packet: Mapping = attr()

    def check(self) -> Violation | None:
        return _rules("contract", "check_packet")(self)


@attrs.frozen(kw_only=True)
class ContractTime(Op):
    """Time Reducer: accumulate reduced time factors."""

    NAME = "ir.contract_time"
    STAGE = "contract_time"
    input: Value = operand()
    time: Mapping = attr()

    def check(self) -> Violation | None:
        return _rules("contract", "check_time")(self)


@attrs.frozen(kw_only=True)
class ContractLane(Op):
    """Lane Folder: move Lane into the output stream."""

    NAME = "ir.contract_lane"
    STAGE = "contract_lane"
    input: Value = operand()
    time: Mapping = attr()
    packet: Mapping = attr()
    mode: LaneMode = attr()

    def check(self) -> Violation | None:
        return _rules("contract", "check_lane")(self)


@attrs.frozen(kw_only=True)
class Cast(Op):
    """Cast Engine: narrow a 32-bit stream, re-pad the packet to a flit."""

    NAME = "ir.cast"
    STAGE = "cast"
    input: Value = operand()
    dtype: DType = attr()
    packet: Mapping = attr()

    def check(self) -> Violation | None:
        return _rules("commit", "check_cast")(self)


@attrs.frozen(kw_only=True)
class CommitTrim(Op):
    """Commit Adapter trim: keep the leading cells of each flit."""

    NAME = "ir.commit_trim"
    STAGE = "commit_trim"
    input: Value = operand()
    packet: Mapping = attr()

    def check(self) -> Violation | None:
        return _rules("commit", "check_trim")(self)


@attrs.frozen(kw_only=True)
class CommitCast(Op):
    """Commit Adapter f32 -> bf16 conversion (optionally with ReLU)."""

    NAME = "ir.commit_cast"
    STAGE = "commit_cast"
    input: Value = operand()
    dtype: DType = attr()
    relu: bool = attr(False)

    def check(self) -> Violation | None:
        return _rules("commit", "check_commit_cast")(self)


@attrs.frozen(kw_only=True)
class Commit(Op):
    """Commit Engine: write the stream into a new DM tensor with layout `element`."""

    NAME = "ir.commit"
    STAGE = "commit"
    input: Value = operand()
    element: Mapping = attr()
    inferred: bool = fact()

    def check(self) -> Violation | None:
        return _rules("commit", "check_commit")(self)


@attrs.frozen(kw_only=True)
class Return(Op):
    """The kernel's results."""

    NAME = "ir.return"
    STAGE = "return"
    values: tuple[Value, ...] = operand()


OP_CLASSES: tuple[type[Op], ...] = (
    Param, ToDm, ToHbm, View, Begin, Fetch, FetchTableLookup, FetchCast, FetchZeroPointSub,
    Collect, ToTrf, ContractOuter, ContractPacket, ContractTime, ContractLane, Cast,
    CommitTrim, CommitCast, Commit, Return,
)
