"""FEED-14: the `mask=` of a `feed_buffer` record, the Fetch Adapter's masking stage.

The configuration (`ir.fetch_mask.FetchMaskConfig`) must be the one the record's fetch
stream needs to zero the padding of its `axis`, and it never zeroes a live cell.
"""

from __future__ import annotations

from typing import Any

import attrs
import numpy as np

from ir.diagnostic import Violation
from ir.fetch_mask import FetchMaskConfig, derive_mask, mask_keep, masked_axes, masked_mapping
from ir.valid_count import live_cells

__all__ = ["mask_problem", "masked"]


def mask_problem(mask: FetchMaskConfig, stream: Any) -> str | None:
    """What is wrong with `mask` on the fetch stream `stream`, or None."""
    names = mask.axis.axes()
    if len(names) != 1 or not names <= (stream.time.axes() | stream.packet.axes()):
        return f"axis {mask.axis.text()} is not one axis of the fetch stream"
    (axis,) = names
    want = derive_mask(stream.time, stream.packet, {axis})
    if isinstance(want, Violation):
        return f"the padding of {axis} cannot be masked: {want.message}"
    if want != mask:
        return f"the mask does not zero exactly the padding of {axis} (the stream needs {want.dim.value} {list(want.counts)})"
    keep = mask_keep(stream.time, stream.packet, mask)
    if np.any(live_cells(stream.time, stream.packet) & ~keep):
        return "the mask zeroes live cells"
    return None


def masked(axis_of: Any, cur: Any) -> tuple[FetchMaskConfig, Any]:
    """The Fetch Adapter's configuration zeroing every padding of the one axis `axis_of` names
    in the stream `cur`, and the stream it leaves."""
    names = axis_of.axes()
    if len(names) != 1:
        raise ValueError(f"the mask's axis {axis_of.text()} is not one axis")
    (axis,) = names
    time, packet = masked_mapping(cur.time, axis), masked_mapping(cur.packet, axis)
    found = derive_mask(cur.time, cur.packet, masked_axes(cur.time, cur.packet, time, packet))
    if isinstance(found, Violation):
        raise ValueError(found.message)
    return found, attrs.evolve(cur, time=time, packet=packet)
