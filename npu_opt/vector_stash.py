"""The stash in the DSL: `vector_stash()` at a stashable stage (Tag, Logic, Fxp, Narrow, Fp,
FpDiv, Clip), then `Stash` as the operand of one later op: a binary op's (`vector_clip(op,
Stash)`, `vector_logic`, `vector_fxp`, `vector_fp_binary`, `vector_fp_div`, each `_with_mode`
form), FMA_F's first (`vector_fp_ternary(op, (Stash, c))`), or a branched operand's
register-file slot (`Branched.rf(guard, Stash)`, `npu_opt.vector_branch`). Write once, read
once, in that order, never in pair mode (`ir.vector.stash_ops`)."""

from __future__ import annotations

from typing import Any

import attrs

from ir.vector import stash_ops as sops
from ir.diagnostic import Violation
from ir.location import Location
from ir.vector.operands import Stash
from npu_opt.stagebase import Poisoned, emit_op, refuse_dead, stage_method

__all__ = ["Stash", "vector_stash", "stash_step", "held_stash", "spend"]

_SPENT = "spent"


def _refuse(stage: Any, loc: Location, name: str, code: str, message: str, help: str) -> Any:
    return refuse_dead(stage, loc, name, Violation(code, message, help=help))


@stage_method("vector_stash")
def vector_stash(self: Any, loc: Location) -> Any:
    """Snapshot the stream into the stash; one later binary op may read it as `Stash`."""
    if getattr(self.ve, "zipped", False):
        return _refuse(self, loc, "vector_stash", "VE-STASH-5", "`vector_stash` is not available in pair mode",
                       "the stash serves a single stream; keep the value in a VRF tensor, or stash before a "
                       "pair pass in a pass of its own")
    if self.ve.stash is not None:
        return _refuse(self, loc, "vector_stash", "VE-STASH-3", "the stash of this pass is already written",
                       "a pass has one stash, written once: read the first value before writing another "
                       "in a later pass")
    op = emit_op(self, loc, sops.VectorStash)
    return type(self)(op.result, self.chain, attrs.evolve(self.ve, stash=op.result))


def held_stash(stage: Any, loc: Location, name: str) -> Any:
    """The stashed value `name` may read, or the refusal (VE-STASH-1 / VE-STASH-2, poisoned)."""
    held = stage.ve.stash
    if held is None or held == _SPENT:
        code, what = ("VE-STASH-1", "before any `vector_stash`") if held is None else ("VE-STASH-2", "a second time")
        return _refuse(stage, loc, name, code, f"`{name}` reads the stash {what}",
                       "call `vector_stash()` once, earlier in the pass, for each value read as `Stash`; "
                       "a value read twice belongs in a VRF tensor")
    return held


def spend(out: Any) -> Any:
    """`out`, the stream after the op that read the stash, with the stash spent.

    A refused read (VE-ALU-1, ...) returns a `Poisoned` stream, whose every attribute is a
    function: it has no stash to spend and stays as it is."""
    if not isinstance(out, Poisoned) and hasattr(out, "ve"):
        out.ve = attrs.evolve(out.ve, stash=_SPENT)
    return out


def stash_step(stage: Any, loc: Location, name: str, op: Any, step: Any, dst: Any, **fields: Any) -> Any:
    """The stash read of `name` (or `name_with_mode`; `step` is the chain's emitter, `fields`
    the reader's mode and FMA_F's `const1`)."""
    held = held_stash(stage, loc, name)
    if isinstance(held, Poisoned):
        return held
    cls = sops.STASH_READ_OF[name.removesuffix("_with_mode")]
    return spend(step(stage, loc, cls, dst, op.alu, op=op, stashed=held, **fields))
