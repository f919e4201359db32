"""W-FETCH-1: a FeedBuffer read that stays on one DM bank too long (docs/machine/fetch.md).

A slice's DM has 16 banks, 8 bytes wide: byte address `a` is in bank `(a >> 3) & 15`
(address bits 3-6). The Fetch sequencer reads its DM tensor at `source_base` + the
element offsets of the read plan, one access per `read_elems` elements, looping over
the time entries and then the packet entries, outer to inner (the innermost packet
entry `(n : s)` becomes `n / read_elems` accesses `s * read_elems` elements apart).
When `BANK_RUN_LIMIT` or more consecutive accesses hit the same bank, concurrent DMA
into that slice's DM may starve (a NoC timeout on hardware): the lowering warns. It is
a warning, never a refusal.

The longest run is computed exactly for any loop sizes with bounded work: bank
equality depends only on addresses modulo 128 bytes, so each loop level is summarised
(length, first/last bank, leading/trailing/longest run) for each sub-bank start offset,
and a loop of `n` iterations folds its iterations' summaries, which repeat with a period
of at most 128 iterations, by repeated squaring (`tu_ops.bank_runs`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ir import ops as ir
from ir.diagnostic import Diagnostic
from tu_ops.bank_runs import BANK_BYTES, BANKS, BankRun, access_loops, feed_bank_run, unit_bits
from tu_ops.bank_runs import feed_bits as _bits
from tu_ops.feed import FeedBuffer
from tu_ops.lower.errors import refusal
from tu_ops.lower.program import layout

__all__ = ["bank_run_warnings"]


def _loops_text(loops: Sequence[tuple[int, int]], per_byte: int) -> str:
    def stride(s: int) -> str:
        return str(s // per_byte) if s % per_byte == 0 else f"{s / per_byte:g}"
    return "[" + ", ".join(f"{n} : {stride(s)}" for n, s in loops) + "]"


def _warning(feed: FeedBuffer, run: BankRun, fetch: ir.Op | None, target: Any) -> Diagnostic:
    limit = target.constants.BANK_RUN_LIMIT
    bits = _bits(feed, target)
    shape = feed.shapes[0]
    per_byte = 8 // unit_bits(bits)
    read_bytes = shape.read_elems * bits // 8
    loops = _loops_text(access_loops(shape, bits), per_byte)
    where = "the whole read" if run.length == run.total else \
        f"accesses {run.start}..{run.start + run.length - 1} of {run.total}"
    loc = fetch.loc if fetch is not None else feed.loc
    return refusal(
        "W-FETCH-1",
        f"this fetch reads DM bank {run.bank} {run.length} times in a row (limit {limit}): concurrent "
        f"DMA into the slice's DM may starve (a NoC timeout on hardware)",
        loc, stage="fetch" if fetch is not None else "begin",
        op=fetch.text() if fetch is not None else feed.text(),
        label=f"{where} fall in bank {run.bank}",
        notes=(f"read plan: {read_bytes}-byte accesses over the loops {loops} (size : stride in bytes, outer "
               f"to inner) from DM byte {feed.source_base or 0}; the bank is address bits 3-6, "
               f"(address >> 3) & 15",),
        help=f"reorder the fetch so that its innermost loop walks contiguous bytes of the DM tensor (the "
             f"element mapping's innermost axis last in the packet), or interleave banks: a stride that is "
             f"not a multiple of {BANKS * BANK_BYTES} bytes, e.g. by padding the DM rows")


def bank_run_warnings(traced: Any, lowered: Any, target: Any) -> tuple[Diagnostic, ...]:
    """W-FETCH-1 for every FeedBuffer of an allocated kernel whose read walks one DM bank
    `BANK_RUN_LIMIT` or more times in a row, at its traced `fetch` (`traced`: the kernel
    the lowering started from, whose programs are `lowered`'s in order)."""
    limit = target.constants.BANK_RUN_LIMIT
    chains = [item for kind, item in layout(traced).steps if kind == "program"]
    programs = lowered.programs()
    out: list[Diagnostic] = []
    for k, program in enumerate(programs):
        feed = next((op for op in program.ops if isinstance(op, FeedBuffer)), None)
        if feed is None:
            continue
        run = feed_bank_run(feed, target)
        if run is None or run.length < limit:
            continue
        chain = chains[k] if len(chains) == len(programs) else None
        fetch = chain.fetch if chain is not None and chain.begin.loc == feed.loc else None
        out.append(_warning(feed, run, fetch, target))
    return tuple(out)
