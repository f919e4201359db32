"""`commit_view(view_mut)` lowered as one commit straight into the view (docs/views.md).

The trace records a `commit_view` as a `commit` into a fresh tensor of the view's element
and a DM -> DM `to_view` copy of it into the view. When the Commit Engine can write the
window itself, the two become one `commit` record with `into=%t view=[...] offset=B`: its
`dest` is the tensor's address plus the window's byte offset, its result is the tensor's
new contents (as a `dma_into`'s), and the copy is gone. The engine writes the same address
in every slice of its program's space with 8-byte aligned pieces (CMT-4, CMT-5), so the
window must be shifted on its Element level only, start on an 8-byte boundary, keep the
tensor's Chip, Cluster and Slice mappings, and the write plan must cover exactly the
window's live cells (the copy writes those and no others). The committed tensor must have
no other reader, and the program must not read the tensor it writes (the copy ran after
the whole program). A window at a runtime start (a tile at a loop index) folds too when one
step of the start moves whole 8-byte units: the commit names the scalar (`start=%k
start_bytes= start_limit=`) and its `dest` moves by `start * start_bytes` when the program
runs. Any other `commit_view` keeps the commit + copy.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ir import ops as ir
from ir.mapping.live import live_positions
from ir.rules.commit_plan import commit_write_plan
from ir.view_ops import Memset, ToView, Window
from tu_ops.base import Ref
from tu_ops.printing import mapping_text

__all__ = ["direct_commit_views", "into_fields"]


def direct_commit_views(kernel: Any, target: Any) -> dict[int, ToView]:
    """The `to_view` copy each committed tensor (by value id) folds into, for every
    `commit_view` whose commit can write the view directly."""
    producer = {op.result.id: op for op in kernel.ops if op.result is not None}
    uses: dict[int, int] = {}
    for op in kernel.ops:
        for v in op.operands():
            uses[v.id] = uses.get(v.id, 0) + 1
    ret = kernel.returns
    for v in (ret.values if ret is not None else ()):
        uses[v.id] = uses.get(v.id, 0) + 2
    for f in kernel.finals:
        uses[f.value.id] = uses.get(f.value.id, 0) + 2
    out: dict[int, ToView] = {}
    for op in kernel.ops:
        commit = producer.get(op.src.id) if isinstance(op, ToView) else None
        if type(commit) is ir.Commit and uses.get(commit.result.id) == 1 and _fits(op, commit, producer, target):
            out[commit.result.id] = op
    return out


def into_fields(op: ToView, refs: dict[int, int], target: Any) -> dict[str, Any]:
    """The CommitOp fields (besides `dest`) of a commit straight into `op`'s view."""
    t = op.into.type
    start = {} if op.start is None else {
        "start": Ref(refs[op.start.id]), "start_limit": op.start_limit,
        "start_bytes": op.start_stride * (target.bits_of(t.dtype) or t.dtype.bits) // 8}
    return {"into": Ref(refs[op.into.id]), "view": op.view.levels(), "offset": _byte_offset(op, target),
            "output_type": t, **start}


def _byte_offset(op: ToView, target: Any) -> int:
    bits = target.bits_of(op.into.type.dtype) or op.into.type.dtype.bits
    return op.offset[-1] * bits // 8


def _fits(op: ToView, commit: ir.Commit, producer: dict[int, Any], target: Any) -> bool:
    t, view = op.into.type, op.view
    if t.kind != "dm" or any(op.offset[:-1]) or _texts(commit.result.type.levels()) != _texts(view.levels()):
        return False
    if _texts(t.levels()[:-1]) != _texts(view.levels()[:-1]) or commit.result.type.dtype != t.dtype:
        return False
    bits = target.bits_of(t.dtype) or t.dtype.bits
    if op.offset[-1] * bits % (8 * target.constants.COMMIT_BASE):
        return False
    if op.start is not None and op.start_stride * bits % (8 * target.constants.COMMIT_BASE):
        return False   # a step of the runtime start keeps the engine's writes 8-byte aligned
    try:
        plan = commit_write_plan(commit.input.type, commit.element)
    except ValueError:
        return False
    written = np.zeros(1, np.int64)
    for e in (*plan.time, *plan.packet):
        written = (written[:, None] + np.arange(e.size, dtype=np.int64)[None, :] * e.stride).reshape(-1)
    if not np.array_equal(np.unique(written), live_positions(view.element)) or written.size != np.unique(written).size:
        return False
    return _storage(op.into.id, producer) not in _fed(commit, producer)


def _texts(levels: Any) -> list[str]:
    return [mapping_text(m) for m in levels]


def _storage(vid: int, producer: dict[int, Any]) -> int:
    """The tensor whose storage value `vid` names (through views, windows and writes into it)."""
    while True:
        op = producer.get(vid)
        if isinstance(op, (ir.View, Window)):
            vid = op.src.id
        elif isinstance(op, (ToView, Memset)) or (getattr(op, "into", None) is not None and op.into.type.kind == "dm"):
            vid = op.into.id
        else:
            return vid


def _fed(commit: ir.Commit, producer: dict[int, Any]) -> set[int]:
    """The tensors the commit's program reads (its `begin` views and every tensor operand)."""
    out: set[int] = set()
    op = commit
    while op is not None:
        for v in op.operands():
            if getattr(v.type, "kind", None) == "dm":
                out.add(_storage(v.id, producer))
        op = producer.get(op.input.id) if getattr(op, "input", None) is not None else None
    return out
