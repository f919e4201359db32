"""The traced op of the Fetch Adapter's masking stage (`ir.fetch_mask` holds its rules)."""

from __future__ import annotations

import attrs

from ir.diagnostic import Violation
from ir.fetch_mask import FetchMaskConfig, derive_mask, masked_axes, masked_mapping
from ir.mapping.nodes import Mapping, written
from ir.op_frame import attr
from ir.ops import InputOp

__all__ = ["FetchMask", "check_fetch_mask"]


def check_fetch_mask(op: FetchMask) -> Violation | None:
    """FMASK-1 (only `#` -> `#{0}`), then FMASK-2 (the configuration can describe it)."""
    t = op.input.type
    axes = masked_axes(t.time, t.packet, op.out_time, op.out_packet)
    if isinstance(axes, Violation):
        return axes
    found = derive_mask(t.time, t.packet, axes)
    if isinstance(found, Violation):
        return found
    (axis,) = axes
    want_time, want_packet = masked_mapping(t.time, axis), masked_mapping(t.packet, axis)
    if (op.out_time, op.out_packet) != (want_time, want_packet):
        return Violation("FMASK-1", f"a mask zeroes every padding of {axis}, not some of it",
                         label=f"out_time {op.out_time.text()} ; out_packet {op.out_packet.text()}",
                         help=f'write m("{written(want_time)}"), m("{written(want_packet)}")')
    return None


@attrs.frozen(kw_only=True)
class FetchMask(InputOp):
    """Fetch Adapter masking: the padding of one axis becomes zero (`#` -> `#{0}`)."""

    STAGE = "fetch_mask"
    FEED = True
    RULES = (check_fetch_mask,)
    RETYPED = ("out_time", "out_packet")
    out_time: Mapping = attr()
    out_packet: Mapping = attr()

    def config(self) -> FetchMaskConfig:
        """The hardware configuration of this (legal) mask."""
        t = self.input.type
        found = derive_mask(t.time, t.packet, masked_axes(t.time, t.packet, self.out_time, self.out_packet))
        if isinstance(found, Violation):
            raise ValueError(found.message)
        return found
