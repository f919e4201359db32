"""RUNTIME-6 and LOOP-3: what a region's body may hand to the ops after it (docs/runtime.md,
docs/loops.md).

When the guard's condition is false its ops are not done, so a value made inside the
block has no contents after it, unless it is a new version of a tensor that existed
before the block (a `memset`, `to_dm_view`, `commit_view` into it): skipped, that write
leaves the tensor as it was. A stream may not cross the block's edge either. `scope_faults`
walks a traced kernel's ops and names each op that breaks this.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import attrs

from ir.diagnostic import Violation
from ir.regions import closes_region, region_kind

__all__ = ["scope_faults"]

_STREAMS = ("stream", "cstream")


_FAULTS = {  # kind -> (code, what the block is called)
    "guard": ("RUNTIME-6", "a `ctx.when` block"),
    "loop": ("LOOP-3", "a `ctx.loop` body"),
}


@attrs.define
class _Scopes:
    """The walk's state: where each value was made and which regions are open."""

    depth_of: dict[int, int] = attrs.field(factory=dict)     # value id -> region depth it was made at
    root_depth: dict[int, int] = attrs.field(factory=dict)   # value id -> depth of the tensor it is a version of
    closed: dict[int, str] = attrs.field(factory=dict)       # made in a region that has ended -> its kind
    producer: dict[int, Any] = attrs.field(factory=dict)     # value id -> the op that made it
    stack: list[tuple[str, list[int]]] = attrs.field(factory=list)
    openers: list[tuple[str, Any]] = attrs.field(factory=list)  # the regions open at the end: a loop left early

    def use_fault(self, op: Any) -> tuple[Any, Violation] | None:
        """The first use by `op` across a region's edge."""
        depth = len(self.stack)
        for v in op.operands():
            if v.id in self.closed and op.STAGE in ("final", "return"):  # point at the write in the block
                code, block = _FAULTS[self.closed[v.id]]
                guard = code == "RUNTIME-6"
                return self.producer[v.id], Violation(
                    code, f"the kernel's result or an in-out parameter's final contents are made under {block}",
                    label="skipped when the condition is false" if guard else "made anew by every iteration",
                    help="write into the tensor's view instead (`.to_hbm_view(ctx.tdma, out.view_mut())`)"
                         + (", which keeps its contents when skipped" if guard else ""))
            if v.id in self.closed:
                code, block = _FAULTS[self.closed[v.id]]
                return op, Violation(code, f"{v} was made under {block} that has ended",
                                     label="used after the block" if code == "RUNTIME-6" else "used after the loop",
                                     help="write into a tensor made before the block (`commit_view`, "
                                          "`to_dm_view`, `memset`), or move this use into the block")
            if getattr(v.type, "kind", None) in _STREAMS and self.depth_of.get(v.id, 0) < depth \
                    and region_kind(op) is None and not closes_region(op):
                code, _ = _FAULTS[self.stack[-1][0]]
                where = "`ctx.when` block" if code == "RUNTIME-6" else "`ctx.loop` body"
                return op, Violation(code, f"this stream began outside the {where} it continues in",
                                     help="begin the stream inside the block")
        return None

    def record(self, op: Any) -> None:
        """Note what `op` makes, and the regions it opens or closes."""
        depth, kind = len(self.stack), region_kind(op)
        if kind is not None:
            self.stack.append((kind, []))
            self.openers.append((kind, op))
        elif closes_region(op) and self.openers:
            self.openers.pop()
        if op.result is None:
            return
        into, rid = getattr(op, "into", None), op.result.id
        self.producer[rid] = op
        if into is not None:
            self.root_depth[rid] = self.root_depth.get(into.id, self.depth_of.get(into.id, 0))
        self.depth_of[rid] = depth
        if self.stack and kind != "guard":   # a loop's index is its body's (a guard's token is not)
            self.stack[-1][1].append(rid)
        if closes_region(op) and self.stack:
            self.close(rid, depth)

    def close(self, rid: int, depth: int) -> None:
        """A region ends: versions of outer tensors carry out, the rest is closed."""
        ended, made = self.stack.pop()
        for vid in made:
            if self.root_depth.get(vid, depth) < depth:    # a new version of an outer tensor: it carries out
                self.depth_of[vid] = depth - 1
            else:
                self.closed[vid] = ended
        self.closed.pop(rid, None)
        self.depth_of[rid] = len(self.stack)
        if self.stack:
            self.stack[-1][1].append(rid)


def scope_faults(ops: Any) -> Iterator[tuple[Any, Violation]]:
    """(op, violation) for each use across a region's edge (`ir.regions`), in op order:
    RUNTIME-6 for a `ctx.when` block, LOOP-3 for a `ctx.loop` body; LOOP-4 for a loop whose
    body was left by `break` or `return` (never closed)."""
    scopes = _Scopes()
    for op in ops:
        found = scopes.use_fault(op)
        if found is not None:
            yield found
        scopes.record(op)
    for kind, opener in reversed(scopes.openers):
        if kind == "loop":
            yield opener, Violation("LOOP-4", "this rolled loop's body was left by `break` or `return`: the body "
                                    "is traced once, so it cannot stop early", label="never reaches its end",
                                    help="guard the rest of the body with `ctx.when`, or unroll the loop with a "
                                         "Python `for`")
