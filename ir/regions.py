"""Regions: the one nesting concept of a kernel body (docs/loops.md).

A body is a flat sequence of items (traced ops, or lowered records and programs). A
region is a bracket in it: an opening item (its class has `REGION`, the kind) and the
item that closes it (its class has `REGION_END`, its `begin` operand names the opener's
result). The items between are the region's body; they make values of their own, as
the body of MLIR's `scf.if` / `scf.for` does. Two kinds exist:

- `guard` (`ctx.when`): the body is done once or not at all;
- `loop` (`ctx.loop`): the body is done once per index value, the opener's result.

What a body hands to the items after it is the same for both kinds: a write into a
tensor made before the region (`into`) carries out as a new version of that tensor;
nothing else does (RUNTIME-6, LOOP-3). For a loop the carried version is also what the
next iteration reads in place of the tensor: `carried` names, for each outer tensor the
body writes into, its last version in the body.

Every layer reads regions through this module: the trace's scope rules, the allocation
of buffers (a value read in a loop body stays live to the loop's end: `extend_reads`),
the VISA verifier, the interpreter and the cpu backend (`LoopRun`), and the schedule.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import attrs
import numpy as np

__all__ = ["Region", "region_kind", "closes_region", "regions", "loops", "extend_reads", "carried", "write_of",
           "LoopRun", "INDEX_DTYPE"]

INDEX_DTYPE = np.uint64
"""The host dtype of a loop index (a `usize`)."""


@attrs.frozen
class Region:
    """One bracket of a body: its kind and the positions of its opening and closing items."""

    kind: str
    begin: int
    end: int

    def holds(self, position: int) -> bool:
        """Whether the item at `position` is in the body (between the brackets)."""
        return self.begin < position < self.end


def region_kind(item: Any) -> str | None:
    """The kind of region `item` opens (`guard`, `loop`), or None."""
    return getattr(type(item), "REGION", None)


def closes_region(item: Any) -> bool:
    """Whether `item` closes a region."""
    return bool(getattr(type(item), "REGION_END", False))


def regions(items: Sequence[Any]) -> list[Region]:
    """The regions of a body, in the order they close (inner before outer); a bracket that
    does not pair up is left out (the verifier names it)."""
    found: list[Region] = []
    stack: list[tuple[int, Any]] = []
    for i, item in enumerate(items):
        kind = region_kind(item)
        if kind is not None:
            stack.append((i, item))
        elif closes_region(item) and stack and stack[-1][1].result == item.begin:
            at, opener = stack.pop()
            found.append(Region(region_kind(opener) or "", at, i))
    return found


def loops(items: Sequence[Any]) -> list[Region]:
    """The loop regions of a body, inner before outer."""
    return [r for r in regions(items) if r.kind == "loop"]


def extend_reads(last: dict[int, int], made_at: dict[int, int], spans: Sequence[Region]) -> dict[int, int]:
    """`last` (value id -> position of its last read) with every value made before a loop and
    read in its body read again at the loop's end: the next iteration reads it. `made_at`:
    value id -> position of the item that makes it (a parameter: absent, i.e. before all)."""
    out = dict(last)
    for r in sorted(spans, key=lambda s: s.end - s.begin):   # inner loops first: an outer one extends further
        for vid, at in out.items():
            if r.begin < at < r.end and made_at.get(vid, -1) < r.begin:
                out[vid] = r.end
    return out


def write_of(item: Any) -> tuple[int, int] | None:
    """(result id, id of the tensor it writes into) of a write into a tensor, or None; a
    program writes through its sink."""
    sink = item.ops[-1] if hasattr(item, "sink") and hasattr(item, "ops") else item
    into = getattr(sink, "into", None)
    result = getattr(sink, "result", None)
    if into is None or result is None:
        return None
    return result.id, into.id


def carried(items: Sequence[Any], region: Region) -> dict[int, int]:
    """Tensor id -> id of its last version in the body, for each tensor made before the
    region that the body writes into (through any chain of versions)."""
    root_of: dict[int, int] = {}
    made: set[int] = set()
    last: dict[int, int] = {}
    for item in items[region.begin + 1:region.end]:
        write = write_of(item)
        if write is not None:
            result, into = write
            root = root_of.get(into, into)
            if root not in made:
                root_of[result] = root
                last[root] = result
        for op in getattr(item, "ops", (item,)):
            if getattr(op, "result", None) is not None:
                made.add(op.result.id)
    return last


@attrs.define
class LoopRun:
    """The loops of one run of a body: the trip count and index of each open loop, and the
    carried tensors, for an executor that walks the body by position (`enter` at a loop's
    opener, `again` at its end). Values live in `env` by id; an index is a 0-d `usize`."""

    items: Sequence[Any]
    spans: dict[int, Region]                 # by the opener's position and by the end's
    carry: dict[int, dict[int, int]]         # by the opener's position: tensor id -> last version id
    left: dict[int, int] = attrs.field(factory=dict)

    @classmethod
    def of(cls, items: Sequence[Any]) -> LoopRun:
        found = loops(items)
        spans = {r.begin: r for r in found} | {r.end: r for r in found}
        return cls(items, spans, {r.begin: carried(items, r) for r in found})

    def opens(self, position: int) -> bool:
        r = self.spans.get(position)
        return r is not None and r.begin == position

    def closes(self, position: int) -> bool:
        r = self.spans.get(position)
        return r is not None and r.end == position

    def enter(self, position: int, env: dict[int, Any]) -> bool:
        """At a loop's opener: set the index to the first value; whether the body runs."""
        op = self.items[position]
        bound = op.stop if op.stop is not None else int(env[op.bound.id])
        trips = max(bound - op.start, 0)
        env[op.result.id] = np.array(op.start, INDEX_DTYPE)
        self.left[position] = trips - 1
        return trips > 0

    def skip(self, position: int, env: dict[int, Any]) -> None:
        """A loop that is not run (under a false guard): its index is its start."""
        env[self.items[position].result.id] = np.array(self.items[position].start, INDEX_DTYPE)

    def again(self, position: int, env: dict[int, Any]) -> int | None:
        """At a loop's end after an iteration: carry the written tensors into the next one;
        the position to go on at (the body's first item) while iterations are left, else None
        (the end's result is the index past the last)."""
        r = self.spans[position]
        for tensor, version in self.carry[r.begin].items():
            env[tensor] = env[version]
        opener = self.items[r.begin]
        index = opener.result.id
        env[index] = np.array(int(env[index]) + 1, INDEX_DTYPE)
        if self.left.get(r.begin, 0) > 0:
            self.left[r.begin] -= 1
            return r.begin + 1
        env[self.items[position].result.id] = env[index]
        return None

    def steer(self, position: int, env: dict[int, Any], guards: Any) -> int | None:
        """At a loop's opener or end: the position to go on at, else None (not one). `guards`
        is the executor's state of open guards (`depth`, `false_from`: the depth of the
        outermost false one): a loop with no iteration, or under a false guard, is skipped
        as a false guard's body is; at the end of an iteration the walk goes back."""
        if self.opens(position):
            guards.depth += 1
            if guards.false_from is not None:
                self.skip(position, env)
            elif not self.enter(position, env):
                guards.false_from = guards.depth
            return position + 1
        if self.closes(position) and guards.false_from is None:
            again = self.again(position, env)
            if again is not None:
                return again
            guards.depth -= 1
            return position + 1
        return None
