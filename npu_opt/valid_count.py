"""`commit_valid_count_pack()` and the packed `commit`: the sub context's dense write.

After `commit_trim`, `commit_valid_count_pack()` keeps the leading cells of every flit the
Valid Count Generator counts (its live prefix) and `commit(element)` writes them back to
back into a new DM tensor (default: the stream's axes, whole, in order of appearance).
"""

from __future__ import annotations

from typing import Any

from ir.diagnostic import Violation
from ir.location import Location
from ir.mapping.nodes import Mapping
from ir.valid_count_ops import CommitPacked, CommitValidCountPack, default_element
from npu_opt.addresses import DM, at_stage
from npu_opt.stagebase import StreamStage, emit_op, kind_error, refuse_dead, stage_method
from npu_opt.tensor_data import DmTensorData

__all__ = ["commit_valid_count_pack", "CommitValidCountPackStream"]


@stage_method("commit_valid_count_pack")
def commit_valid_count_pack(self: StreamStage, loc: Location, valid_count: Any = None) -> Any:
    """Commit Adapter (sub context): keep each flit's counted prefix for a dense write.

    `valid_count` is the reference's `_valid_count: usize`, which it accepts and discards (its
    record does not store it): a ported call passes it, and here too the counts come from the
    mapping. It must still be a non-negative int (TYPE-6)."""
    if valid_count is not None and (isinstance(valid_count, bool) or not isinstance(valid_count, int)
                                    or valid_count < 0):
        return refuse_dead(self, loc, "commit_valid_count_pack", kind_error(
            f"`valid_count` is a usize (a non-negative int), not {valid_count!r}"))
    return CommitValidCountPackStream(emit_op(self, loc, CommitValidCountPack).result, self.chain)


class CommitValidCountPackStream(StreamStage):
    """After `commit_valid_count_pack`: offers `commit`."""

    @stage_method("commit")
    def commit(self, loc: Location, element: Any = None) -> Any:
        """Write the packed cells back to back into a new DM tensor laid out as `element`."""
        t = self.type
        inferred = element is None
        if inferred:
            element = default_element(t)
        if not isinstance(element, Mapping):
            fault: Violation = kind_error(f"`element` must be a mapping built by m(), not {type(element).__name__}")
            return refuse_dead(self, loc, "commit", fault)
        self.chain.done = True
        return DmTensorData.handle(emit_op(self, loc, CommitPacked, element=element, inferred=inferred).result)

    commit_at = at_stage(commit, "commit_at", DM)  # the packed `commit` at a DM byte address (npu_opt.addresses)
