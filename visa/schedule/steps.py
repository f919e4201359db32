"""The schedulable steps of an artifact: what each body step occupies, touches and costs.

A step is one body step of the kernel: a `dma` record (on the DMA context) or a
`program` (on its MAIN or SUB context, its records pipelined on their engines). Each
step names the memory locations it reads and writes (HBM tensors; DM byte ranges of a
slice; TRF rows), the resources it claims (its context; `tdma` too when its DM accesses
break the 64-consecutive-same-bank rule; the DM banks it holds; shared engines) and its
duration in cycles.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import attrs

from ir.errors import InternalError
from tu_ops.bank_runs import BankRun, feed_bank_run, longest_bank_run
from tu_ops.dma import DmaOp
from tu_ops.dma_cost import DmaCost, dma_cost
from tu_ops.lower.vrf_alloc import vrf_placement
from tu_ops.program import LoweredKernel, TuProgram
from tu_ops.vrf_memory import vrf_words
from visa.cost import record_cost
from visa.facts import resident_allocations
from visa.schedule.rates import Rates

if TYPE_CHECKING:
    from tu_ops.target import Target

__all__ = ["Access", "Record", "Step", "build_steps", "mac_peak", "DMA_CONTEXT"]

DMA_CONTEXT = "tdma"


Allocs = tuple[dict[int, Any], dict[int, Any], dict[int, tuple[int, int]]]
"""The DM and TRF allocations and the VRF words of the kernel's tensors, by result id."""


@attrs.frozen
class Access:
    """A read or write of `[lo, hi)` in memory `space` ("hbm:%n", "dm", "trf") by `ref`."""

    space: str
    lo: int
    hi: int
    write: bool
    ref: str

    def text(self) -> str:
        where = self.space if self.space.startswith(("hbm", "spm")) else f"{self.space}[{self.lo}, {self.hi})"
        return f"{where} ({self.ref})"


@attrs.frozen
class Record:
    """One VISA record inside a step: its value, mnemonic, engine, busy cycles, text and location."""

    ref: str
    mnemonic: str
    engine: str
    cycles: int
    text: str
    loc: str | None


@attrs.frozen
class Step:
    """One schedulable body step."""

    index: int
    label: str
    context: str
    duration: int
    records: tuple[Record, ...]
    accesses: tuple[Access, ...]
    claims: tuple[str, ...]
    bank_run: BankRun | None = None
    dma: DmaCost | None = None
    macs: int = 0
    mac_peak: int = 0
    slice_dm_bytes: int = 0
    startup: int = 0           # cycles before its records stream (a program's command start-up)
    trf_blocks: int = 0        # cycles its TRF reads hold banks a concurrent store needs (`trf_read_blocks`)


def _loc(op: Any) -> str | None:
    return None if op.loc is None else f"{op.loc.file}:{op.loc.line}:{op.loc.col or 1}"


def _record(op: Any, rates: Rates, target: Target) -> Record:
    """The record of `op` on the engine its class declares, busy for the cycles it declares."""
    if op.ENGINE is None:
        raise InternalError(f"record class {type(op).__name__} declares no engine")
    return Record(ref=str(op.result), mnemonic=op.MNEMONIC, engine=op.ENGINE.name,
                  cycles=op.busy_cycles(rates, target), text=op.text(), loc=_loc(op))


def _side(ref: Any, t: Any, alloc: Any, write: bool) -> Access:
    if t.kind == "hbm":
        return Access(f"hbm:{ref}", 0, 1, write, str(ref))
    lo = alloc.base if alloc is not None else 0
    return Access("dm", lo, lo + (alloc.size if alloc is not None else 1), write, str(ref))


def _record_step(index: int, op: Any, rates: Rates, target: Target, accesses: tuple[Access, ...],
                 dma: DmaCost | None = None) -> Step:
    """The step of a record outside programs: on the DMA context, busy for its record's cycles."""
    record = _record(op, rates, target)
    return Step(index=index, label=str(op.result), context=DMA_CONTEXT, duration=record.cycles, records=(record,),
                accesses=accesses, claims=(DMA_CONTEXT,), dma=dma)


def _dma_step(index: int, op: DmaOp, rates: Rates, target: Target) -> Step:
    accesses = (_side(op.src, op.input_type, op.src_alloc, False),
                _side(op.result, op.output_type, op.dst_alloc, True))
    if getattr(op, "into", None) is not None:  # dma_into also reads the tensor it updates
        accesses += (_side(op.into, op.output_type, None, False),)
    if getattr(op, "count", None) is not None:  # a runtime sparse prefix reads its scalar (as `_runtime_step`)
        accesses += (Access(f"spm:{op.count}", 0, 1, False, str(op.count)),)
    return _record_step(index, op, rates, target, accesses, dma_cost(op, rates))  # its cycles' breakdown: the report's


def commit_bank_run(op: Any, target: Target) -> BankRun:
    """The longest same-bank run of a commit's DM writes (one write per time step)."""
    bits = target.bits_of(op.output_type.dtype) or op.output_type.dtype.bits
    loops = tuple((e.size, e.stride * bits // 8) for e in op.write.time if e.size > 1)
    return longest_bank_run(loops, op.dest)


def _program_accesses(program: TuProgram, allocs: Allocs, target: Target) -> tuple[Access, ...]:
    dm, trf, vrf = allocs
    out: list[Access] = []
    for op in program.ops:
        if op.MNEMONIC == "vrf_load" and op.result.id in vrf:
            out.append(Access("vrf", *vrf[op.result.id], True, str(op.result)))
        for ref in getattr(op, "rf", ()) if hasattr(op, "rf_read") else ():  # a pass reading the VRF
            if ref.id in vrf:
                out.append(Access("vrf", *vrf[ref.id], False, str(ref)))
        if op.MNEMONIC == "feed_buffer":
            a = dm.get(op.source.tensor.id)
            lo = a.base if a is not None else (op.source_base or 0)
            out.append(Access("dm", lo, lo + (a.size if a is not None else 1), False, str(op.source.tensor)))
        elif op.MNEMONIC == "contract_outer":
            a = trf.get(op.weights.id)
            if a is not None:
                out.append(Access("trf", a.base_row, a.base_row + a.rows, False, str(op.weights)))
        elif op.MNEMONIC == "trf_load":
            first, end = op.occupied_rows(target)
            out.append(Access("trf", first, end, True, str(op.result)))
        elif op.MNEMONIC == "commit":
            out.append(Access("dm", op.dest, op.dest + op.alloc_bytes(target), True, str(op.result)))
    return tuple(out)


def _bank_runs(program: TuProgram, target: Target) -> list[BankRun]:
    runs = []
    for op in program.ops:
        run = feed_bank_run(op, target) if op.MNEMONIC == "feed_buffer" else \
            commit_bank_run(op, target) if op.MNEMONIC == "commit" else None
        if run is not None:
            runs.append(run)
    return runs


def mac_peak(rates: Rates, bits: int) -> int:
    """MACs per cycle of one slice's contraction engine on `bits`-bit operands: each lane
    multiplies a contraction packet with its TRF row, `packets_per_cycle` packets a cycle (the
    rate a `contract_outer` record's cycles count)."""
    per_lane = int(rates("tensor_unit", "contraction_packet_bytes")) * 8 // bits
    return int(rates("tensor_unit", "contraction_lanes")) * per_lane * int(rates("tensor_unit", "packets_per_cycle"))


TRF_CACHE_ROWS = 8
"""Rows of one lane (32 bytes each, one bank) the TRF read cache holds: 4 rows x 2 banks (the
reference's register-files chapter, "Double Buffering": 8 lanes x 2 banks x 4 rows x 320 bits)."""


def trf_read_blocks(op: Any, rows: int) -> int:
    """Cycles a `contract_outer` reading a `rows`-row TRF operand keeps a concurrent store off
    the banks (the reference's register-files chapter, "Double Buffering"): a read wins its bank
    over a store; a read the cache holds leaves the bank free; a wide read (64 bytes, both banks)
    blocks the store for each miss; narrow reads alternate the two banks, so a store keeps half
    its rate over their misses. One read a cycle (`busy_cycles`); an operand the cache holds
    misses once a row (pair of rows for a wide read); a larger one on every read."""
    reads = op.output_type.time.size
    wide = op.trf_read.width.value == "wide"
    misses = reads if rows > TRF_CACHE_ROWS else min(reads, -(-rows // 2) if wide else rows)
    return misses if wide else -(-misses // 2)


def _trf_blocks(program: TuProgram, trf: dict[int, Any], target: Target) -> int:
    return sum(trf_read_blocks(op, trf[op.weights.id].rows) for op in program.ops
               if op.MNEMONIC == "contract_outer" and op.weights.id in trf)


def _mac_peak(op: Any, rates: Rates, target: Target) -> int:
    """MACs per cycle per slice the contraction engine can reach with this op's stream dtype."""
    return mac_peak(rates, target.bits_of(op.input_type.dtype) or 8)


def _program_step(index: int, program: TuProgram, allocs: Allocs, rates: Rates, target: Target) -> Step:
    records = tuple(_record(op, rates, target) for op in program.ops)
    context = program.context.name.lower()
    runs = _bank_runs(program, target)
    longest = max(runs, key=lambda r: r.length, default=None)
    claims = [context]
    if longest is not None and longest.length >= target.constants.BANK_RUN_LIMIT:
        claims.append(DMA_CONTEXT)
    hold = rates("dm", "bank_hold_run")
    claims += sorted({f"bank{r.bank}" for r in runs if r.length >= hold})
    claims += sorted({op.ENGINE.name for op in program.ops if op.ENGINE.shared})
    costs = [record_cost(op, target) for op in program.ops]
    macs = sum(c["mac_ops"] for c in costs)
    dm_bytes = sum(c["dm_read_bytes"] + c["dm_write_bytes"] for c in costs)
    peak = max((_mac_peak(op, rates, target) for op in program.ops if op.MNEMONIC == "contract_outer"), default=0)
    startup = int(rates("tensor_unit", "command_startup_cycles"))
    return Step(index=index, label=f"program {program.index}", context=context,
                duration=startup + max((r.cycles for r in records), default=0), records=records, startup=startup,
                accesses=_program_accesses(program, allocs, target), claims=tuple(claims), bank_run=longest,
                macs=macs, mac_peak=peak, slice_dm_bytes=dm_bytes, trf_blocks=_trf_blocks(program, allocs[1], target))


def build_steps(kernel: LoweredKernel, rates: Rates, target: Target) -> list[Step]:
    """The steps of `kernel` (with its allocation facts derived), in body order."""
    allocs = ({a.tensor.id: a for a in (*kernel.dm_allocations, *resident_allocations(kernel))},
              {a.tensor.id: a for a in kernel.trf_allocations}, vrf_regions(kernel))
    for s in kernel.steps:  # a relabel names its tensor's words (tu_ops.rf_reshape): its readers read them
        if not isinstance(s, TuProgram) and s.MNEMONIC == "rf_reshape":
            for held in allocs[1:]:
                if s.input.id in held:
                    held[s.result.id] = held[s.input.id]
    return [_dma_step(i, s, rates, target) if isinstance(s, DmaOp) else
            _runtime_step(i, s, rates, target) if getattr(s, "RUNTIME", False) else
            _new_step(i, s, rates, target, allocs) if not isinstance(s, TuProgram) else
            _program_step(i, s, allocs, rates, target)
            for i, s in enumerate(kernel.steps)]


def _new_step(index: int, op: Any, rates: Rates, target: Target, allocs: Allocs) -> Step:
    """`tensor_new`, `memset`: a record on the DMA context that writes its tensor (the model
    counts the cycles its class declares: none) where its allocation placed it; `rf_reshape`
    one that touches no memory."""
    dm, trf, vrf = allocs
    ref = op.result.id
    if op.MNEMONIC == "rf_reshape":  # writes nothing, reads nothing: a name for its tensor's words
        return _record_step(index, op, rates, target, ())
    side = Access("vrf", *vrf[ref], True, str(op.result)) if ref in vrf else \
        Access("trf", trf[ref].base_row, trf[ref].base_row + trf[ref].rows, True, str(op.result)) if ref in trf else \
        _side(op.result, op.output_type, dm.get(ref), True)
    return _record_step(index, op, rates, target, (side,))


def vrf_regions(kernel: LoweredKernel) -> dict[int, tuple[int, int]]:
    """[first, end) words of every VRF tensor (by result id) as the allocation places it: the
    register file is one per slice, shared by the contexts, and the allocation reuses the words
    of a tensor whose last reader came earlier in the body, so a later load must wait for that
    reader (WAR) as a reader waits for its load (RAW)."""
    base = vrf_placement(kernel)
    makers = {op.result.id: op for s in kernel.steps for op in (s.ops if isinstance(s, TuProgram) else (s,))
              if op.result is not None and op.result.id in base}
    return {ref: (lo, lo + (vrf_words(makers[ref]) or 1)) for ref, lo in base.items()}



def _runtime_step(index: int, op: Any, rates: Rates, target: Target) -> Step:
    """A scalar or guard record (docs/runtime.md) in the DMA context's order: it reads its
    operands and writes its result in the scalar memory (`spm:%n`). The model schedules
    guarded steps as if the guard holds, the worst case, and lets them start without
    waiting for the condition."""
    reads = tuple(Access(f"spm:{ref}", 0, 1, False, str(ref)) for ref in op.operands())
    return _record_step(index, op, rates, target, (*reads, Access(f"spm:{op.result}", 0, 1, True, str(op.result))))
