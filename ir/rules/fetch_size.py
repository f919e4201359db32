"""FETCH-11: a fetch has a legal fetch size once its Fetch Adapter's widening is known
(`ir.rules.read_plan.sized_read`, docs/machine/fetch.md).

A read narrower than one 8-byte SRAM access word is legal when the adapter widens it back
to whole words (i8 -> i32 from 2 bytes); without the widening it is not. The widening is
fixed only at `collect`, after the adapters, so the rule runs over a traced kernel: every
sound `collect` is followed back to its `fetch` (and lifts) and `begin`. It governs reads
of a contiguous run; a packet whose innermost loop is strided is npu-opt's own extension,
read one element per access (FEED-7), which furiosa-opt refuses altogether.
"""

from __future__ import annotations

from typing import Any, Iterator

from ir.boundary import TargetRef, target_facts
from ir.diagnostic import Violation
from ir.rules.fetch import bytes_text
from ir.rules.read_plan import ReadPlan, match_read, read_run, sized_read

__all__ = ["fetch_size_faults"]


def fetch_size_faults(ops: list[Any], poisoned: set[int], target: TargetRef = None) -> Iterator[tuple[Any, Violation]]:
    """(fetch op, FETCH-11) for every collect, not refused already, whose fetch has no legal size."""
    producer = {op.result.id: op for op in ops if op.result is not None}
    facts = target_facts(target)  # a name or None: the dtype's own width
    known = facts.bits_of if facts is not None else None
    bits = (lambda d: (known(d) if known is not None else None) or d.bits)  # noqa: E731
    for op in ops:
        if op.STAGE != "collect" or op.result.id in poisoned:
            continue
        chain = [op]
        while chain[-1].STAGE not in ("begin", "begin_interleaved"):
            src = getattr(chain[-1], "input", None)
            if src is None or src.id not in producer:
                break
            chain.append(producer[src.id])
        begin, fetch = chain[-1], next((o for o in chain if o.STAGE == "fetch"), None)
        if fetch is None or begin.STAGE not in ("begin", "begin_interleaved"):
            continue
        lifts = [o for o in chain if o.STAGE.endswith("_lift")]
        t = begin.result.type
        plan = match_read(t.time, t.packet, lifts[0].out_time if lifts else fetch.time, fetch.packet)
        if not isinstance(plan, ReadPlan):
            continue
        if plan.innermost_packet.stride != 1:  # a strided packet, read element by element (FEED-7)
            continue
        d, out = t.dtype, op.input.type.dtype
        if sized_read(plan, t.context, bits(d), bits(out)) is None:
            yield fetch, _violation(t.context, d, out, read_run(plan), bits)


def _violation(context: str, d: Any, out: Any, run: int, bits: Any) -> Violation:
    word = "an 8-byte read" if context == "sub" else "one 8-byte SRAM word"
    return Violation("FETCH-11", f"no legal fetch size reads this packet: its contiguous run is "
                     f"{bytes_text(run, d)}, and the Fetch Adapter leaves each element {bits(out)} bits wide",
                     label=f"a fetch narrower than {word} must widen back to whole 8-byte words, and fit one flit",
                     notes=(f"fetch sizes of ctx.{context}: " + ("8 bytes (4 for i4 -> i32)" if context == "sub"
                                                                  else "1, 2, 4, 8, 16 or 32 bytes"),),
                     help=f"make the packet's innermost run at least 8 bytes of contiguous {d}, or widen it "
                          "with `fetch_cast` (i8 -> i32 from 2 bytes, bf16 -> f32 from 4)")
