"""The rules of a lowered kernel's rolled loops (docs/loops.md): LOOP-5 and LOOP-6, which the
VISA verifier (`visa.verify`) runs on every artifact.

A `loop_begin` ... `loop_end` bracket (`ir.regions`) holds one body that runs once per index
value. The verifier checks it once for all of them, as the trace's rules do:

- LOOP-5: the brackets nest with the guards' (`loop_end` closes the innermost open region,
  which is its `loop_begin`), and every loop is closed before `return`;
- LOOP-6: a runtime start (a DMA's `src_start` / `dst_start`, a feed's or a commit's `start`) built
  from loop indices stays in `0 ..= *_start_limit` at the indices' extremes
  (`ir.loop_affine`), and is affine in them; and no buffer made in a body overlaps a
  tensor that lives across the loop's back edge (`loop_facts`).

`loop_facts` derives the dependences across iterations: a tensor made before the loop and
written in the body (carried: the next iteration reads the last version, a read after
write across the back edge), a buffer made in the body (one allocation, reused by every
iteration: its writes come after the previous iteration's reads and writes), and the
tensors every iteration reads.
"""

from __future__ import annotations

from typing import Any

import attrs

from ir.loop_affine import UNPROVEN, Index, combine, index_form, range_fault
from ir.regions import Region, carried, closes_region, loops, region_kind
from tu_ops.base import OpVerifyError
from tu_ops.program import TuProgram

__all__ = ["LoopFacts", "loop_facts", "check_loops"]


@attrs.frozen
class LoopFacts:
    """The dependences of one loop across its back edge (value ids)."""

    region: Region
    carried: dict[int, int]          # RAW: tensor made before the loop -> its last version in the body
    reused: tuple[int, ...]          # WAR/WAW: DM tensors made in the body, one allocation for every iteration
    read_each: tuple[int, ...]       # DM tensors made before the loop and read by every iteration


def loop_facts(kernel: Any) -> list[LoopFacts]:
    """The facts of every loop of a kernel with its allocations (`dm_allocations`, which
    `visa.facts.with_facts` derives from the records)."""
    out = []
    for r in loops(kernel.steps):
        body = [a.tensor.id for a in kernel.dm_allocations if r.begin < a.first_step < r.end]
        across = [a.tensor.id for a in kernel.dm_allocations if a.first_step < r.begin < a.last_step]
        out.append(LoopFacts(r, carried(kernel.steps, r), tuple(body), tuple(across)))
    return out


def _fail(op: Any, code: str, message: str) -> OpVerifyError:
    notes = (f"in op `{op.text()}`",) if op is not None else ()
    return OpVerifyError(message, code=code, op=op, loc=getattr(op, "loc", None), notes=notes)


def _brackets(kernel: Any) -> None:
    """LOOP-5: loop brackets pair up with the innermost open region."""
    stack: list[Any] = []
    for step in kernel.steps:
        if region_kind(step) is not None:
            stack.append(step)
        elif closes_region(step) and step.MNEMONIC == "loop_end":
            if not stack or stack[-1].MNEMONIC != "loop_begin" or stack[-1].result != step.begin:
                inner = stack[-1].result if stack else None
                raise _fail(step, "LOOP-5", f"loop_end closes {step.begin}, but the innermost open region is {inner}")
            stack.pop()
        elif closes_region(step) and stack:
            stack.pop()
    for step in stack:
        if step.MNEMONIC == "loop_begin":
            raise _fail(step, "LOOP-5", "this loop is never closed by a loop_end")


def _starts(step: Any) -> list[tuple[Any, str, Any, int]]:
    """(record, field, start ref, largest start) of each runtime start a step reads."""
    found = []
    for op in (step.ops if isinstance(step, TuProgram) else (step,)):
        for side in ("src", "dst"):
            ref = getattr(op, f"{side}_start", None)
            if ref is not None:
                found.append((op, f"{side}_start", ref, getattr(op, f"{side}_start_limit")))
        if op.MNEMONIC in ("feed_buffer", "commit") and getattr(op, "start", None) is not None:
            found.append((op, "start", op.start, op.start_limit))
    return found


def _ranges(kernel: Any) -> None:
    """LOOP-6 for a runtime start no check covers, or out of range for some iteration."""
    forms: dict[int, Any] = {}
    spans = loops(kernel.steps)
    for i, step in enumerate(kernel.steps):
        mnemonic = getattr(step, "MNEMONIC", None)
        if mnemonic == "loop_begin":
            last = None if step.stop is None else step.stop - 1
            forms[step.result.id] = index_form(Index(step.result.id, step.start, last, str(step.result)))
        elif mnemonic == "scalar":
            rhs = forms.get(step.rhs.id) if step.rhs is not None else None
            forms[step.result.id] = combine(step.op.name, forms.get(step.lhs.id), rhs, step.imm,
                                            step.output_type.dtype.name == "usize")
        if not any(r.holds(i) for r in spans):
            continue
        for op, field, ref, limit in _starts(step):
            form = forms.get(ref.id)
            if form is UNPROVEN:
                raise _fail(op, "LOOP-6", f"{field}={ref} is built from a loop index in a way no check covers "
                                          "for every iteration")
            fault = range_fault(form, limit)
            if fault is not None:
                raise _fail(op, "LOOP-6", f"{field}={ref} {fault}")


def _reuse(kernel: Any) -> None:
    """LOOP-6 for a buffer made in a body over a tensor that lives across the back edge."""
    by_id = {a.tensor.id: a for a in kernel.dm_allocations}
    ops = {op.result.id: op for op in kernel.ops()}
    for facts in loop_facts(kernel):
        for made in facts.reused:
            a = by_id[made]
            for kept in facts.read_each:
                b = by_id[kept]
                if a.base < b.base + b.size and b.base < a.base + a.size:
                    raise _fail(ops.get(made), "LOOP-6", f"{a.tensor}, made in the loop body, overlaps {b.tensor} "
                                f"(DM bytes [{b.base}, {b.base + b.size})), which every iteration reads: the next "
                                "iteration would read what this one wrote over it")


def check_loops(kernel: Any) -> None:
    """Raise OpVerifyError (LOOP-5, LOOP-6) at the first loop rule the kernel breaks; the
    kernel carries its allocations (`dm_allocations`)."""
    if not any(getattr(s, "MNEMONIC", None) in ("loop_begin", "loop_end") for s in kernel.steps):
        return
    _brackets(kernel)
    _ranges(kernel)
    _reuse(kernel)
