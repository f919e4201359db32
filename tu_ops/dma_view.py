"""Lowered records of views and allocation (docs/views.md): `tensor_new`, `dma_window`, `dma_into`,
`memset`.

`tensor_new` makes an HBM or DM tensor of zeros (a DM one placed as a DMA result is). `dma_window` is a Tensor DMA (`DmaOp`) whose
source is a window of its `src` tensor: the commands are those of a DMA from a tensor of
the window's type (`src_view`, one mapping per level), their source addresses shifted by
`src_offset` bytes. `dma_into` also writes a window (`dst_view`, `dst_offset`) of an
existing tensor `into` (HBM or DM); its result is `into`'s new contents, at `into`'s
address: every byte the commands do
not write keeps its value. Input and output types are the tensors' own (the storage the
addresses count in); the view types are the fields. Both verify as DMAs (DMAOP-1 ... 5,
the walks checked against the whole tensors), then DMAOP-6: the views keep their tensor's
extent per level and the offsets are whole bytes inside it. A DM window shifted on its
Chip or Cluster level has `chip_shift` / `cluster_shift` (absent when 0): its commands
serve the chips and clusters that far on, `part` = the view's (chip + `chip_shift`,
cluster + `cluster_shift`). A window tiled at a runtime start has `src_start=%k` (a
`scalar[usize]` record), `src_start_bytes` and `src_start_limit` (`dst_` for the window
`dma_into` writes; absent otherwise): the commands are those of start 0, and when the DMA
runs that side's addresses move by `start * start_bytes` bytes; a start above the limit
stops the run (RUNTIME-10). The address arithmetic is the sequencer's and costs no cycles
in the schedule. `tensor_new` of a TRF type is a
TRF tensor of zeros placed by the TRF allocation (`tu_ops.trf_new`); of a VRF type, a VRF
tensor of zeros placed by the VRF allocation (`tu_ops.lower.vrf`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar

import attrs

from ir.dtypes import DType
from ir.mapping.nodes import Mapping
from ir.mapping.live import live_positions, nibble_bytes
from tu_ops.base import Ref, TuOp, VerifyContext, attr, operand, rule
from tu_ops.dma import DmaOp
from tu_ops.engines import DMA, Engine, no_counters, no_cycles
from tu_ops.trf_new import trf_new_problem
from tu_ops.vrf_memory import vrf_new_problem
from ir.words import a_an

if TYPE_CHECKING:
    from tu_ops.target import Target

__all__ = ["TensorNewOp", "DmaWindowOp", "DmaIntoOp", "MemsetOp", "with_levels", "dm_roots", "usize_start_problem",
           "view_problem", "start_problem"]


def with_levels(t: Any, levels: tuple[Mapping, ...]) -> Any:
    """Type `t` with its level mappings replaced by `levels` (outermost first)."""
    names = ("chip", "element") if t.kind == "hbm" else ("chip", "cluster", "slice", "element")
    return attrs.evolve(t, **dict(zip(names, levels)))


def view_problem(t: Any, levels: tuple[Mapping, ...], offset: int, side: str, target: Any) -> str | None:
    if len(levels) != len(t.levels()):
        return f"{side}_view has {len(levels)} levels; the {t.kind} tensor has {len(t.levels())}"
    for k, (a, b) in enumerate(zip(t.levels(), levels)):
        if a.size != b.size:
            return f"{side}_view level {k} has {b.size} cells; the tensor's has {a.size}"
    limit = target.constants.DM_SLICE_BYTES * t.slice.size if t.kind == "dm" else \
        t.chip.size * -(-t.element.size * (target.bits_of(t.dtype) or 0) // 8)
    if not 0 <= offset < max(limit, 1):
        return f"{side}_offset {offset} is outside the tensor's {limit} bytes"
    return None


def _reach(op: Any, side: str, target: Target) -> tuple[int, int, bool]:
    """(last byte the commands of `side` touch, the bytes it stays below, whether per slice): in
    an HBM tensor against its bytes, in DM (addresses `slice * DM_SLICE_BYTES + offset`) the
    offset against one slice's bytes."""
    base, stride = f"{side}_base", f"{side}_stride"
    last = max((getattr(c, base) + sum((e.size - 1) * getattr(e, stride) for e in c.entries) for c in op.commands),
               default=0)
    t = op.input_type if side == "src" else op.output_type
    if t.kind == "dm":
        slice_bytes = target.constants.DM_SLICE_BYTES
        return last % slice_bytes, slice_bytes, True
    return last, t.chip.size * -(-t.element.size * (target.bits_of(t.dtype) or 0) // 8), False


def start_problem(op: Any, target: Target, ctx: VerifyContext | None, side: str) -> str | None:
    """RUNTIME-8 of the runtime start of a window on `side` (`src_start=%k src_start_bytes=
    src_start_limit=`, all or none; `dst_` alike): `%k` is a `scalar[usize]` record, the
    side's addresses move by `start * start_bytes` bytes, the start is at most the limit,
    and the last start's window stays inside the tensor."""
    ref, step, limit = (getattr(op, f"{side}_start{x}") for x in ("", "_bytes", "_limit"))
    if ref is None and step is None and limit is None:
        return None
    if ref is None or step is None or limit is None:
        return f"a runtime start needs {side}_start=, {side}_start_bytes= and {side}_start_limit= together"
    if step < 0 or limit < 0:
        return f"{side}_start_bytes and {side}_start_limit must not be negative"
    last, bound, per_slice = _reach(op, side, target)
    if last + step * limit >= bound:
        return (f"the window at {side}_start={limit} reaches byte {last + step * limit}, outside the tensor's "
                f"{bound} bytes{' of a slice' if per_slice else ''}")
    return usize_start_problem(ref, ctx, f"{side}_start")


def usize_start_problem(ref: Ref, ctx: VerifyContext | None, field: str) -> str | None:
    """Why the runtime start `ref` (field `field`) is not a `scalar[usize]` record, or None
    (unknown without the kernel's context)."""
    if ctx is None:
        return None
    scalar = ctx.op(ref)
    if scalar is None:
        return f"{field} {ref} is not the result of a scalar record"
    st = scalar.output_type
    if getattr(st, "kind", None) != "scalar" or st.dtype.name != "usize":
        return f"{field} {ref} is {st}, not a scalar[usize]"
    return None


@attrs.frozen(kw_only=True)
class TensorNewOp(TuOp):
    """A fresh HBM, DM, TRF or VRF tensor of zeros: `%3 = tensor_new element_type=bf16 : hbm[...] -> hbm[...]`."""

    MNEMONIC: ClassVar[str] = "tensor_new"
    PIPELINE_RANK: ClassVar[int] = 113
    TRACED_STAGE: ClassVar[str | None] = "new"
    IN_PROGRAM: ClassVar[bool] = False
    IN_KINDS: ClassVar[tuple[str, ...]] = ("hbm", "dm", "trf", "vrf")
    OUT_KINDS: ClassVar[tuple[str, ...]] = ("hbm", "dm", "trf", "vrf")
    ENGINE: ClassVar[Engine] = DMA
    busy_cycles = no_cycles
    cost_counters = no_counters

    element_type: DType = attr()

    @rule("DMAOP-6")
    def _dmaop_6(self, target: Target, ctx: VerifyContext | None) -> str | None:
        if self.input_type != self.output_type or self.output_type.dtype != self.element_type:
            return "a new tensor's input and output types are its own type, of its element_type"
        if not target.materializable(self.element_type):
            return f"{self.element_type} cannot be stored on target {target.name}"
        if self.output_type.kind == "trf":  # a TRF tensor of the geometry its type gives (tu_ops.trf_new)
            return trf_new_problem(self.output_type, target)
        if self.output_type.kind == "vrf":  # i32 / f32 words of one slice's VRF (tu_ops.vrf)
            return vrf_new_problem(self.output_type, target)
        return None


@attrs.frozen(kw_only=True)
class DmaWindowOp(DmaOp):
    """A DMA from a window of `src` into a fresh tensor."""

    MNEMONIC: ClassVar[str] = "dma_window"
    PIPELINE_RANK: ClassVar[int] = 111

    src_view: tuple[Mapping, ...] = attr(converter=tuple)
    src_offset: int = attr()
    chip_shift: int | None = attr(default=None, optional=True)
    cluster_shift: int | None = attr(default=None, optional=True)
    src_start: Ref | None = operand(optional=True)
    src_start_bytes: int | None = attr(default=None, optional=True)
    src_start_limit: int | None = attr(default=None, optional=True)

    def view_types(self) -> tuple[Any, Any]:
        """(source, destination) types the commands walk."""
        return with_levels(self.input_type, self.src_view), self.output_type

    def reads(self) -> tuple[Ref, ...]:
        """The source, and the runtime start of its window when it has one."""
        return (self.src,) if self.src_start is None else (self.src, self.src_start)

    @rule("DMAOP-6")
    def _dmaop_6(self, target: Target, ctx: VerifyContext | None) -> str | None:
        return view_problem(self.input_type, self.src_view, self.src_offset, "src", target)

    @rule("RUNTIME-8")
    def _runtime_start(self, target: Target, ctx: VerifyContext | None) -> str | None:
        return start_problem(self, target, ctx, "src")


@attrs.frozen(kw_only=True)
class DmaIntoOp(DmaOp):
    """A DMA from a tensor (or a window of it) into a window of the tensor `into`."""

    MNEMONIC: ClassVar[str] = "dma_into"
    NEW_DM_TENSOR: ClassVar[bool] = False  # it writes into a tensor placed before it
    PIPELINE_RANK: ClassVar[int] = 112

    src_view: tuple[Mapping, ...] = attr(converter=tuple)
    src_offset: int = attr()
    into: Ref = operand()
    dst_view: tuple[Mapping, ...] = attr(converter=tuple)
    dst_offset: int = attr()
    chip_shift: int | None = attr(default=None, optional=True)
    cluster_shift: int | None = attr(default=None, optional=True)
    src_start: Ref | None = operand(optional=True)
    src_start_bytes: int | None = attr(default=None, optional=True)
    src_start_limit: int | None = attr(default=None, optional=True)
    dst_start: Ref | None = operand(optional=True)
    dst_start_bytes: int | None = attr(default=None, optional=True)
    dst_start_limit: int | None = attr(default=None, optional=True)

    def view_types(self) -> tuple[Any, Any]:
        return with_levels(self.input_type, self.src_view), with_levels(self.output_type, self.dst_view)

    def reads(self) -> tuple[Ref, ...]:
        """The source, the tensor written into (its other cells stay), and the runtime starts
        of the two windows when they have them."""
        return (self.src, self.into) + tuple(r for r in (self.src_start, self.dst_start) if r is not None)

    @rule("RUNTIME-8")
    def _runtime_start(self, target: Target, ctx: VerifyContext | None) -> str | None:
        return start_problem(self, target, ctx, "src") or start_problem(self, target, ctx, "dst")

    def traced_stage(self) -> str | None:
        """A copy into a view (docs/views.md)."""
        return "to_dm_view" if self.output_type.kind == "dm" else "to_hbm_view"

    @rule("DMAOP-6")
    def _dmaop_6(self, target: Target, ctx: VerifyContext | None) -> str | None:
        return (view_problem(self.input_type, self.src_view, self.src_offset, "src", target)
                or view_problem(self.output_type, self.dst_view, self.dst_offset, "dst", target))


@attrs.frozen(kw_only=True)
class MemsetOp(TuOp):
    """`view.memset(ctx.sub, value)`: every live cell of the window `view` (one mapping per
    level, `offset` bytes into the DM tensor `into`) set to the bit pattern `value`; the
    result is `into`'s new contents, at its address. Text: `%4 = memset into=%2
    element_type=bf16 view=[...] offset=16 value=16320 : dm[...] -> dm[...]`."""

    MNEMONIC: ClassVar[str] = "memset"
    PIPELINE_RANK: ClassVar[int] = 114
    TRACED_STAGE: ClassVar[str | None] = "memset"
    IN_PROGRAM: ClassVar[bool] = False
    IN_KINDS: ClassVar[tuple[str, ...]] = ("dm",)
    OUT_KINDS: ClassVar[tuple[str, ...]] = ("dm",)
    ENGINE: ClassVar[Engine] = DMA
    busy_cycles = no_cycles
    cost_counters = no_counters

    into: Ref = operand()
    element_type: DType = attr()
    view: tuple[Mapping, ...] = attr(converter=tuple)
    offset: int = attr()
    value: int = attr()
    start: Ref | None = operand(optional=True)   # a window at a runtime start: `offset` moves by
    start_bytes: int | None = attr(default=None, optional=True)   # `start * start_bytes` bytes
    start_limit: int | None = attr(default=None, optional=True)

    def stream_input(self) -> Ref | None:
        return None

    @rule("RUNTIME-8")
    def _runtime_start(self, target: Target, ctx: VerifyContext | None) -> str | None:
        """A memset of a window at a runtime start: `start=%k` (a `scalar[usize]` record),
        `start_bytes=` and `start_limit=` together, the window at the last start inside the tensor."""
        parts = (self.start, self.start_bytes, self.start_limit)
        if all(p is None for p in parts):
            return None
        if any(p is None for p in parts) or self.start_bytes < 0 or self.start_limit < 0:
            return "a runtime start needs start=, start_bytes= and start_limit= together, none negative"
        t = self.output_type
        bits = target.bits_of(t.dtype) or 0
        live = live_positions(self.view[-1])
        last = self.offset + (int(live.max()) + 1) * bits // 8 if len(live) else self.offset
        size = -(-t.element.size * bits // 8)
        if last + self.start_bytes * self.start_limit > size:
            return f"the window at start={self.start_limit} reaches byte {last + self.start_bytes * self.start_limit} " \
                   f"of the tensor's {size} bytes"
        return usize_start_problem(self.start, ctx, "start")

    @rule("DMAOP-6")
    def _dmaop_6(self, target: Target, ctx: VerifyContext | None) -> str | None:
        t = self.output_type
        if self.input_type != t or t.dtype != self.element_type:
            return "a memset's input and output types are its tensor's, of its element_type"
        bits = target.bits_of(t.dtype) or 0
        if bits not in (4, 8, 16, 32) or not 0 <= self.value < 2 ** bits:
            return f"value {self.value} is not {a_an(bits)}-bit pattern of whole bytes"
        if bits == 4 and nibble_bytes(with_levels(t, self.view), 0) is None:
            return "a memset of 4-bit cells fills whole bytes: every byte it touches holds two live cells of its view"
        return view_problem(t, self.view, self.offset, "dst", target)


def dm_roots(ops: Any) -> dict[int, int]:
    """The DM tensor whose storage each DM `dma_into` result is (by value id): the tensor the
    chain of writes started from. A write into DM keeps its tensor's address."""
    roots: dict[int, int] = {}
    for op in ops:
        into = getattr(op, "into", None)
        if into is not None and op.output_type.kind == "dm":
            roots[op.result.id] = roots.get(into.id, into.id)
    return roots
