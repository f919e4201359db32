"""The Fetch sequencer's read plan (docs/machine/fetch.md) and its fetch size (FETCH-11),
computed once here for the rules (ir/rules/fetch.py, ir/rules/fetch_size.py) and the
lowering's FeedBuffer (tu_ops/feed.py, tu_ops/feed_fields.py), so nobody recomputes them
differently.
"""

from __future__ import annotations

import functools
import math

import attrs

from ir.errors import MappingError
from ir.mapping.factors import PaddingFactor
from ir.mapping.nodes import Mapping, PaddingKind
from ir.mapping.ops import Entry, coalesce
from ir.mapping.sequence import SequenceFailure, sequence
from ir.types import SUB, StreamType

__all__ = ["FLIT_BITS", "MAIN_FETCH_BYTES", "SUB_ACCESS_BYTES", "ReadPlan", "fetch_read_plan", "fetch_volume",
           "match_read", "read_run", "sized_read"]

SUB_ACCESS_BYTES = 8  # the sub context reads exactly 8 bytes per DM access (one SRAM access word)
MAIN_FETCH_BYTES = (1, 2, 4, 8, 16, 32)  # the fetch sizes the main context's Fetch Unit offers
FLIT_BITS = 256


@attrs.frozen
class ReadPlan:
    """The Fetch sequencer config: `sequence(memory = [Tin, Pin], stream = [time, packet])`,
    time and packet entries each coalesced separately, size-1 entries dropped. Strides are
    in DM elements (cells of the input's joint mapping), 0 for a broadcast factor.

    examples/gemm.py's main fetch prints as `[32 : 64, 4 : 0 | 64 : 1]`.

    `over_read`: when the packet ends in plain `#` padding around a contiguous run (`C # 8`:
    `4 : 0, 2 : 1`), its entries with the padding read as the memory after the run (`8 : 1`),
    the read furiosa-opt makes of such a packet; the padding's values are unspecified either
    way. None for any other packet."""

    time_entries: tuple[Entry, ...]
    packet_entries: tuple[Entry, ...]
    over_read: tuple[Entry, ...] | None = attrs.field(default=None, eq=False)

    @property
    def entries(self) -> tuple[Entry, ...]:
        """All entries, outer to inner: the time entries, then the packet entries."""
        return self.time_entries + self.packet_entries

    @property
    def packet_elems(self) -> int:
        """size(packet): elements one time step delivers (broadcast copies included)."""
        return math.prod(e.size for e in self.packet_entries)

    @property
    def innermost_packet(self) -> Entry:
        """The innermost packet entry `(n : s)`; a packet of size 1 has none and counts as
        `(1 : 1)` (FETCH-8, FETCH-10)."""
        return self.packet_entries[-1] if self.packet_entries else Entry(1, 1)

    def __str__(self) -> str:
        t = ", ".join(f"{e.size} : {e.stride}" for e in self.time_entries)
        p = ", ".join(f"{e.size} : {e.stride}" for e in self.packet_entries)
        return f"[{t + ' ' if t else ''}|{' ' + p if p else ''}]"


@functools.lru_cache(maxsize=4096)
def match_read(tin: Mapping, pin: Mapping, time: Mapping, packet: Mapping) -> ReadPlan | SequenceFailure:
    """The read plan of reading `[tin, pin]` as `[time, packet]`, or the SequenceFailure that
    makes the fetch unplaceable (FETCH-2). Never raises for user mappings."""
    try:
        found = sequence([tin, pin], [time, packet])
    except MappingError as e:
        return SequenceFailure(e.detail.splitlines()[0])
    if not found:
        return found
    t, p = found.coalesced()
    return ReadPlan(t, p, _over_read(found.levels[-1], found.pieces[-1]))


def _over_read(entries: tuple[Entry, ...], pieces: tuple) -> tuple[Entry, ...] | None:
    """The packet entries with a plain `#` padding factor read as memory: the padding must
    wrap the packet's innermost contiguous run (everything inner to it coalesces to one
    `(n : 1)` entry)."""
    for i in range(len(pieces) - 1, -1, -1):
        f = pieces[i]
        if isinstance(f, PaddingFactor):
            inner = coalesce(entries[i + 1:])
            if f.kind is not PaddingKind.TOP or len(inner) != 1 or inner[0].stride != 1:
                return None
            return coalesce(entries[:i]) + (Entry(f.extent * inner[0].size, 1),)
    return None


def fetch_read_plan(stream_in_type: StreamType, time: Mapping, packet: Mapping) -> ReadPlan | None:
    """The read plan of `.fetch(time, packet)` on a stream of type `stream_in_type` (after
    `begin`, `Tin = 1` and `Pin` is the DM element), or None when FETCH-2 refuses it.

    Example 4's weight fetch (DM `N % 32, K`, `K = 128`, time `N % 8, N / 8 % 4`, packet `K`)
    is time `[8 : 128, 4 : 1024]`, packet `[128 : 1]`."""
    plan = match_read(stream_in_type.time, stream_in_type.packet, time, packet)
    return plan if isinstance(plan, ReadPlan) else None


def read_run(plan: ReadPlan) -> int:
    """The elements one fetch may tile: the innermost packet entry when it is contiguous, else 1."""
    inner = plan.innermost_packet
    return inner.size if inner.stride == 1 else 1


def fetch_volume(context: str, in_bits: int, out_bits: int, run: int) -> int | None:
    """The widest legal fetch of a read, in elements, or None (FETCH-11, docs/machine/fetch.md).
    A fetch of `size` bytes (main: 1 ... 32; sub: 8, or 4 for i4 -> i32) holds whole
    elements; widened to `out_bits` by the Fetch Adapter they fit one flit and, for a fetch
    narrower than one 8-byte SRAM word, are whole words again; and they tile `run`."""
    if context == SUB:
        sizes = (4,) if (in_bits, out_bits) == (4, 32) else (SUB_ACCESS_BYTES,)
    else:
        sizes = MAIN_FETCH_BYTES
    best = None
    for size in sizes:
        n, rest = divmod(size * 8, in_bits)
        wide = n * out_bits
        if not rest and 0 < wide <= FLIT_BITS and (size >= SUB_ACCESS_BYTES or wide % (8 * SUB_ACCESS_BYTES) == 0) \
                and run % n == 0:
            best = max(best or 0, n)
    return best


def sized_read(plan: ReadPlan, context: str, in_bits: int, out_bits: int) -> tuple[ReadPlan, int] | None:
    """The read a fetch makes and its fetch size in elements (FETCH-11): the plan as it is
    when a legal fetch size reads it, else its over-read (`ReadPlan.over_read`: `C # 8` of
    `i8` read as 8 bytes, not 2) when one reads that; None when neither has a legal size."""
    reads = [plan] if plan.over_read is None else [plan, ReadPlan(plan.time_entries, plan.over_read)]
    for read in reads:
        n = fetch_volume(context, in_bits, out_bits, read_run(read))
        if n is not None:
            return read, n
    return None

