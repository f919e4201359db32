"""Traced IR ops: one frozen attrs record per stage call.

Each op is one declaration: its fields (roles from `ir.op_frame`), the rule checkers it
runs (`RULES`, functions of `ir/rules/`, in the order they apply) and `infer_type`, the
type of its result computed from its operands and attributes (`RETYPED` names the fields
an op sets on its input's type, the common case; its `out_time` sets the time). Ops whose result type is declared by the
user (a parameter, a DMA destination) take the result as given.
"""

from __future__ import annotations

from typing import Any, ClassVar

import attrs

from ir.declare import Table
from ir.diagnostic import Violation
from ir.errors import MappingError
from ir.dtypes import DType, accumulator
from ir.location import Location
from ir.mapping.nodes import IDENTITY, Mapping
from ir.verdicts import remembered_verdict
from ir.op_frame import OpFrame, attr, fact, loc_field, operand, result_field
from ir.rules.collect import check_collect, check_to_trf
from ir.rules.cast import check_cast, check_commit_cast, check_trim
from ir.rules.commit import check_commit
from ir.rules.contract_outer import check_outer
from ir.rules.contract_reducers import check_lane, check_packet, check_time
from ir.rules.dma import check_tensor_dma
from ir.rules.fetch import check_begin, check_fetch, check_fetch_cast, check_table_lookup, check_zero_point_sub
from ir.types import CStreamType, DmType, LaneMode, StreamType, TrfType, Type

__all__ = [
    "LaneMode", "Value", "Op", "InputOp", "Param", "ToDm", "ToHbm", "View", "Begin", "Fetch",
    "FetchTableLookup", "FetchCast", "FetchZeroPointSub", "Collect", "ToTrf", "ContractOuter",
    "ContractPacket", "ContractTime", "ContractLane", "Cast", "CommitTrim", "CommitCast",
    "Commit", "Return", "Final", "OP_CLASSES",
]


_DECLARED = Table("traced op class")  # its word in IR text -> the op class


@attrs.frozen
class Value:
    """An SSA value: a number and its type."""

    id: int
    type: Type

    def __str__(self) -> str:
        return f"%{self.id}"


@attrs.frozen(kw_only=True)
class Op(OpFrame):
    """Base of every traced op. `loc` is excluded from equality; `NAME` is `ir.<STAGE>`."""

    NAME: ClassVar[str] = "ir.op"
    STAGE: ClassVar[str] = ""
    TEXT: ClassVar[str] = ""  # its word in IR text when it is not the stage (two ops share a stage)
    TEXT_PREFIX: ClassVar[str] = ""  # a family of ops sharing the plain ops' stages prints as <prefix><stage>
    SAME_TYPE_AS: ClassVar[str] = ""  # the result has the type of this operand (`src`: a view of it)
    FEED: ClassVar[bool] = False  # the op sits in a feed, between `begin` and `collect`: the feed lowering
    # (tu_ops.lower.feed) reads it into the FeedBuffer, and nothing else may stand there
    RETYPED: ClassVar[tuple[str, ...]] = ()  # the result is the input's type with these fields the op's own
    # (a field `out_x` of the op stands for the type's `x`: `out_time` is the result's time)
    result: Value | None = result_field(default=None)
    loc: Location | None = loc_field()

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        cls.NAME = f"ir.{cls.STAGE}"
        if cls.TEXT_PREFIX and "STAGE" in vars(cls):
            cls.TEXT = cls.TEXT_PREFIX + cls.STAGE
        word = cls.TEXT or cls.STAGE
        if not word:  # a base class of several ops names no stage
            return
        old = _DECLARED.get(word)
        if old is not None and old.__qualname__ != cls.__qualname__:
            raise TypeError(f"{cls.__qualname__} and {old.__qualname__} both print as `{word}`: give one a TEXT")
        _DECLARED[word] = cls  # attrs remakes the class; the final one stays

    @classmethod
    def build(cls, new_value: Any, **fields: Any) -> Op:
        """The op of `fields` with a fresh result `new_value(type)` of its inferred type."""
        draft = cls(**fields)
        return attrs.evolve(draft, result=new_value(draft.infer_type()))

    def infer_type(self) -> Type:
        """The result type, from the operands and attributes (ops with inferable results)."""
        if self.SAME_TYPE_AS:
            return getattr(self, self.SAME_TYPE_AS).type
        raise TypeError(f"{self.NAME} takes its result type as given")

    def check(self) -> Violation | None:
        """The first [T] rule this op breaks, or None; remembered by the op's fields (ir/verdicts.py)."""
        return remembered_verdict(self, Value, self._first_violation) if self.RULES else None

    def _first_violation(self) -> Violation | None:
        for check in self.RULES:
            try:
                found = check(self)
            except MappingError as e:  # a layout the rule cannot analyse: that rule's refusal, at the op
                code = getattr(check, "rule_code", None)
                if code is None:
                    raise
                stage = getattr(self, "STAGE", self.NAME)
                return Violation(code, f"`{stage}` cannot read this layout: {e.detail.splitlines()[0]}",
                                 notes=(f"{e.code}: the rule works on the mappings' factor forms",))
            if found is not None:
                return found
        return None

    def text(self) -> str:
        """One-line printed form: `%5 = collect %4 time=(...) packet=(...) : stream<...>`."""
        head = f"{self.result} = " if self.result is not None else ""
        ops = ", ".join(str(v) for v in self.operands())
        attrs_text = " ".join(f"{k}={_attr_text(v)}" for k, v in self.attributes())
        body = " ".join(x for x in (self.TEXT or self.STAGE or self.NAME, ops, attrs_text) if x)
        tail = f" : {self.result.type}" if self.result is not None else ""
        return head + body + tail


@attrs.frozen(kw_only=True)
class InputOp(Op):
    """Base of the ops that work on one input value, `input` (a stream, or a register-file
    tensor), its first operand; with `RETYPED`, the result is its type with those fields the
    op's own (`out_time` names the result's time)."""

    input: Value = operand()

    def infer_type(self) -> Type:
        if self.RETYPED:
            return attrs.evolve(self.input.type, **{f.removeprefix("out_"): getattr(self, f) for f in self.RETYPED})
        return super().infer_type()


def _attr_text(v: Any) -> str:
    if isinstance(v, Mapping):
        return f'm"{v}"'
    if isinstance(v, str):
        return repr(v)
    return str(v)


@attrs.frozen(kw_only=True)
class Param(Op):
    """A kernel parameter living in HBM: `%0 = param "a" 0 : hbm<...>`."""

    STAGE = "param"
    name: str = attr()
    index: int = attr()
    mutable: bool = fact(False)  # an in-out parameter (`Mut[...]`, `HbmTensorViewMut[...]`)


@attrs.frozen(kw_only=True)
class ToDm(Op):
    """Tensor DMA into DM (from HBM or DM): `%3 = to_dm %0 : dm<...>`."""

    STAGE = "to_dm"
    RULES = (check_tensor_dma,)
    src: Value = operand()


@attrs.frozen(kw_only=True)
class ToHbm(Op):
    """Tensor DMA into HBM (from DM or HBM): `%9 = to_hbm %8 : hbm<...>`."""

    STAGE = "to_hbm"
    RULES = (check_tensor_dma,)
    src: Value = operand()
    inferred: bool = fact(False)


@attrs.frozen(kw_only=True)
class View(Op):
    """A read view of a DM tensor: the identity on data and type."""

    STAGE = "view"
    SAME_TYPE_AS = "src"
    src: Value = operand()


@attrs.frozen(kw_only=True)
class Begin(Op):
    """Start a Tensor Unit stream over a DM view in `ctx.main` or `ctx.sub`."""

    STAGE = "begin"
    FEED = True
    RULES = (check_begin,)
    view: Value = operand()
    context: str = attr()

    def infer_type(self) -> Type:
        t = self.view.type
        return StreamType(t.dtype, t.chip, t.cluster, t.slice, IDENTITY, t.element, self.context)


@attrs.frozen(kw_only=True)
class Fetch(InputOp):
    """Fetch Engine: read DM into (time, packet)."""

    STAGE = "fetch"
    FEED = True
    RULES = (check_fetch,)
    RETYPED = ("time", "packet")
    time: Mapping = attr()
    packet: Mapping = attr()


@attrs.frozen(kw_only=True)
class FetchTableLookup(InputOp):
    """Fetch Adapter table lookup to `dtype` (main context only)."""

    STAGE = "fetch_table_lookup"
    FEED = True
    RULES = (check_table_lookup,)
    RETYPED = ("dtype",)
    dtype: DType = attr()


@attrs.frozen(kw_only=True)
class FetchCast(InputOp):
    """Fetch Adapter type cast to `dtype` (identity allowed)."""

    STAGE = "fetch_cast"
    FEED = True
    RULES = (check_fetch_cast,)
    RETYPED = ("dtype",)
    dtype: DType = attr()


@attrs.frozen(kw_only=True)
class FetchZeroPointSub(InputOp):
    """Fetch Adapter zero-point subtraction to i5/i9."""

    STAGE = "fetch_zero_point_sub"
    FEED = True
    RULES = (check_zero_point_sub,)
    RETYPED = ("dtype",)
    dtype: DType = attr()
    zero_point: int = attr()


@attrs.frozen(kw_only=True)
class Collect(InputOp):
    """Collect Engine: pad the packet to whole flits, move flits into time."""

    STAGE = "collect"
    RULES = (check_collect,)
    RETYPED = ("time", "packet")
    time: Mapping = attr()
    packet: Mapping = attr()


@attrs.frozen(kw_only=True)
class ToTrf(InputOp):
    """Store a collected stream into the TRF as (lane, element)."""

    STAGE = "to_trf"
    RULES = (check_to_trf,)
    lane: Mapping = attr()
    element: Mapping = attr()
    inferred_lane: bool = fact(False)
    inferred_element: bool = fact(False)

    def infer_type(self) -> Type:
        t = self.input.type
        return TrfType(t.dtype, t.chip, t.cluster, t.slice, self.lane, self.element)


@attrs.frozen(kw_only=True)
class ContractOuter(InputOp):
    """Contraction Engine outer product of the stream and a TRF tensor."""

    STAGE = "contract_outer"
    RULES = (check_outer,)
    trf: Value = operand()
    time: Mapping = attr()
    packet: Mapping = attr()

    def infer_type(self) -> Type:
        t = self.input.type
        return CStreamType(accumulator(t.dtype), t.dtype, t.chip, t.cluster, t.slice, self.trf.type.lane,
                           self.time, self.packet, None, t.context)


@attrs.frozen(kw_only=True)
class ContractPacket(InputOp):
    """Packet Reducer: adjacent-pair tree inside the packet."""

    STAGE = "contract_packet"
    RULES = (check_packet,)
    RETYPED = ("packet",)
    packet: Mapping = attr()


@attrs.frozen(kw_only=True)
class ContractTime(InputOp):
    """Time Reducer: accumulate reduced time factors."""

    STAGE = "contract_time"
    RULES = (check_time,)
    time: Mapping = attr()

    def infer_type(self) -> Type:
        return attrs.evolve(self.input.type, time=self.time, pre_time=self.input.type.time)


@attrs.frozen(kw_only=True)
class ContractLane(InputOp):
    """Lane Folder: move Lane into the output stream."""

    STAGE = "contract_lane"
    RULES = (check_lane,)
    time: Mapping = attr()
    packet: Mapping = attr()
    mode: LaneMode = attr()

    def infer_type(self) -> Type:
        t = self.input.type
        return StreamType(t.acc, t.chip, t.cluster, t.slice, self.time, self.packet, t.context)


@attrs.frozen(kw_only=True)
class Cast(InputOp):
    """Cast Engine: narrow a 32-bit stream, re-pad the packet to a flit."""

    STAGE = "cast"
    RULES = (check_cast,)
    RETYPED = ("dtype", "packet")
    dtype: DType = attr()
    packet: Mapping = attr()


@attrs.frozen(kw_only=True)
class CommitTrim(InputOp):
    """Commit Adapter trim: keep the leading cells of each flit."""

    STAGE = "commit_trim"
    RULES = (check_trim,)
    RETYPED = ("packet",)
    packet: Mapping = attr()


@attrs.frozen(kw_only=True)
class CommitCast(InputOp):
    """Commit Adapter f32 -> bf16 conversion (optionally with ReLU)."""

    STAGE = "commit_cast"
    RULES = (check_commit_cast,)
    RETYPED = ("dtype",)
    dtype: DType = attr()
    relu: bool = attr(False)


@attrs.frozen(kw_only=True)
class Commit(InputOp):
    """Commit Engine: write the stream into a new DM tensor with layout `element`."""

    STAGE = "commit"
    RULES = (check_commit,)
    element: Mapping = attr()
    inferred: bool = fact(False)

    def infer_type(self) -> Type:
        t = self.input.type
        return DmType(t.dtype, t.chip, t.cluster, t.slice, self.element)


@attrs.frozen(kw_only=True)
class Return(Op):
    """The kernel's results."""

    STAGE = "return"
    values: tuple[Value, ...] = operand()


@attrs.frozen(kw_only=True)
class Final(Op):
    """The final contents of an in-out parameter: `%9 = final %1, %7 : hbm<...>` (the
    parameter, the value that holds them; the result is that value under the parameter's type).

    One per in-out parameter, in parameter order, just before `return`; `value` is the
    latest version of the tensor (the parameter itself when nothing wrote it)."""

    STAGE = "final"
    SAME_TYPE_AS = "param"
    param: Value = operand()
    value: Value = operand()


OP_CLASSES: tuple[type[Op], ...] = tuple(_DECLARED.values())  # this module's ops, in declaration order

