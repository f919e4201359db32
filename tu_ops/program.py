"""TU programs and the `LoweredKernel` container (docs/reference/diagnostics.md, visa/visa.lark).

A `TuProgram` is one `begin` chain lowered: its context, spatial mappings and ops in order.
A `LoweredKernel` holds the parameters, the body (DMA ops and programs in program order),
the results and the DM / TRF allocations. `verify(target)` runs every op verifier in body
order with a context that lets ops see their neighbours, then the MEM-3 / MEM-4 checks.
"""

from __future__ import annotations

import functools
from typing import Any, ClassVar, Iterator, Union

import attrs

from ir.mapping.nodes import Mapping
from ir.resident import element_bytes
from ir.types import HbmType
from tu_ops.base import OpVerifyError, Ref, TuOp, VerifyContext
from tu_ops.dma import DmaOp
from tu_ops.enums import Region, TuContext
from tu_ops.printing import mapping_text, type_text

__all__ = ["TuProgram", "KernelParam", "resident_ranges", "DmAllocation", "TrfAllocation", "LoweredKernel", "Step", "live_by_step"]


@attrs.frozen(kw_only=True)
class TuProgram:
    """One TU program: `program <i> <MAIN|SUB> space "<Chip>", "<Cluster>", "<Slice>" { ... }`.

    `ops` start with the FeedBuffer and end with the sink (TrfLoad or CommitOp)."""

    NAME: ClassVar[str] = "tu.program"
    index: int
    context: TuContext
    space: tuple[Mapping, Mapping, Mapping] = attrs.field(converter=tuple)
    ops: tuple[TuOp, ...] = attrs.field(converter=tuple)

    @property
    def sink(self) -> TuOp | None:
        """The program's last op (its `to_trf` or `commit`)."""
        return self.ops[-1] if self.ops else None

    @property
    def out_space(self) -> tuple[Mapping, Mapping, Mapping]:
        """The space the program's streams live on after its last record: `space` (after the
        feed's fetch lifts, when it has some), with the Slice of the last record that moves them
        between slices (its class's `SLICE_AFTER`: a feed's switch, the inter-slice reducer)."""
        first = self.ops[0] if self.ops else None
        space = first.fetched_type().spatial() if getattr(first, "lift", None) else self.space
        for op in self.ops:
            moved = op.slice_after(functools.partial(getattr, op))
            space = space if moved is None else (space[0], space[1], moved)
        return space

    def text(self, *, locs: bool = False) -> str:
        space = ", ".join(f'"{mapping_text(m)}"' for m in self.space)
        lines = [f"program {self.index} {self.context.name} space {space} {{"]
        lines += ["  " + op.text(locs=locs) for op in self.ops]
        return "\n".join(lines + ["}"])


Step = Union[DmaOp, TuProgram]


@attrs.frozen
class KernelParam:
    """A kernel parameter: `param %0 "a" : hbm[...]`; an in-out one (`Mut[...]`) prints
    `param %1 "out" inout : hbm[...]`."""

    ref: Ref
    name: str
    type: HbmType
    inout: bool = False
    at: int | None = None  # a resident DM parameter's DM byte address (ir/resident.py): `... : dm[...] at 0`

    def text(self) -> str:
        mode = " inout" if self.inout else ""
        at = "" if self.at is None else f" at {self.at}"
        return f'param {self.ref} "{self.name}"{mode} : {type_text(self.type)}{at}'


def resident_ranges(params: Any) -> list[tuple[int, int]]:
    """The DM byte range [at, at + size) of every resident DM parameter: busy for the whole
    kernel, in every slice (no tensor of the kernel is placed over one)."""
    return [(p.at, p.at + element_bytes(p.type)) for p in params if p.at is not None]


@attrs.frozen(kw_only=True)
class DmAllocation:
    """A DM tensor's byte range `[base, base + size)` in every slice, live over body steps
    `first_step ... last_step` (visa/visa.lark liveness)."""

    tensor: Ref
    base: int
    size: int
    first_step: int
    last_step: int

    def live_at(self, step: int) -> bool:
        return self.first_step <= step <= self.last_step


@attrs.frozen(kw_only=True)
class TrfAllocation:
    """A TRF tensor's rows `[base_row, base_row + rows)` of each of its `lanes` lanes (rows
    counted from row 0 of the TRF), live over body steps `first_step ... last_step`."""

    tensor: Ref
    lanes: int
    base_row: int
    rows: int
    first_step: int
    last_step: int
    region: Region = Region.FULL

    def live_at(self, step: int) -> bool:
        return self.first_step <= step <= self.last_step


def live_by_step(allocations: Any, steps: int) -> list[list[Any]]:
    """The allocations live at each body step `0 .. steps - 1`, in their given order: each
    allocation is visited over its own steps only, not once per step of the kernel."""
    out: list[list[Any]] = [[] for _ in range(steps)]
    for a in allocations:
        for step in range(max(a.first_step, 0), min(a.last_step, steps - 1) + 1):
            out[step].append(a)
    return out


@attrs.frozen(kw_only=True)
class LoweredKernel:
    """A kernel after lowering: the body of the VISA text in program order."""

    name: str
    chip: int = 1
    axes: tuple[tuple[str, int], ...] = attrs.field(default=(), converter=tuple)
    params: tuple[KernelParam, ...] = attrs.field(converter=tuple)
    pe: int = attrs.field(default=8, kw_only=True)  # `@device(pe=P)`; printed only when not 8
    steps: tuple[Step, ...] = attrs.field(converter=tuple)
    results: tuple[Ref, ...] = attrs.field(converter=tuple)
    finals: tuple[Ref, ...] = attrs.field(default=(), converter=tuple)  # per in-out param, in order
    dm_allocations: tuple[DmAllocation, ...] = attrs.field(default=(), converter=tuple)
    trf_allocations: tuple[TrfAllocation, ...] = attrs.field(default=(), converter=tuple)

    # --- walking -------------------------------------------------------------------------

    def programs(self) -> tuple[TuProgram, ...]:
        return tuple(s for s in self.steps if isinstance(s, TuProgram))

    def dma_ops(self) -> tuple[DmaOp, ...]:
        return tuple(s for s in self.steps if isinstance(s, DmaOp))

    def ops(self) -> Iterator[TuOp]:
        """Every op in body order (a program's ops in program order)."""
        for step in self.steps:
            yield from (step.ops if isinstance(step, TuProgram) else (step,))

    def context(self) -> VerifyContext:
        """The verifier context: every op by result id, and the program of each TU op."""
        ops: dict[int, Any] = {}
        programs: dict[int, Any] = {}
        for step in self.steps:
            for op in (step.ops if isinstance(step, TuProgram) else (step,)):
                ops[op.result.id] = op
                if isinstance(step, TuProgram):
                    programs[op.result.id] = step
        return VerifyContext(ops=ops, programs=programs)

    # --- verification --------------------------------------------------------------------

    def verify(self, target: Any) -> None:
        """Run every op verifier in body order, then MEM-3 and MEM-4; the first failure raises."""
        ctx = self.context()
        for op in self.ops():
            op.verify(target, ctx)
        self.verify_memory(target)

    def verify_memory(self, target: Any) -> None:
        """MEM-3 / MEM-4 [L]: live DM (TRF) tensors of a slice fit DM_SLICE_BYTES (TRF_BYTES) at
        every step, and no two live DM tensors share a byte."""
        c = target.constants
        dm_live, trf_live = live_by_step(self.dm_allocations, len(self.steps)), \
            live_by_step(self.trf_allocations, len(self.steps))
        for step in range(len(self.steps)):
            live = dm_live[step]
            total = sum(-(-a.size // 8) * 8 for a in live)
            if total > c.DM_SLICE_BYTES:
                raise OpVerifyError(f"step {step}: live DM tensors need {total} bytes per slice, more than "
                                    f"{c.DM_SLICE_BYTES}", code="MEM-3", op=self._step_op(step))
            for i, a in enumerate(live):
                for b in live[i + 1:]:
                    if a.base < b.base + b.size and b.base < a.base + a.size:
                        raise OpVerifyError(f"step {step}: DM tensors {a.tensor} and {b.tensor} overlap",
                                            code="MEM-3", op=self._step_op(step))
            trf = sum(a.lanes * a.rows * c.FLIT_BYTES for a in trf_live[step])
            if trf > c.TRF_BYTES:
                raise OpVerifyError(f"step {step}: live TRF tensors need {trf} bytes per slice, more than "
                                    f"{c.TRF_BYTES}", code="MEM-4", op=self._step_op(step))

    def _step_op(self, step: int) -> TuOp | None:
        s = self.steps[step]
        return s.sink if isinstance(s, TuProgram) else s

    # --- text ----------------------------------------------------------------------------

    def body_text(self, *, locs: bool = False) -> str:
        """The body section of the VISA text (visa/visa.lark item 4), ending in `return`."""
        lines = [s.text(locs=locs) for s in self.steps]
        lines.append("return" + ("" if not self.results else " " + ", ".join(str(r) for r in self.results)))
        return "\n".join(lines)
