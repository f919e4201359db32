"""RUNTIME-6: what a runtime guard's block may hand to the ops after it (docs/runtime.md).

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
from ir.runtime_ops import GuardBegin, GuardEnd

__all__ = ["scope_faults"]

_STREAMS = ("stream", "cstream")


def scope_faults(ops: Any) -> Iterator[tuple[Any, Violation]]:
    """(op, RUNTIME-6 violation) for each use across a guard's edge, in op order."""
    depth_of: dict[int, int] = {}       # value id -> guard depth it was made at
    root_depth: dict[int, int] = {}     # value id -> depth of the tensor it is a version of
    closed: set[int] = set()            # made in a block that has ended
    producer: dict[int, Any] = {}       # value id -> the op that made it
    stack: list[list[int]] = []
    for op in ops:
        depth = len(stack)
        for v in op.operands():
            if v.id in closed and op.STAGE in ("final", "return"):  # point at the write in the block
                yield producer[v.id], Violation(
                    "RUNTIME-6", "the kernel's result or an in-out parameter's final contents are made under "
                    "a `ctx.when` block", label="skipped when the condition is false",
                    help="write into the tensor's view instead (`.to_hbm_view(ctx.tdma, out.view_mut())`), "
                         "which keeps its contents when skipped")
                break
            if v.id in closed:
                yield op, Violation("RUNTIME-6", f"{v} was made under a `ctx.when` block that has ended",
                                    label="used after the block",
                                    help="write into a tensor made before the block (`commit_view`, "
                                         "`to_dm_view`, `memset`), or move this use into the block")
                break
            if getattr(v.type, "kind", None) in _STREAMS and depth_of.get(v.id, 0) < depth \
                    and not isinstance(op, (GuardBegin, GuardEnd)):
                yield op, Violation("RUNTIME-6", "this stream began outside the `ctx.when` block it continues in",
                                    help="begin the stream inside the block")
                break
        if isinstance(op, GuardBegin):
            stack.append([])
        if op.result is None:
            continue
        into = getattr(op, "into", None)
        rid = op.result.id
        producer[rid] = op
        if into is not None:
            root_depth[rid] = root_depth.get(into.id, depth_of.get(into.id, 0))
        depth_of[rid] = depth
        if stack and not isinstance(op, GuardBegin):
            stack[-1].append(rid)
        if isinstance(op, GuardEnd) and stack:
            made = stack.pop()
            for vid in made:
                if root_depth.get(vid, depth) < depth:    # a new version of an outer tensor: it carries out
                    depth_of[vid] = depth - 1
                else:
                    closed.add(vid)
            closed.discard(rid)
            depth_of[rid] = len(stack)
            if stack:
                stack[-1].append(rid)
