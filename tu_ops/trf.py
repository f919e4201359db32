"""`TrfLoad`: the sink that stores a collected stream in the Tensor Register File (docs/reference/diagnostics.md).

Rows are 32-byte units of one lane (a lane of an L-lane tensor sees `TRF_BYTES / L / 32`
rows, two banks interleaved, so an even row starts a 64-byte bank pair). `base_row` counts
from the start of `region`. The verifier implements TRFLD-1 ... TRFLD-6 in that order.
"""

from __future__ import annotations

from typing import Any, ClassVar

import attrs

from ir.rules.collect import trf_geometry
from tu_ops.base import Ref, TuOp, VerifyContext, attr, derived_of_types, operand, rule
from tu_ops.engines import TRF, Engine, Rate, ceil_div
from tu_ops.enums import CELL_FORMATS, CellFormat, CollectFlits, FeedElementType, Region

__all__ = ["TrfLoad", "RowRange"]

RowRange = tuple[int, int]  # [first, end) rows of one lane, counted from row 0 of the TRF


def _row_ranges(items: Any) -> tuple[RowRange, ...] | None:
    return None if items is None else tuple((int(a), int(b)) for a, b in items)


@attrs.frozen(kw_only=True)
class TrfLoad(TuOp):
    """Store `lanes` x `bytes_per_lane` bytes into the TRF; the tensor is the op's result.

    Text: `%5 = trf_load in=%4 element_type=RawInt8 cell_format=INT9 lanes=8
    bytes_per_lane=512 region=FULL base_row=0 collect_flits=Flit2 : <stream> -> <trf>`.
    `live_rows` (rows held by TRF tensors still live at this step) is the [L] fact of TRFLD-6."""

    MNEMONIC: ClassVar[str] = "trf_load"
    PIPELINE_RANK: ClassVar[int] = 20
    TRACED_STAGE: ClassVar[str | None] = "to_trf"
    FEED_DEST: ClassVar[str | None] = "TRF_LOAD"
    FEED_ELEMENTS: ClassVar[frozenset[Any]] = frozenset({
        FeedElementType.BF16, FeedElementType.RawInt8, FeedElementType.RawInt4, FeedElementType.F8E4M3,
        FeedElementType.F8E5M2,
    })
    OUT_KINDS: ClassVar[tuple[str, ...]] = ("trf",)
    ENGINE: ClassVar[Engine] = TRF
    FEED_PACKING: ClassVar[str | None] = "collect_flits"

    input: Ref = operand(name="in")
    element_type: FeedElementType = attr()
    cell_format: CellFormat = attr()
    lanes: int = attr()
    bytes_per_lane: int = attr()
    region: Region = attr(Region.FULL)
    base_row: int = attr(0)
    collect_flits: CollectFlits = attr()
    live_rows: tuple[RowRange, ...] | None = attrs.field(default=None, converter=_row_ranges,
                                                         metadata={"role": "fact"})

    @classmethod
    def of_types(cls, result: Ref, feed: Ref, stream: Any, out: Any, loc: Any) -> TrfLoad:
        """The load of `stream` into the TRF tensor `out`: bytes per lane and the Flit1/Flit2
        rule of TRFLD-4 are `ir.rules.collect.trf_geometry`'s; `base_row` is the allocation's."""
        geo = trf_geometry(stream.dtype, stream.time, out.lane, out.element)
        if geo is None:
            raise ValueError("no TRF geometry")
        et = FeedElementType.of(stream.dtype)
        fmt = CELL_FORMATS.get(et)
        if fmt is None:
            raise ValueError(f"{stream.dtype} has no TRF cell format")
        return cls(result=result, input=feed, element_type=et, cell_format=fmt, lanes=geo.lanes,
                   bytes_per_lane=geo.bytes_per_lane, region=Region.FULL, base_row=0,
                   collect_flits=CollectFlits(geo.collect_flits), input_type=stream, output_type=out, loc=loc)

    derived = derived_of_types

    def busy_cycles(self, rate: Rate, target: Any) -> int:
        """Its bytes at the fetch rate (flits of FLIT_BYTES per cycle)."""
        per_cycle = target.constants.FLIT_BYTES * rate("tensor_unit", "fetch_flits_per_cycle")
        return ceil_div(self.lanes * self.bytes_per_lane, per_cycle)

    def cost_counters(self, target: Any) -> dict[str, int]:
        return {"trf_load_bytes": self.lanes * self.bytes_per_lane}

    # --- geometry ------------------------------------------------------------------------

    def row_bytes(self, target: Any) -> int:
        return target.constants.FLIT_BYTES

    def rows(self, target: Any) -> int:
        """Rows this load occupies in each lane."""
        return -(-self.bytes_per_lane // self.row_bytes(target))

    def region_rows(self, target: Any) -> tuple[int, int]:
        """(first row, row capacity) of `region` for this lane count."""
        c, rb = target.constants, self.row_bytes(target)
        lanes = max(self.lanes, 1)
        half = c.TRF_HALF_BYTES // lanes // rb
        if self.region is Region.FULL:
            return 0, c.TRF_BYTES // lanes // rb
        return (0 if self.region is Region.FIRST_HALF else half), half

    def occupied_rows(self, target: Any) -> RowRange:
        """[first, end) rows of each lane, counted from row 0 of the TRF."""
        first = self.region_rows(target)[0] + self.base_row
        return first, first + self.rows(target)

    # --- rules ---------------------------------------------------------------------------

    @rule("TRFLD-1")
    def _trfld_1(self, target: Any, ctx: VerifyContext | None) -> str | None:
        if self.lanes not in target.constants.LANES:
            return f"{self.lanes} lanes; legal: {list(target.constants.LANES)}"
        if self.output_type.lane.size != self.lanes:
            return f"lanes {self.lanes} != size of the TRF tensor's lane mapping {self.output_type.lane.size}"
        return None

    @rule("TRFLD-2")
    def _trfld_2(self, target: Any, ctx: VerifyContext | None) -> str | None:
        et = self.element_type
        if et.dtype not in target.trf_storage or et not in CELL_FORMATS:
            return f"{et} cannot be stored in the TRF"
        if self.cell_format is not CELL_FORMATS[et]:
            return f"{et} is stored as {CELL_FORMATS[et]}, not {self.cell_format}"
        if self.output_type.dtype != et.dtype:
            return f"element_type {et} differs from the TRF tensor's {self.output_type.dtype}"
        return None

    @rule("TRFLD-3")
    def _trfld_3(self, target: Any, ctx: VerifyContext | None) -> str | None:
        c, rb = target.constants, self.row_bytes(target)
        if self.bytes_per_lane <= 0 or self.bytes_per_lane % rb:
            return f"bytes_per_lane {self.bytes_per_lane} is not a positive multiple of {rb}"
        element = self.output_type.element.size * self.bits(target, self.output_type.dtype)
        if -(-element // (8 * rb)) * rb != self.bytes_per_lane:
            return f"bytes_per_lane {self.bytes_per_lane}, but the element holds {element / 8:g} bytes"
        cap = c.TRF_BYTES if self.region is Region.FULL else c.TRF_HALF_BYTES
        if self.lanes * self.bytes_per_lane > cap:
            return (f"{self.lanes} lanes x {self.bytes_per_lane} bytes = {self.lanes * self.bytes_per_lane} "
                    f"bytes, more than the {cap} of region {self.region}")
        if self.base_row < 0 or self.base_row + self.rows(target) > self.region_rows(target)[1]:
            return f"rows {self.base_row}..{self.base_row + self.rows(target) - 1} do not fit region {self.region}"
        return None

    @rule("TRFLD-4")
    def _trfld_4(self, target: Any, ctx: VerifyContext | None) -> str | None:
        pair = 2 * self.row_bytes(target)
        want = CollectFlits.Flit2 if self.bytes_per_lane % pair == 0 else CollectFlits.Flit1
        if self.collect_flits is not want:
            return f"{self.bytes_per_lane} bytes per lane are loaded with {want}, not {self.collect_flits}"
        if want is CollectFlits.Flit2 and self.base_row % 2:
            return f"a Flit2 load starts on an even row (64-byte bank pair), not row {self.base_row}"
        return None

    @rule("TRFLD-5")
    def _trfld_5(self, target: Any, ctx: VerifyContext | None) -> str | None:
        flit = target.constants.FLIT_BYTES
        stream = self.input_type
        if stream.packet.size * self.bits(target, stream.dtype) != 8 * flit:
            return "the input stream's packet is not one flit"
        steps, want = stream.time.size, self.lanes * self.bytes_per_lane
        if steps % max(self.lanes, 1):
            return f"{steps} flits cannot be split evenly over {self.lanes} lanes"
        if steps * flit != want:
            return f"the stream delivers {steps * flit} bytes, the load stores {want}"
        feed = self.neighbour(ctx, self.input, "feed_buffer")
        if feed is not None and feed.beats * feed.collect_flits.value * flit != want:
            return f"the feed delivers {feed.beats * feed.collect_flits.value * flit} bytes, the load stores {want}"
        if feed is not None and feed.collect_flits is not self.collect_flits:
            return f"collect_flits {self.collect_flits} differs from its feed's {feed.collect_flits}"
        return None

    @rule("TRFLD-6")
    def _trfld_6(self, target: Any, ctx: VerifyContext | None) -> str | None:
        if self.live_rows is None:
            return None
        first, end = self.occupied_rows(target)
        for a, b in self.live_rows:
            if first < b and a < end:
                return f"rows {first}..{end - 1} overlap rows {a}..{b - 1} of a live TRF tensor"
        return None
