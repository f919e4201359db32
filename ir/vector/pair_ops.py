"""Traced ops of the Vector Engine's pair mode (`ir.vector.pair` holds its semantics).

`vector_intra_slice_unzip(m("I"), split_time)` enters the chain with two groups;
the paired ops act on both (a constant per group, `None` skipping one; FMA_F's `(a, c)` pairs
are `ir.vector.pair_ternary_ops`); a `*_zip` op merges them into one stream, after which the ordinary chain ops of `ir.vector.ops` follow. Every
op here is folded into the one `vector_pair` record its `vector_init` lowers to; each
`pair_step()` is one step of that record: `(unit, op, side, arg0, arg1)` with side `BOTH`,
`G0` or `G1` for a paired op and `ZIP` for the merge (arg0 the `BinaryArgMode` index).
Rules: PAIR-UNZIP-1..4 (the unzip), PAIR-VRF-1 (one VRF port for both groups), VE-DTYPE-1,
VE-CONST-*, VE-SHIFT-1, VE-CONV-1, VE-TRIM-2, VE-TRIM-4, VE-PAD-3 (as in the single-stream chain),
PAIR-SPLIT-1.
"""

from __future__ import annotations

from typing import Any, ClassVar

import attrs

from ir.diagnostic import Violation
from ir.dtypes import DType
from ir.mapping.nodes import Mapping, Symbol, pair_items
from ir.op_frame import attr, rule
from ir.ops import Value
from ir.types import Type
from ir.vector import enums as E
from ir.vector import scalars
from ir.vector.numerics._arrays import f32_bits
from ir.vector.operands import VrfOperand
from ir.vector.pair import MODES, RF_CACHE_LANES, group_volume, split_equivalent, unzip_problem
from ir.vector.ops import (Conversion, VectorOp, _first_fault, amount_is_const, clip_family, pad_padded,
                           trim_back_is_dummy, trim_front)
from ir.vector.parts import UnitStep, clip_unit
from ir.vector.units import mode_text
from ir.vrf_ops import rf_mismatch
from ir.words import a_an

__all__ = ["VectorUnzip", "PairFxp", "PairClip", "PairFpBinary", "PairFpUnary", "PairFxpToFp",
           "PairFpToFxp", "PairNarrowSplit", "PairWidenConcat", "PairNarrowTrim", "PairWidenPad", "ZipFxp", "ZipClip", "ZipFp", "PAIR_OP_CLASSES",
           "PairOp"]


class PairOp(VectorOp):
    """Base of the ops on a pair (between the unzip and the zip). In IR text each prints as
    `pair_<stage>`: a pair op is called by the same method as the op on one stream."""

    TEXT_PREFIX = "pair_"  # its stages are the plain ops'; IR text tells them apart

    def pair_step(self) -> tuple[str, str, str, int, int] | None:
        """(unit, op, side, arg0, arg1) of the `vector_pair` step this op configures."""
        return None

    def step_mode(self) -> str:
        """The argument mode of the step, one for both groups (`DEFAULT` for none or MODE01 / MODE012)."""
        return mode_text(getattr(self, "mode", None))


@attrs.frozen(kw_only=True)
class VectorUnzip(PairOp):
    """Enter pair mode: split the stream along the size-2 time axis `axis` into group 0 and
    group 1, each of time `split_time`."""

    STAGE = "vector_intra_slice_unzip"
    axis: Mapping = attr()
    tile_time: Mapping = attr()
    split_time: Mapping = attr()

    def infer_type(self) -> Type:
        return attrs.evolve(self.input.type, time=self.split_time)

    @property
    def axis_name(self) -> str | None:
        return self.axis.name if isinstance(self.axis, Symbol) else None

    @rule("PAIR-UNZIP-1")
    def _axis(self) -> Violation | None:
        if self.axis_name is not None and self.axis.size == 2:
            return None
        return Violation("PAIR-UNZIP-1", f"`vector_intra_slice_unzip` splits along one axis of size 2, not {self.axis} "
                         f"(size {self.axis.size})", label="the grouping axis",
                         help="declare the grouping axis with size 2, e.g. `axes(I=2)`, and pass `m(\"I\")`")

    @rule("PAIR-UNZIP-2")
    def _in_time(self) -> Violation | None:
        if self.axis_name in self.input.type.time.axes():
            return None
        return Violation("PAIR-UNZIP-2", f"the stream's time {self.input.type.time} does not hold {self.axis}",
                         help="fetch and collect the grouping axis into time, e.g. `.collect(m(\"A / 8, I\"), ...)`")

    @rule("PAIR-UNZIP-3")
    def _split(self) -> Violation | None:
        t = self.input.type.time
        problem = unzip_problem(t, self.split_time, self.axis_name)
        if problem is None and self.tile_time.size == t.size:
            return None
        problem = problem or f"the tile time {self.tile_time} has {self.tile_time.size} positions, the time {t} {t.size}"
        return Violation("PAIR-UNZIP-3", f"`vector_intra_slice_unzip`: {problem}", help=self._split_help(t))

    def _split_help(self, time: Mapping) -> str:
        """The two-mapping call that fits `time`, when the grouping axis is one item of it."""
        items = pair_items(time)
        rest = [item for item in items if self.axis_name not in item.axes()]
        if self.axis_name is None or len(rest) != len(items) - 1:
            return f"pass the time without {self.axis}, in the stream's order, as the second mapping"
        split = ", ".join(str(item) for item in rest) or "1"
        return (f"pass the time without {self.axis}, in the stream's order: "
                f"`.vector_intra_slice_unzip(m(\"{self.axis}\"), m(\"{split}\"))` (the tile time is inferred)")


    @rule("PAIR-UNZIP-4")
    def _group_fits(self) -> Violation | None:
        if self.axis_name is None:
            return None
        volume = group_volume(self.input.type.time, self.input.type.packet, self.axis_name)
        if volume is None or volume <= RF_CACHE_LANES:
            return None
        return Violation("PAIR-UNZIP-4", f"`vector_intra_slice_unzip`: one group of {self.axis} holds {volume} "
                         f"32-bit lanes (the stream inside {self.axis}); the register-file cache holds "
                         f"{RF_CACHE_LANES} (1 KiB)", label="group 0 waits in the cache while group 1 streams in",
                         help=f"read {self.axis} further inside the fetch/collect time, so fewer lanes lie "
                              f"inside it (e.g. last in the time)")


def _const_fault(op: Any, check: Any) -> Violation | None:
    return _first_fault(check, (c for c in (op.c0, op.c1) if c is not None and not isinstance(c, VrfOperand)))


def _arg(c: Any, scalar: str) -> int:
    if c is None or isinstance(c, VrfOperand):  # a VRF group's arg is the tensor's index, set by the lowering
        return 0
    return f32_bits(c) if scalar == "f32" else int(c)


def _side(c0: Any, c1: Any) -> str:
    return "BOTH" if c0 is not None and c1 is not None else ("G0" if c1 is None else "G1")


@attrs.frozen(kw_only=True)
class _PairBinary(UnitStep, PairOp):
    """A binary op on each group with its own constant (None: that group is left as it is)."""

    op: Any = attr()
    c0: Any = attr()
    c1: Any = attr()
    mode: Any = attr(default=None, optional=True)  # the `*_with_mode` forms: one BinaryArgMode for both groups
    rf: tuple[Value, ...] = attrs.field(default=(), metadata={"role": "operand", "name": None})  # the VRF tensors read

    def rf_groups(self) -> int:
        """The groups reading the VRF, as bits (bit g: group g)."""
        return sum(1 << g for g, c in enumerate((self.c0, self.c1)) if isinstance(c, VrfOperand))

    def pair_step(self) -> tuple[str, str, str, int, int]:
        s = self.scalar or "i32"
        return self.unit(), self.op_name(), _side(self.c0, self.c1), _arg(self.c0, s), _arg(self.c1, s)

    @rule("PAIR-VRF-1")
    def _one_vrf(self) -> Violation | None:
        """A pass has one register-file port, so both groups may read only one VRF tensor."""
        a, b = self.c0, self.c1
        if isinstance(a, VrfOperand) and isinstance(b, VrfOperand) and a.tensor != b.tensor:
            return Violation("PAIR-VRF-1", f"`{self.STAGE}` reads a different VRF tensor in each group",
                             label="a pass has one register-file port",
                             help="give both groups the same VRF tensor, or a constant to one of them")
        return None

    _rf_match = rf_mismatch


@attrs.frozen(kw_only=True)
class PairFxp(_PairBinary):
    """Fxp cluster on each group (i32)."""

    STAGE = "vector_fxp"
    UNIT = "FXP"

    @rule("VE-CONST-1")
    def _range(self) -> Violation | None:
        return _const_fault(self, scalars.i32_constant)

    @rule("VE-SHIFT-1")
    def _shift(self) -> Violation | None:
        return _const_fault(self, scalars.shift_amount) if self.op.is_shift and amount_is_const(self.mode) else None


@attrs.frozen(kw_only=True)
class PairClip(_PairBinary):
    """Clip cluster on each group (i32 or f32)."""

    STAGE = "vector_clip"

    unit = clip_unit
    _family = clip_family

    @rule("VE-CONST-1")
    def _range(self) -> Violation | None:
        return _const_fault(self, scalars.i32_constant if self.scalar == "i32" else scalars.f32_constant)


@attrs.frozen(kw_only=True)
class PairFpBinary(_PairBinary):
    """Float cluster on each group (4-way f32)."""

    STAGE = "vector_fp_binary"
    UNIT = "FP_BINARY"

    @rule("VE-CONST-2")
    def _range(self) -> Violation | None:
        return _const_fault(self, scalars.f32_constant)


@attrs.frozen(kw_only=True)
class PairFpUnary(PairOp):
    """Float cluster: `op` on the groups whose flag is set."""

    STAGE = "vector_fp_unary"
    op: Any = attr()
    g0: bool = attr()
    g1: bool = attr()

    def pair_step(self) -> tuple[str, str, str, int, int]:
        return "FP_UNARY", self.op.name, "BOTH" if self.g0 and self.g1 else ("G0" if self.g0 else "G1"), 0, 0


@attrs.frozen(kw_only=True)
class _PairConvert(Conversion, PairOp):
    UNIT: ClassVar[str] = ""

    def pair_step(self) -> tuple[str, str, str, int, int]:
        return self.UNIT, "NONE", "BOTH", int(self.int_width), int(self.int_width)


@attrs.frozen(kw_only=True)
class PairFxpToFp(_PairConvert):
    """Both groups, i32 fixed point -> f32."""

    STAGE = "vector_fxp_to_fp"
    UNIT, DST = "FXP_TO_FP", DType.F32


@attrs.frozen(kw_only=True)
class PairFpToFxp(_PairConvert):
    """Both groups, f32 -> i32 fixed point."""

    STAGE = "vector_fp_to_fxp"
    UNIT, DST = "FP_TO_FXP", DType.I32


@attrs.frozen(kw_only=True)
class _PairWay(PairOp):
    UNIT: ClassVar[str] = ""
    SIZES: ClassVar[tuple[int, int]] = (8, 4)
    RETYPED = ("time", "packet")
    time: Mapping = attr()
    packet: Mapping = attr()

    def pair_step(self) -> tuple[str, str, str, int, int]:
        return self.UNIT, "NONE", "BOTH", 0, 0

    @rule("PAIR-SPLIT-1")
    def _same_cells(self) -> Violation | None:
        t = self.input.type
        src, dst = self.SIZES
        if t.packet.size == src and self.packet.size == dst and split_equivalent(t.time, t.packet, self.time, self.packet):
            return None
        return Violation("PAIR-SPLIT-1", f"`{self.STAGE}` on a pair turns {a_an(src)}-element packet into {dst}-element "
                         f"packets in time order; ({self.time}; {self.packet}) is not ({t.time}; {t.packet}) "
                         "so regrouped", help="the time gains (or loses) the packet's halves as its innermost factor: "
                         "`[T], [P] -> [T, P / 4 % 2], [P % 4]`")


@attrs.frozen(kw_only=True)
class PairNarrowSplit(_PairWay):
    """Both groups, 8-way -> 4-way: each flit becomes its front and back halves, in time order."""

    STAGE = "vector_narrow_split"
    UNIT, SIZES = "NARROW_SPLIT", (8, 4)


@attrs.frozen(kw_only=True)
class PairWidenConcat(_PairWay):
    """Both groups, 4-way -> 8-way: two consecutive 4-element packets become one flit."""

    STAGE = "vector_widen_concat"
    UNIT, SIZES = "WIDEN_CONCAT", (4, 8)


@attrs.frozen(kw_only=True)
class _PairPacket(PairOp):
    """A way change of both groups that keeps their time: only the packet's mapping changes."""

    UNIT: ClassVar[str] = ""
    RETYPED = ("packet",)
    packet: Mapping = attr()

    def pair_step(self) -> tuple[str, str, str, int, int]:
        return self.UNIT, "NONE", "BOTH", 0, 0


@attrs.frozen(kw_only=True)
class PairNarrowTrim(_PairPacket):
    """Both groups, 8-way -> 4-way: each flit's back four cells (padding) dropped; the time is kept."""

    STAGE = "vector_narrow_trim"
    UNIT = "NARROW_TRIM"

    _back_is_dummy = trim_back_is_dummy
    _front = trim_front


@attrs.frozen(kw_only=True)
class PairWidenPad(_PairPacket):
    """Both groups, 4-way -> 8-way: each 4-cell packet padded back to one flit; the time is kept."""

    STAGE = "vector_widen_pad"
    UNIT = "WIDEN_PAD"

    _padded = pad_padded


@attrs.frozen(kw_only=True)
class _Zip(UnitStep, VectorOp):
    """Merge the two groups with a binary op; the result is one stream."""

    op: Any = attr()
    mode: Any = attr(default=E.BinaryArgMode.MODE01, converter=lambda m: E.BinaryArgMode.MODE01 if m is None else m)

    def pair_step(self) -> tuple[str, str, str, int, int]:
        return self.unit(), self.op_name(), "ZIP", MODES.index(self.mode.name), 0


@attrs.frozen(kw_only=True)
class ZipFxp(_Zip):
    """`op(group0, group1)` on the Fxp cluster (i32)."""

    STAGE = "vector_fxp_zip"
    UNIT = "FXP"


@attrs.frozen(kw_only=True)
class ZipClip(_Zip):
    """`op(group0, group1)` on the Clip cluster (i32 or f32)."""

    STAGE = "vector_clip_zip"

    unit = clip_unit
    _family = clip_family


@attrs.frozen(kw_only=True)
class ZipFp(_Zip):
    """`op(group0, group1)` on the float cluster (4-way f32)."""

    STAGE = "vector_fp_zip"
    UNIT = "FP_BINARY"


PAIR_OP_CLASSES: tuple[type, ...] = (
    VectorUnzip, PairFxp, PairClip, PairFpBinary, PairFpUnary, PairFxpToFp, PairFpToFxp,
    PairNarrowSplit, PairWidenConcat, PairNarrowTrim, PairWidenPad, ZipFxp, ZipClip, ZipFp,
)
