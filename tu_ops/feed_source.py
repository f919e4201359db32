"""Which cells of its DM tensor a feed reads (FEED-15, docs/views.md).

A `begin` reads its view's cells: the program's space (the Chip, Cluster and Slice of the
fetch stream) and the feed's source element are the tensor's own levels or tiles of them
(an Element tile at the source's offset; an unshifted tile of an outer level, fed in
place). A `begin` over a reshaped view reads the same bytes under other mappings, every
level's size kept (VIEW-5); its record names the levels the view relabelled the tensor to
(`reshape=[...]`, printed only then), and the space and the element are those levels or
tiles of them. A same-size relabel of a level without that field is refused: nothing but
a reshape reads a tensor under mappings that are neither its own nor a tile of them.

A `begin` over an Element tile at a runtime start (docs/runtime.md#runtime-tile-starts)
names the `scalar[usize]` record with `start=%k`, the source elements one step of it moves
(`start_elems`) and the largest start (`start_limit`): the window at every start up to the
limit is a tile of the tensor's element (RUNTIME-8).

An interleaved `begin` whose second view is read at another element offset than the first
names it (`rhs_offset=`, printed only then): the second tensor's element at that offset,
and at the largest start, is a tile of it (FEED-15, RUNTIME-8), in whole bytes from the first
view's position (the feed walks from one to the other by a fixed byte step).
"""

from __future__ import annotations

from typing import Any

from ir.mapping.live import is_window
from tu_ops.printing import mapping_text

__all__ = ["source_problem", "start_problem"]

_LEVELS = ("Chip", "Cluster", "Slice", "Element")


def source_problem(feed: Any, ctx: Any) -> str | None:
    """What is wrong with the levels `feed` reads its DM tensor under, or None. The tensor's
    type is its making record's, from the `VerifyContext` `ctx`; without it (or without a DM
    tensor there: the artifact's verifier names a missing source) a reshaped feed is still
    checked against its own `reshape=` levels."""
    made = ctx.op(feed.source.tensor) if ctx is not None else None
    tensor = getattr(made, "output_type", None)
    held = tensor.levels() if getattr(tensor, "kind", None) == "dm" else None
    if feed.reshape is not None:
        if len(feed.reshape) != len(_LEVELS):
            return f"reshape= names {len(feed.reshape)} levels, not the 4 of a DM tensor"
        for name, own, new in zip(_LEVELS, held or (), feed.reshape):
            if own.size != new.size:
                return (f"reshape= relabels the {name} level \"{mapping_text(own)}\" ({own.size} cells) as "
                        f"\"{mapping_text(new)}\" ({new.size} cells); a reshape keeps every level's size")
        held = feed.reshape
    if held is None:
        return None
    whose = "the reshape's" if feed.reshape is not None else f"{feed.source.tensor}'s"
    unmarked = "" if feed.reshape is not None else \
        " (only a feed marked reshape=[...], over a reshaped view, reads other mappings)"
    for name, own, read in zip(_LEVELS, held[:3], feed.input_type.spatial()):
        if not _reads(own, read, 0):
            return (f"the program's {name} mapping \"{mapping_text(read)}\" is neither {whose} \"{mapping_text(own)}\" "
                    f"nor a tile of it{unmarked}")
    element, own = feed.source.element, held[3]
    if element.size == own.size and not _reads(own, element, feed.source.offset):
        return (f"source element \"{mapping_text(element)}\" at offset {feed.source.offset} is neither {whose} "
                f"element \"{mapping_text(own)}\" nor a tile of it{unmarked}")
    return _second_problem(feed, ctx, feed.rhs_offset, "rhs_offset")  # an element of another size: `--verify`


def _second_problem(feed: Any, ctx: Any, offset: int | None, field: str) -> str | None:
    """What is wrong with an interleaved feed's second view at element offset `offset` (its
    `rhs_offset=`, maybe moved to the largest start), or None."""
    if feed.rhs_offset is None:
        return None
    if feed.interleave is None:
        return "rhs_offset= names the second view of an interleaved begin; this feed reads one tensor"
    bits = feed.source.dtype.bits
    if (feed.rhs_offset - feed.source.offset) * bits % 8:
        return f"rhs_offset={feed.rhs_offset} is not whole bytes of {feed.source.dtype} from offset {feed.source.offset}"
    made = ctx.op(feed.interleave.tensor) if ctx is not None else None
    tensor = getattr(made, "output_type", None)
    own = getattr(tensor, "element", None) if getattr(tensor, "kind", None) == "dm" else None
    element = feed.source.element
    if own is None or feed.reshape is not None or element.size != own.size or _reads(own, element, offset):
        return None
    return (f"the second view's element \"{mapping_text(element)}\" at {field} (offset {offset}) is not a tile of "
            f"{feed.interleave.tensor}'s element \"{mapping_text(own)}\"")


def _reads(own: Any, read: Any, offset: int) -> bool:
    """Whether `read` at cell `offset` names cells of `own`: the same mapping, or a tile of it."""
    return mapping_text(own) == mapping_text(read) or is_window(own, read, offset)


def start_problem(feed: Any, ctx: Any) -> str | None:
    """RUNTIME-8 of a feed's runtime start: all three fields or none, a `scalar[usize]`
    record, and the window at the largest start still a tile of the tensor's element."""
    parts = (feed.start, feed.start_elems, feed.start_limit)
    if all(p is None for p in parts):
        return None
    if any(p is None for p in parts):
        return "a runtime start needs start=, start_elems= and start_limit= together"
    if feed.start_elems < 0 or feed.start_limit < 0:
        return "start_elems and start_limit must not be negative"
    if ctx is None:
        return None
    scalar, made = ctx.op(feed.start), ctx.op(feed.source.tensor)
    st = getattr(scalar, "output_type", None)
    if getattr(st, "kind", None) != "scalar" or st.dtype.name != "usize":
        return f"start {feed.start} is {st}, not a scalar[usize]"
    own = getattr(getattr(made, "output_type", None), "element", None)
    last = feed.source.offset + feed.start_elems * feed.start_limit
    if own is not None and feed.reshape is None and not _reads(own, feed.source.element, last):
        return f"the source element at start_limit={feed.start_limit} (offset {last}) is not a tile of {feed.source.tensor}"
    if feed.rhs_offset is None:
        return None
    moved = feed.rhs_offset + feed.start_elems * feed.start_limit   # the second view moves with the first
    return _second_problem(feed, ctx, moved, f"start_limit={feed.start_limit} rhs_offset")
