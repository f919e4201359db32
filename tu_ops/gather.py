"""`GatherOp` and `ScatterOp`: lowered gathers and scatters, indirect Tensor DMAs
(docs/machine/dma.md "Gather", "Scatter"); `ShuffleOp`, chip and cluster shuffles
(docs/machine/topology.md).

`%3 = dma_gather src=%0 index=%2 mode=SCALED row_bytes=256 rows=512 index_commands=[]
kind=HBM_TO_DM element_type=bf16 aggregate=... commands=[...] : <hbm> -> <dm>`.

The engine reads every index value (from HBM, or for `UNSCALED` from the index's DM by
`index_commands`, a DM -> HBM walk into the index's logical order), turns it into a row
address (a scaled value is a byte offset, an unscaled one `row * row_bytes`) and copies
that `row_bytes` row (with `outer=n`, a key that is not the table's outermost axis, the
table is n blocks of `rows` rows and each value copies its row from every block). The
gathered rows, laid out as `ir.gather.virtual_source`, are
then written by `commands` exactly as a DmaOp writes its source into DM. The verifier
checks DMAOP-1..5 (DMAOP-5 against the gathered rows, not the table) and GATHEROP-1; a
runtime sparse prefix is the operand `count=%k`, the `scalar[i32]` record of its length
(GATHEROP-2), printed only when present.
"""

from __future__ import annotations

import enum
from typing import TYPE_CHECKING, Any, ClassVar

import attrs

from ir.gather_prefix import COUNT_DTYPE
from ir.mapping.nodes import Mapping
from tu_ops.base import Alloc, Ref, VerifyContext, attr, operand, rule
from tu_ops.printing import type_text
from tu_ops.dma import DmaCommand, DmaOp
from tu_ops.dma_view import start_problem, usize_start_problem, view_problem, with_levels

if TYPE_CHECKING:
    from tu_ops.target import Target

__all__ = ["IndexMode", "GatherOp", "ScatterOp", "ShuffleLevel", "ShuffleOp"]


class IndexMode(enum.Enum):
    """How the engine reads an index value: a byte offset, or a row number."""

    SCALED = "scaled"
    UNSCALED = "unscaled"


def _commands(items: Any) -> tuple[DmaCommand, ...]:
    return tuple(c if isinstance(c, DmaCommand) else DmaCommand(**c) for c in items)


@attrs.frozen(kw_only=True)
class GatherOp(DmaOp):
    """Rows of the HBM table `src` at the rows `index` names, into DM."""

    MNEMONIC: ClassVar[str] = "dma_gather"
    PIPELINE_RANK: ClassVar[int] = 115
    IN_KINDS: ClassVar[tuple[str, ...]] = ("hbm",)
    OUT_KINDS: ClassVar[tuple[str, ...]] = ("dm",)

    index: Ref = operand()
    mode: IndexMode = attr()
    row_bytes: int = attr()
    rows: int = attr()
    gathered: int = attr()           # index values per chip: the rows the commands read
    # a key that is not the table's outermost axis: the table reads as `outer` blocks of `rows`
    # rows each, and each index value copies one row from every block (absent: one block)
    outer: int | None = attr(None, optional=True)
    index_commands: tuple[DmaCommand, ...] = attr((), converter=_commands)
    prefix: int | None = attr(None, optional=True)   # `.sparse_prefix(n)`: each chip's first n entries only
    count: Ref | None = operand(optional=True)   # a runtime `.sparse_prefix(n)`: the scalar[i32] record of n

    def traced_stage(self) -> str | None:
        """The gather call, by its index mode."""
        return "dma_gather_scaled" if self.mode.name == "SCALED" else "dma_gather_unscaled"

    def reads(self) -> tuple[Ref, ...]:
        return (self.src, self.index)

    @rule("DMAOP-5")
    def _dmaop_5(self, target: Any, ctx: VerifyContext | None) -> str | None:
        rows = Alloc(0, self.input_type.chip.size * (self.outer or 1) * self.gathered * self.row_bytes)
        return self.sides_problem(target, rows, self.dst_alloc, " (the gathered rows)")

    @rule("GATHEROP-1")
    def _gatherop_1(self, target: Any, ctx: VerifyContext | None) -> str | None:
        if self.row_bytes < 1 or self.rows < 1 or self.gathered < 1:
            return f"row_bytes={self.row_bytes}, rows={self.rows}, gathered={self.gathered}: each is at least 1"
        if self.outer is not None and self.outer < 2:
            return f"outer={self.outer}: one block of rows is written by leaving `outer` out"
        if self.prefix is not None and not 0 <= self.prefix <= self.gathered:
            return f"prefix={self.prefix}: a sparse prefix counts 0 .. {self.gathered} index entries"
        if (self.mode is IndexMode.UNSCALED) != bool(self.index_commands):
            return f"mode={self.mode.name} with {len(self.index_commands)} index command(s): an unscaled " \
                   "index is read from DM by its index_commands, a scaled one from HBM without them"
        return None

    @rule("GATHEROP-2")
    def _gatherop_2(self, target: Target, ctx: VerifyContext | None) -> str | None:
        if self.count is None:
            return None
        if self.prefix is not None or self.mode is not IndexMode.SCALED:
            return f"count={self.count} on a gather with {'prefix=' if self.prefix is not None else 'mode=UNSCALED'}" \
                   ": a runtime count shortens a SCALED gather that has no trace-time prefix"
        made = ctx.op(self.count) if ctx is not None else None
        if ctx is not None and made is None:
            return f"count={self.count} is not the result of a record"
        t = getattr(made, "output_type", None)
        if made is not None and (getattr(t, "kind", None) != "scalar" or t.dtype.name != COUNT_DTYPE):
            return f"count={self.count} is {type_text(t, spatial=False)}, not scalar[{COUNT_DTYPE}]"
        return None



@attrs.frozen(kw_only=True)
class ScatterOp(DmaOp):
    """The DM tensor `src` written into rows of a new HBM tensor at the byte offsets `index` holds.

    `commands` read the data into its rows in index order (`ir.scatter.virtual_rows`), as a
    DmaOp writes HBM; the engine then writes row k of `row_bytes` bytes at the offset index[k]
    of the output (of each of its `outer` blocks of `rows` rows, when it has them) (zero elsewhere, or the bytes of `into` when the scatter writes into that
    existing tensor, of the output's type; the last write wins). DMAOP-5 checks the rows, not
    the output."""

    MNEMONIC: ClassVar[str] = "dma_scatter"
    NEW_DM_TENSOR: ClassVar[bool] = False  # its result is in HBM
    PIPELINE_RANK: ClassVar[int] = 116
    TRACED_STAGE: ClassVar[str | None] = "dma_scatter"
    IN_KINDS: ClassVar[tuple[str, ...]] = ("dm",)
    OUT_KINDS: ClassVar[tuple[str, ...]] = ("hbm",)

    index: Ref = operand()
    row_bytes: int = attr()
    rows: int = attr()
    scattered: int = attr()          # index values per chip: the rows the commands write
    outer: int | None = attr(None, optional=True)   # blocks of `rows` rows in the output (absent: one)
    into: Ref | None = operand(optional=True)   # the tensor written in place: its other rows kept
    # a scatter by positions (an SPM index of row numbers): UNSCALED, with the commands that read
    # the index into its logical order; both absent for byte offsets in HBM
    mode: IndexMode | None = attr(None, optional=True)
    index_commands: tuple[DmaCommand, ...] | None = attr(None, optional=True,
                                                         converter=lambda c: None if c is None else _commands(c))
    # a scatter out of a tile of its DM tensor: the tile's levels and byte offset (the input
    # type is the tensor's; the commands read the tile, `src_offset` bytes in); absent for the whole tensor
    src_view: tuple[Mapping, ...] | None = attr(None, optional=True, converter=attrs.converters.optional(tuple))
    src_offset: int | None = attr(None, optional=True)
    # a tile at a runtime start: the data's addresses move by start * src_start_bytes (RUNTIME-8, LOOP-6)
    src_start: Ref | None = operand(optional=True)
    src_start_bytes: int | None = attr(None, optional=True)
    src_start_limit: int | None = attr(None, optional=True)
    # into one page of `into` (`ir.scatter.page_of`): the page's levels (the rows, outer blocks
    # and index count bytes from its start) and its first byte in each chip's copy, moved by
    # `dst_start * dst_start_bytes` at a runtime start (RUNTIME-8, LOOP-6); absent for the whole tensor
    dst_view: tuple[Mapping, ...] | None = attr(None, optional=True, converter=attrs.converters.optional(tuple))
    dst_offset: int | None = attr(None, optional=True)
    dst_start: Ref | None = operand(optional=True)
    dst_start_bytes: int | None = attr(None, optional=True)
    dst_start_limit: int | None = attr(None, optional=True)

    def reads(self) -> tuple[Ref, ...]:
        start = tuple(r for r in (self.src_start, self.dst_start) if r is not None)
        return (self.src, self.index) + ((self.into,) if self.into is not None else ()) + start

    @rule("RUNTIME-8")
    def _runtime_start(self, target: Target, ctx: VerifyContext | None) -> str | None:
        return start_problem(self, target, ctx, "src") or self._page_start(target, ctx)

    def _page_start(self, target: Target, ctx: VerifyContext | None) -> str | None:
        """The page's runtime start: all three fields or none, a `scalar[usize]` record, and
        the page at the largest start inside each chip's copy of the tensor."""
        parts = (self.dst_start, self.dst_start_bytes, self.dst_start_limit)
        if all(p is None for p in parts):
            return None
        if any(p is None for p in parts) or self.dst_view is None:
            return "a page at a runtime start needs dst_view=, dst_start=, dst_start_bytes= and dst_start_limit="
        if self.dst_start_bytes < 0 or self.dst_start_limit < 0:
            return "dst_start_bytes and dst_start_limit must not be negative"
        last = (self.dst_offset or 0) + self.dst_start_bytes * self.dst_start_limit + self._page_bytes(target)
        if last > self._chip_bytes(target):
            return (f"the page at dst_start={self.dst_start_limit} ends at byte {last}, past the "
                    f"{self._chip_bytes(target)} bytes of a chip's copy of the tensor")
        return usize_start_problem(self.dst_start, ctx, "dst_start")

    def _chip_bytes(self, target: Target) -> int:
        t = self.output_type
        return -(-t.element.size * (target.bits_of(t.dtype) or t.dtype.bits) // 8)

    def _page_bytes(self, target: Target) -> int:
        page = self.view_types()[1]
        return -(-page.element.size * (target.bits_of(page.dtype) or page.dtype.bits) // 8)

    def view_types(self) -> tuple[Any, Any]:
        """(source, destination) types: the tile the data is read from, the output (the page
        it writes, when it writes one)."""
        src = self.input_type if self.src_view is None else with_levels(self.input_type, self.src_view)
        return src, self.output_type if self.dst_view is None else with_levels(self.output_type, self.dst_view)

    @rule("DMAOP-6")
    def _dmaop_6(self, target: Target, ctx: VerifyContext | None) -> str | None:
        if (self.dst_view is None) != (self.dst_offset is None) or (self.dst_view is not None and self.into is None):
            return "a scatter into a page names into=, dst_view= and dst_offset= together"
        if self.dst_view is not None and not (
                len(self.dst_view) == 2 and self.dst_view[0].equivalent(self.output_type.chip)
                and 0 <= self.dst_offset and self.dst_offset + self._page_bytes(target) <= self._chip_bytes(target)):
            return (f"dst_view= with dst_offset={self.dst_offset} is not a page (the tensor's Chip, an element inside "
                    f"each chip's {self._chip_bytes(target)} bytes)")
        if self.src_view is None and self.src_offset is None:
            return None
        if self.src_view is None or self.src_offset is None:
            return "a scatter out of a tile names src_view= and src_offset= together"
        return view_problem(self.input_type, self.src_view, self.src_offset, "src", target)

    @rule("DMAOP-5")
    def _dmaop_5(self, target: Any, ctx: VerifyContext | None) -> str | None:
        rows = Alloc(0, self.output_type.chip.size * (self.outer or 1) * self.scattered * self.row_bytes)
        return self.sides_problem(target, self.src_alloc, rows, " (the scattered rows)")

    @rule("SCATTEROP-1")
    def _scatterop_1(self, target: Any, ctx: VerifyContext | None) -> str | None:
        if self.row_bytes < 1 or self.rows < 1 or self.scattered < 1:
            return f"row_bytes={self.row_bytes}, rows={self.rows}, scattered={self.scattered}: each is at least 1"
        if self.outer is not None and self.outer < 2:
            return f"outer={self.outer}: one block of rows is written by leaving `outer` out"
        if (self.mode is IndexMode.UNSCALED) != bool(self.index_commands) or self.mode is IndexMode.SCALED:
            return f"mode={self.mode and self.mode.name} with {len(self.index_commands or ())} index command(s): a " \
                   "scatter by positions is UNSCALED and reads its index by index_commands; one by byte offsets " \
                   "names neither"
        return None


class ShuffleLevel(enum.Enum):
    """The level a shuffle permutes."""

    CHIP = "chip"
    CLUSTER = "cluster"


@attrs.frozen(kw_only=True)
class ShuffleOp(DmaOp):
    """A chip or cluster shuffle: position t of `level` takes position `pattern[t]` of `src`.

    `commands` are the identity copy of the tensor, one per live target part; a DM command
    reads the DM of its part with the shuffled position (`command_source`), an HBM command's
    `src_base` already addresses the source chip's copy."""

    MNEMONIC: ClassVar[str] = "dma_shuffle"
    PIPELINE_RANK: ClassVar[int] = 117
    TRACED_STAGE: ClassVar[str | None] = "shuffle"

    level: ShuffleLevel = attr()
    pattern: tuple[int, ...] = attr(converter=tuple)

    def command_source(self, i: int, cmd: Any) -> tuple[int, int]:
        """The (chip, cluster) a DM command (`i`, of target part `cmd.part`) reads."""
        chip, cluster = cmd.part.chip, cmd.part.cluster
        if self.level is ShuffleLevel.CHIP:
            return self.pattern[chip], cluster
        return chip, self.pattern[cluster]

    @rule("SHUFFLEOP-1")
    def _shuffleop_1(self, target: Any, ctx: VerifyContext | None) -> str | None:
        t = self.input_type
        if self.kind.value[0] != self.kind.value[1] or t != self.output_type:
            return f"a shuffle keeps the tensor's type and memory, not {self.kind.name}"
        if self.level is ShuffleLevel.CLUSTER and t.kind != "dm":
            return "an HBM tensor has no Cluster level to shuffle"
        n = (t.chip if self.level is ShuffleLevel.CHIP else t.cluster).size
        if len(self.pattern) != n or any(not 0 <= p < n for p in self.pattern):
            return f"pattern {list(self.pattern)} does not name a source for each of the {n} positions"
        return None
