"""FEED-14: the `mask=` of a `feed_buffer` record, the Fetch Adapter's masking stage.

The configuration (`ir.fetch_mask.FetchMaskConfig`) must be the one the record's fetch
stream needs to zero the padding of its `axis`, and it never zeroes a live cell.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ir.diagnostic import Violation
from ir.fetch_mask import FetchMaskConfig, derive_mask, mask_keep
from ir.valid_count import live_cells

__all__ = ["mask_problem"]


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
