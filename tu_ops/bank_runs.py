"""Same-bank runs of a DM access sequence (docs/machine/fetch.md; memory-performance: 16 banks x 8 B).

A slice's DM has 16 banks, 8 bytes wide: byte address `a` is in bank `(a >> 3) & 15`
(address bits 3-6). `longest_bank_run` gives the longest run of consecutive accesses
to one bank of the accesses `start + sum(i_k * stride_k)` over loops `(size, stride)`,
exactly and with bounded work: bank equality depends only on addresses modulo 128
bytes, so each loop level is summarised (length, first/last bank, leading/trailing/
longest run) for each sub-bank start offset, and a loop of `n` iterations folds its
iterations' summaries, which repeat with a period of at most 128 iterations, by
repeated squaring. Records-level only: the lowering
(its W-FETCH-1 warning) and the scheduler (its bank rule) both read these.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import attrs

from tu_ops.feed import FeedBuffer, ReadShape

__all__ = ["BankRun", "BANKS", "BANK_BYTES", "access_loops", "longest_bank_run", "feed_bank_run", "feed_bits",
           "start_units", "unit_bits"]

BANKS = 16        # DM banks per slice (docs/machine/index.md: 16 banks x 8 B wide)
BANK_BYTES = 8    # bytes of one bank row: the bank is address bits 3-6

# (length, first bank, last bank, leading run, trailing run, longest run, its bank, its first access)
_Summary = tuple[int, int, int, int, int, int, int, int]


@attrs.frozen
class BankRun:
    """The longest run of consecutive accesses to one bank: `length` accesses to `bank`,
    starting at access number `start` (0-based, in loop order) of `total` accesses."""

    length: int
    bank: int
    start: int
    total: int


def unit_bits(bits: int) -> int:
    """Address unit of the analysis: a byte, or half a byte for 4-bit elements."""
    return math.gcd(bits, 8)


def access_loops(shape: ReadShape, bits: int) -> tuple[tuple[int, int], ...]:
    """The access loops `(size, stride)` of one read shape, outer to inner, strides in address
    units (bytes; half bytes for a 4-bit source): one iteration of the innermost loop is one
    DM access of `read_elems` elements. Size-1 loops are dropped."""
    per_elem = bits // unit_bits(bits)
    entries = [(e.size, e.stride) for e in shape.time + shape.packet]
    r = shape.read_elems
    if r > 1 and shape.packet:
        n, s = entries[-1]
        entries[-1] = (n // r, s * r)
    return tuple((n, s * per_elem) for n, s in entries if n > 1)


def start_units(feed: FeedBuffer, bits: int) -> int:
    """Address (in units) of the first access: the tensor's DM base + the source's element offset."""
    unit = unit_bits(bits)
    return (feed.source_base or 0) * (8 // unit) + feed.source.offset * bits // unit


def _cat(x: _Summary | None, y: _Summary) -> _Summary:
    """The summary of sequence x followed by sequence y."""
    if x is None:
        return y
    la, fa, ea, pa, sa, ma, ka, ia = x
    lb, fb, eb, pb, sb, mb, kb, ib = y
    join = ea == fb
    best = (ma, ka, ia)
    if join and sa + pb > best[0]:
        best = (sa + pb, ea, la - sa)
    if mb > best[0]:
        best = (mb, kb, la + ib)
    lead = pa + pb if join and pa == la else pa
    trail = sb + sa if join and sb == lb else sb
    return (la + lb, fa, eb, lead, trail, *best)


def _shift(x: _Summary, q: int) -> _Summary:
    """The summary of the same accesses `q` banks further (addresses + 8q bytes)."""
    m = BANKS - 1
    return (x[0], (x[1] + q) & m, (x[2] + q) & m, x[3], x[4], x[5], (x[6] + q) & m, x[7])


def _power(x: _Summary, t: int) -> _Summary | None:
    """x repeated t times."""
    out: _Summary | None = None
    while t:
        if t & 1:
            out = _cat(out, x)
        t >>= 1
        if t:
            x = _cat(x, x)
    return out


def longest_bank_run(loops: Sequence[tuple[int, int]], start: int = 0, units_per_byte: int = 1) -> BankRun:
    """The longest same-bank run of the accesses `start + sum(i_k * stride_k)` over the loops
    `(size, stride)` (outer to inner, addresses in units of 1/`units_per_byte` byte)."""
    row = BANK_BYTES * units_per_byte        # units of one bank row
    wrap = BANKS * row                       # banks repeat every 128 bytes
    memo: dict[tuple[int, int], _Summary] = {}

    def level(k: int, r: int) -> _Summary:
        """Loops k.. starting at unit offset r (0 <= r < row, so in bank 0)."""
        if k == len(loops):
            return (1, 0, 0, 1, 1, 1, 0, 0)
        key = (k, r)
        if key in memo:
            return memo[key]
        n, s = loops[k]
        s %= wrap
        period = wrap // math.gcd(s, wrap)
        whole, rest = divmod(n, period) if n > period else (0, n)
        acc: _Summary | None = None
        prefix: _Summary | None = None
        for i in range(min(n, period)):
            if i == rest:
                prefix = acc
            c = (r + i * s) % wrap
            acc = _cat(acc, _shift(level(k + 1, c % row), c // row))
        if whole:
            out = _power(acc, whole)
            if rest:
                out = _cat(out, prefix)
        else:
            out = acc
        memo[key] = out
        return out

    base = start % wrap
    length, _, _, _, _, run, bank, first = _shift(level(0, base % row), base // row)
    return BankRun(run, bank, first, length)


def feed_bits(feed: FeedBuffer, target: Any) -> int:
    """Bits of one source element of `feed` on `target`."""
    return target.bits_of(feed.source.dtype) or feed.source.dtype.bits


def feed_bank_run(feed: FeedBuffer, target: Any) -> BankRun | None:
    """The longest same-bank run of a FeedBuffer's DM reads (None for an interleaved feed,
    later scope, whose two sources alternate)."""
    if len(feed.shapes) != 1:
        return None
    bits = feed_bits(feed, target)
    loops = access_loops(feed.shapes[0], bits)
    return longest_bank_run(loops, start_units(feed, bits), 8 // unit_bits(bits))
