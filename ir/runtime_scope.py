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

from ir.diagnostic import Violation
from ir.regions import closes_region, region_kind

__all__ = ["scope_faults"]

_STREAMS = ("stream", "cstream")


_FAULTS = {  # kind -> (code, what the block is called)
    "guard": ("RUNTIME-6", "a `ctx.when` block"),
    "loop": ("LOOP-3", "a `ctx.loop` body"),
}


def scope_faults(ops: Any) -> Iterator[tuple[Any, Violation]]:
    """(op, violation) for each use across a region's edge (`ir.regions`), in op order:
    RUNTIME-6 for a `ctx.when` block, LOOP-3 for a `ctx.loop` body."""
    depth_of: dict[int, int] = {}       # value id -> region depth it was made at
    root_depth: dict[int, int] = {}     # value id -> depth of the tensor it is a version of
    closed: dict[int, str] = {}         # made in a region that has ended -> that region's kind
    producer: dict[int, Any] = {}       # value id -> the op that made it
    stack: list[tuple[str, list[int]]] = []
    openers: list[tuple[str, Any]] = []  # the regions open at the end: a loop left early
    for op in ops:
        depth = len(stack)
        for v in op.operands():
            if v.id in closed and op.STAGE in ("final", "return"):  # point at the write in the block
                code, block = _FAULTS[closed[v.id]]
                yield producer[v.id], Violation(
                    code, f"the kernel's result or an in-out parameter's final contents are made under "
                    f"{block}", label="skipped when the condition is false" if code == "RUNTIME-6"
                    else "made anew by every iteration",
                    help="write into the tensor's view instead (`.to_hbm_view(ctx.tdma, out.view_mut())`), "
                         "which keeps its contents when skipped" if code == "RUNTIME-6" else
                         "write into the tensor's view instead (`.to_hbm_view(ctx.tdma, out.view_mut())`)")
                break
            if v.id in closed:
                code, block = _FAULTS[closed[v.id]]
                yield op, Violation(code, f"{v} was made under {block} that has ended",
                                    label="used after the block" if code == "RUNTIME-6" else "used after the loop",
                                    help="write into a tensor made before the block (`commit_view`, "
                                         "`to_dm_view`, `memset`), or move this use into the block")
                break
            if getattr(v.type, "kind", None) in _STREAMS and depth_of.get(v.id, 0) < depth \
                    and region_kind(op) is None and not closes_region(op):
                code, block = _FAULTS[stack[-1][0]]
                yield op, Violation(code, "this stream began outside " + ("the `ctx.when` block it continues in"
                                    if code == "RUNTIME-6" else "the `ctx.loop` body it continues in"),
                                    help="begin the stream inside the block")
                break
        kind = region_kind(op)
        if kind is not None:
            stack.append((kind, []))
            openers.append((kind, op))
        elif closes_region(op) and openers:
            openers.pop()
        if op.result is None:
            continue
        into = getattr(op, "into", None)
        rid = op.result.id
        producer[rid] = op
        if into is not None:
            root_depth[rid] = root_depth.get(into.id, depth_of.get(into.id, 0))
        depth_of[rid] = depth
        if stack and kind is None:
            stack[-1][1].append(rid)
        if closes_region(op) and stack:
            ended, made = stack.pop()
            for vid in made:
                if root_depth.get(vid, depth) < depth:    # a new version of an outer tensor: it carries out
                    depth_of[vid] = depth - 1
                else:
                    closed[vid] = ended
            closed.pop(rid, None)
            depth_of[rid] = len(stack)
            if stack:
                stack[-1][1].append(rid)
    for kind, opener in reversed(openers):
        if kind == "loop":
            yield opener, Violation("LOOP-4", "this rolled loop's body was left by `break` or `return`: the body "
                                    "is traced once, so it cannot stop early", label="never reaches its end",
                                    help="guard the rest of the body with `ctx.when`, or unroll the loop with a "
                                         "Python `for`")
