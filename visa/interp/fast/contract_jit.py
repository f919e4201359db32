"""A compiled float Contraction Engine for the interpreter (optional: numba, the `fast` extra).

The same records' semantics as `visa.interp.contract_float` (the numpy path, the reference
it is tested equal to), computed straight from the fed packets and the TRF bytes instead
of the arranged operands: for every row (slice), kept time slot and output column, the
summed steps in time order, each one a tree over its `g` leaves. One step of one output
column is a `(g, 8)` block of products, leaf by leaf, all eight lanes at once (the lanes
are the vector: the stream element of a leaf is the same for every lane, each lane reads
its own TRF element); the tree then adds adjacent leaves `2i, 2i + 1` into `i`, level by
level, and the step's lane sums join the accumulators, which start at `+0` (the products,
tree, accumulation and flush are the cpu backend's too, `ir.exact_kernels.sums`). Padded
products and padded `packet_reduce` columns are `+0`, padded time steps are skipped. Every
result is flushed as docs/numerics.md says (`ir.contract_arith`) unless `exact` proved that no
product or partial sum can be subnormal, infinite or NaN; numba compiles without
fast-math, so nothing is reassociated or fused. An exact contraction without padded
products or columns takes `visa.interp.fast.contract_jit_tiles` (the shared tiles of
`ir.exact_kernels.tiles`: the tree written out as vector IR, rows that read the same TRF operand four to a tile
(eight when no slot has a partner), slots paired by
`visa.interp.fast.contract_jit_exact`); the TRF operand is widened once per distinct TRF slice
(`visa.interp.fast.contract_jit_weights`), once while the TRF rows it comes from stay unwritten
(`visa.interp.fast.contract_jit_operand`: a kernel's pieces share it), and a `Repeated` stream is read as its
distinct packets.
The work is one thread's: the cost the benchmark compares (CPU time) is the same spread over more.

It runs when numba is importable, `NPU_OPT_INTERP_JIT` is not `0`, and numba is already
loaded in the process or the process's float contractions (this one included) reach
`JIT_MIN` products in all (the threshold the cpu backend shares, `ir.exact_kernels.compile`:
numba's import and the load of the disk-cached kernels cost half a second once per process);
`NPU_OPT_INTERP_JIT=1` runs it for every float contraction. It imports nothing of the
cpu backend: the two are each other's cross-check.
"""

from __future__ import annotations

import functools
import math
import os
from typing import Any

import numpy as np

from ir.exact_kernels import compile as kernels_compile
from ir.exact_kernels import sums, tiles
from ir.exact_kernels.compile import JIT_MIN
from ir.exact_kernels.tiles import leaf_order
from visa.interp.fast import contract_blas
from visa.interp.fast import contract_jit_exact as jit_exact
from visa.interp.fast import contract_jit_operand as jit_operand
from visa.interp.fast.contract_jit_operand import code_range
from visa.interp.fast import contract_jit_scan as jit_scan
from visa.interp.fast import contract_jit_tiles as jit_tiles
from visa.interp.fast import contract_jit_weights as jit_weights
from visa.interp.operands import _SIG_BITS, exact
from visa.interp.plan import Plan
from visa.interp.fast.repeated import Repeated, compact, view_reshape
from visa.interp.values import widen_table

__all__ = ["ENV", "JIT_MIN", "applies", "enabled", "run_float"]

ENV = "NPU_OPT_INTERP_JIT"
"""0: never the compiled path; 1: for every float contraction; unset: `enabled` decides."""
_NO_MASK4 = np.zeros((0, 0, 0, 0), np.bool_)
_NO_MASK2 = np.zeros((0, 0), np.bool_)
_NO_QUADS = np.zeros((0, 4), np.int64)
_NO_CODES = np.zeros((0, 0), np.uint16)
_NO_SHIFTS = np.zeros(0, np.bool_)
_NO_WEIGHTS = np.zeros((1, 1, 16), np.float32)
_NO_SCAN = np.zeros(0, np.int64)
_NO_OFFS = np.zeros(0, np.int64)


# ---- the kernels (plain Python; `_compiled` compiles them) ---------------------------------


def _zero_padded(buf, pad, base, leaf):
    """Padded products are +0: the buffer rows k whose product base + leaf[k] `pad` marks, per lane."""
    for k in range(leaf.size):
        for i in range(buf.shape[1]):
            if pad[base + leaf[k], i]:
                buf[k, i] = np.float32(0)


def _float_kernel(codes, table, shift, wt, which, sstep, tread, q, rr, cols, leaf, opad, rpad, tpad, exact, out):
    """out[row, lane, slot, column]: the accumulators, one row (slice) at a time, the lanes
    as the vector: the row's widened TRF elements wt[which[row]] (elements, lanes) stay in cache
    while its steps read them, and each stream element is widened where a step reads it. A
    step's tree is `ir.exact_kernels.sums` over buffer rows k holding leaves leaf[k]."""
    g, lanes = leaf.size, out.shape[1]
    n_slots, n_steps = sstep.shape
    n_cols = min(cols, out.shape[3])
    sv = np.zeros(g, np.float32)
    sv_bits = sv.view(np.uint32)
    buf = np.zeros((g, lanes), np.float32)
    bits = buf.view(np.uint32)
    acc = np.zeros((1, lanes), np.float32)
    acc_bits = acc.view(np.uint32)
    quad = exact and opad.shape[0] == 0 and g >= 4      # `sums.leaves` sums the first two levels
    wofs = np.zeros((n_cols, g), np.int64)
    for j in range(n_cols):
        for k in range(g):
            wofs[j, k] = (j * g + k) % rr
    for r in range(codes.shape[0]):
        w = wt[which[r]]
        for kk in range(n_slots):
            for j in range(n_cols):
                acc[0, :] = np.float32(0)
                for t in range(n_steps):
                    if tpad.shape[0] > 0 and tpad[kk, t]:
                        continue
                    sb = sstep[kk, t] * q + j * g
                    for k in range(g):
                        sv_bits[k] = jit_weights.code_bits(codes[r, sb + k], table, shift)
                    m = sums.leaves(sv, w, tread[kk, t] * rr, wofs[j], leaf, buf, bits, exact, quad)
                    if opad.shape[0] > 0:
                        _zero_padded(buf, opad[kk, t], j * g, leaf)
                    sums.fold(buf, bits, m, exact)
                    if rpad.shape[0] > 0:
                        for i in range(lanes):
                            if rpad[kk, t, j, i]:
                                buf[0, i] = np.float32(0)
                    sums.add(acc, acc_bits, buf, exact)
                for i in range(lanes):
                    out[r, i, kk, j] = acc[0, i]


ORDER = ("_zero_padded", "_float_kernel")
"""Compiled after `ir.exact_kernels.sums` (`ir.exact_kernels.compile`)."""
INLINE = ("_zero_padded",)
"""The padding step inlines into the kernel; the shared sums inline themselves."""


@functools.lru_cache(maxsize=1)
def _compiled() -> dict | None:
    """The kernels (the shared tiles and sums, the scans, the weights', the exact kernel's and
    this module's) compiled by numba, or None without numba."""
    return kernels_compile.compiled(vars(tiles), vars(sums), vars(jit_scan), vars(jit_weights), vars(jit_tiles),
                                    globals())


def enabled(products: int) -> bool:
    """Whether a float contraction of `products` products runs compiled (module docstring)."""
    mode = os.environ.get(ENV, "").strip().lower()
    if mode in ("0", "false", "no", "off"):
        return False
    if mode not in ("1", "true", "yes", "on") and not kernels_compile.wanted(products):
        return False
    return _compiled() is not None


# ---- the driver ------------------------------------------------------------------------------


def _by_slot(table: np.ndarray, plan: Plan, lead: int) -> np.ndarray:
    """`table` (lead axes, *digits, trail axes), its digits broadcast and ordered kept then
    summed, flattened to (*lead, slots, steps, *trail)."""
    shape = table.shape
    nd = len(plan.digits)
    full = np.broadcast_to(table, (*shape[:lead], *plan.digits, *shape[lead + nd:]))
    kept = [lead + i for i, k in enumerate(plan.keep) if k]
    summed = [lead + i for i, k in enumerate(plan.keep) if not k]
    rest = list(range(lead + nd, full.ndim))
    full = full.transpose([*range(lead), *kept, *summed, *rest])
    return full.reshape(*shape[:lead], plan.slots, -1, *shape[lead + nd:])


def _lane_mask(mask: np.ndarray | None, plan: Plan) -> np.ndarray:
    """A (lanes, *digits, n) padding mask as (slots, steps, n, lanes) booleans."""
    if mask is None:
        return _NO_MASK4
    return np.ascontiguousarray(np.moveaxis(_by_slot(mask, plan, 1), 0, -1))


def _stream_range(packets: np.ndarray, et: Any, known: np.ndarray | None) -> tuple[Any, bool, np.ndarray]:
    """`code_range` of every code of the fed packets, whether each of them widens by a
    shift (bf16 codes, no subnormal and no NaN among them), and the row each row repeats:
    `known` (the feed's, `visa.interp.fast.copies`: only the rows it names stored are scanned),
    else found (`held_rows`)."""
    mag = 0x7FFF if packets.dtype == np.uint16 else 0x7F
    held = held_rows(packets) if known is None else known
    top, low = _compiled()["_held_bounds"](*kernels_compile.read_only(packets, mag, held))
    shift = mag == 0x7FFF and top <= 0x7F80 and low + 1 >= 0x80
    return code_range(top, low + 1, mag, widen_table(et), _SIG_BITS[et.name]), shift, held


def held_rows(packets: np.ndarray) -> np.ndarray:
    """The row each row of the fed packets repeats (`contract_jit_scan._held_rows`)."""
    held = np.empty(packets.shape[0], np.int64)
    _compiled()["_held_rows"](*kernels_compile.read_only(jit_weights.words_of(packets[None])[0]), held)  # one form
    return held


def _scanned(packets, table, weights, which, held, sstep, tread, plan, wofs0, tpad, out, pairs, quads, woffs, n_w,
             outer, w_range, terms) -> np.ndarray | None:
    """The exact kernel on bf16 stream codes whose range it finds as it widens them (every
    row alone: each is widened once, in cache), and on weights whose range it finds as it
    lays them out when `w_range` is None (bf16 codes `contract_jit_operand.operand` did not scan),
    assuming what the scans would have shown: that every code widens by a shift and the sum
    is exact; `out` when the ranges it found bear that out, None otherwise (the caller runs
    the usual path; `out` is then overwritten)."""
    scan, wscan = np.array([0, 0x7FFF], np.int64), np.array([0, 0x7FFF], np.int64)
    wtable = widen_table(outer.weight_type)
    packets, held, tread = kernels_compile.read_only(packets, held, tread)  # one compiled form (`read_only`)
    _compiled()["exact_kernel"](packets, table, True, _NO_WEIGHTS, which, jit_tiles.tile_order(which), held, sstep,
                                tread, plan.read_elems, wofs0, plan.g, tpad, out, pairs, quads, *weights, wtable, woffs,
                                n_w, scan, wscan if w_range is None else _NO_SCAN)
    ranges = [(int(scan[0]), int(scan[1]), table, outer.stream_type)]
    if w_range is None:
        ranges.append((int(wscan[0]), int(wscan[1]), wtable, outer.weight_type))
    if any(not (top <= 0x7F80 and low + 1 >= 0x80) for top, low, _, _ in ranges):
        return None
    found = [code_range(top, low + 1, 0x7FFF, t, _SIG_BITS[et.name]) for top, low, t, et in ranges]
    return out if exact(found + ([] if w_range is None else [w_range]), terms) else None


def applies(outer: Any, stream: np.ndarray) -> bool:
    """The kernel's operand types: 8- or 16-bit float codes."""
    names = (outer.stream_type.name, outer.weight_type.name)
    return all(n in _SIG_BITS for n in names) and stream.dtype in (np.uint8, np.uint16)


def _rows_of(held: np.ndarray, n_rows: int) -> np.ndarray:
    """`held` as (rows, elements): a view when each row's elements are one contiguous run
    (a feed read in place: rows one DM slice apart), else a contiguous copy."""
    rows = view_reshape(held, (n_rows, held.size // max(n_rows, 1)))
    if rows is None or rows.strides[1] != rows.itemsize:
        return np.ascontiguousarray(held).reshape(n_rows, -1)
    return rows


def _stream_rows(stream: np.ndarray | Repeated, q: int, n_rows: int) -> tuple[np.ndarray, np.ndarray]:
    """The fed codes as (rows, elements), and where each packet of `q` elements starts there.
    A `Repeated` stream is kept as its distinct packets when they stay whole (only its time
    loops repeat): every copy of a packet starts where its one stored copy does."""
    if isinstance(stream, Repeated):
        full = stream.factored
        held = compact(full)
        packet = full.shape[-2] * full.shape[-1]
        if held.shape[-2:] != full.shape[-2:] or packet % q:
            stream = stream.materialize()
        else:
            loops = np.arange(math.prod(held.shape[1:-2]), dtype=np.int64).reshape(held.shape[1:-2])
            first = np.broadcast_to(loops, full.shape[1:-2]).reshape(-1) * packet  # every fed packet's copy
            if stream.alias is not None:        # steps known to repeat others: read those
                first = first[stream.alias]
            part = np.arange(packet // q, dtype=np.int64) * q
            return _rows_of(held, n_rows), (first[:, None] + part).reshape(-1)
    codes = np.ascontiguousarray(stream.reshape(n_rows, -1))
    return codes, np.arange(codes.shape[1] // q, dtype=np.int64) * q


def _by_blas(plan: Plan, packets: np.ndarray, held: np.ndarray, slots: tuple, outer: Any, trf: Any, rows: Any,
             mem: Any) -> np.ndarray | None:
    """The accumulators by float32 matmuls (`contract_blas`) of a bf16 stream whose repeated
    rows are known (`held`) and bf16 weights, when every distinct stream row meets most
    distinct TRF operands and the codes prove no sum rounds; else None."""
    sstep, tread, tpad, n_cols = slots
    stored = np.flatnonzero(held == np.arange(held.size))
    if 2 * stored.size > held.size:    # most rows their own stream: they cannot share the pairs' products
        return None
    terms = plan.g * math.prod(plan.digits_summed())
    few = terms < contract_blas.MIN_TERMS     # then only when the products land in place, and many
    products = rows.count * plan.lanes * plan.slots * plan.out_cols * terms
    tiled = contract_blas.tile_products(products, stored.size, jit_tiles.ROWS)   # as the exact kernel computes them
    if few and (not contract_blas.short_sums_pay(products, tiled)
                or not contract_blas.slots_in_place(sstep, tread, tpad)):
        return None
    n_w = (int(tread.max()) + 1) * plan.read_elems
    kept = jit_operand.forms(outer, trf, rows, mem, n_w)    # a tile's second contraction: the first's operand
    which = jit_operand.classes(_compiled(), outer, trf, rows, mem, n_w, kept)[0]
    h_of, n_ops = np.searchsorted(stored, held), int(which.max()) + 1
    if (not contract_blas.pairs(h_of, which, stored.size, n_ops)
            or few and not contract_blas.rows_in_place(h_of, which, stored.size, n_ops)):
        return None      # decided before any weight is laid out (a batched GEMM's rows meet few pairs)
    parts, s_range = contract_blas.gathered(packets, stored, sstep, tread, tpad, plan.g, n_cols,
                                            functools.partial(jit_scan.bf16_floor, _compiled()))
    if s_range is None:
        return None
    wt, which, _ = jit_operand.operand(_compiled(), outer, trf, rows, mem, n_w, _NO_OFFS, kept=kept)
    if "blas" not in kept:
        kept["blas"] = (contract_blas.weights_range(wt, functools.partial(jit_scan.bf16_floor, _compiled())), {})
    w_range, laid = kept["blas"]     # laid: the matmul operands taken from wt (`contract_blas._laid`)
    if w_range is None or not contract_blas.no_rounding(s_range, w_range, terms):
        return None
    out = _accumulators(plan, rows, mem)
    return contract_blas.contract(parts, h_of, wt, which, tread, plan.read_elems, plan.g, out, laid)


def _by_octets(pairs: np.ndarray, which: np.ndarray) -> bool:
    """Whether the exact contraction goes eight rows a tile (`contract_jit_tiles.octet_kernel`):
    when no slot has a partner (the 4 x 16 tile would compute each in both halves) and the
    rows' groups by TRF operand pad to fewer rows at eight a tile than twice at four (a
    batched GEMM's groups of eight rows: drawn_s7_7)."""
    return (pairs.shape[0] > 0 and bool((pairs[:, 1] < 0).all())
            and jit_tiles.tile_order(which, jit_tiles.OCTET).size < 2 * jit_tiles.tile_order(which).size)


def _octets(plan: Plan, packets: np.ndarray, table: np.ndarray, shift: bool, wt: np.ndarray, which: np.ndarray,
            held: np.ndarray, sstep: np.ndarray, tread: np.ndarray, wofs0: np.ndarray, tpad: np.ndarray,
            out: np.ndarray) -> np.ndarray:
    """`out` by `contract_jit_tiles.octet_kernel`, the weights `wt` (`lay_paired`'s, shift 0:
    each element's eight lanes twice) taken once each."""
    lanes = jit_tiles.OCTET
    plain = np.ascontiguousarray(wt[0].reshape(wt.shape[1], -1, 2 * lanes)[:, :, :lanes])
    packets, held, tread = kernels_compile.read_only(packets, held, tread)  # one compiled form (`read_only`)
    _compiled()["octet_kernel"](packets, table, shift, plain.reshape(plain.shape[0], -1), which,
                                jit_tiles.tile_order(which, lanes), held, sstep, tread, plan.read_elems, wofs0,
                                plan.g, tpad, out)
    return out


def _accumulators(plan: Plan, rows: Any, mem: Any) -> np.ndarray:
    """The zeroed float32 accumulators in the program's pooled scratch (fresh MiBs: a fault a page a run)."""
    out = mem.scratch((rows.count, plan.lanes, plan.slots, plan.out_cols), np.float32)
    out.fill(0)
    return out


def run_float(plan: Plan, stream: np.ndarray | Repeated, outer: Any, trf: Any, rows: Any, mem: Any) -> np.ndarray:
    """The accumulators of a float contraction, (rows, lanes, slots, out_cols) float32."""
    packets, start = _stream_rows(stream, plan.q, rows.count)
    sstep = np.ascontiguousarray(start[_by_slot(plan.stream_step, plan, 0)], np.int64)  # in elements: q = 1
    tread = np.ascontiguousarray(_by_slot(plan.trf_read, plan, 0), np.int64)
    tpad = _NO_MASK2 if plan.time_pad is None else np.ascontiguousarray(_by_slot(plan.time_pad, plan, 0))
    n_cols = min(plan.q // plan.g, plan.out_cols)
    wofs0 = np.array([j * plan.g % plan.read_elems for j in range(n_cols)], np.int64)
    paired = (plan.outer_pad is None and plan.reduce_pad is None and plan.lanes == trf.lanes == jit_exact.LANES
              and plan.g in jit_exact.TREES and all(o + plan.g <= plan.read_elems for o in wofs0))
    known = getattr(stream, "held", None)
    fewest = min(contract_blas.MIN_TERMS, contract_blas.MIN_TERMS_IN_PLACE)
    if (known is not None and paired and packets.dtype == np.uint16 and outer.weight_type.name == "BF16"
            and plan.g * math.prod(plan.digits_summed()) >= fewest):
        found = _by_blas(plan, packets, known, (sstep, tread, tpad, n_cols), outer, trf, rows, mem)
        if found is not None:
            return found
    pairs, shifts = jit_exact.slot_pairs(sstep, tread, tpad) if paired else (None, [])
    quads = jit_tiles.slot_quads(pairs, tread, tpad) if paired else _NO_QUADS
    n_w, woffs = (int(tread.max()) + 1) * plan.read_elems, np.array(shifts, np.int64) * plan.read_elems
    speculate = quads.shape[0] > 0 and packets.dtype == np.uint16 and known is None
    kept = jit_operand.forms(outer, trf, rows, mem, n_w)
    wt, which, w_range = jit_operand.operand(_compiled(), outer, trf, rows, mem, n_w, woffs, quads.shape[0] > 0,
                                             speculate, kept)
    terms = plan.g * math.prod(plan.digits_summed())
    out = _accumulators(plan, rows, mem)
    table = widen_table(outer.stream_type)
    per_row = isinstance(wt, tuple)  # each row's weights as codes, laid out by the kernel (`jit_operand.operand`)
    if per_row and speculate:
        found = _scanned(packets, table, wt, which, held_rows(packets), sstep, tread, plan, wofs0, tpad, out, pairs,
                         quads, woffs, n_w, outer, w_range, terms)
        if found is not None:
            return found
        out[...] = 0
        if w_range is None:  # the weights' range, found by the usual scan
            wt, which, w_range = jit_operand.operand(_compiled(), outer, trf, rows, mem, n_w, woffs, True, kept=kept)
    s_range, shift, held = _stream_range(packets, outer.stream_type, getattr(stream, "held", None))
    proved = exact([s_range, w_range], terms)
    if paired and proved and not per_row and _by_octets(pairs, which):
        return _octets(plan, packets, table, shift, wt, which, held, sstep, tread, wofs0, tpad, out)
    if paired and proved:
        wcodes, wshifts = wt if per_row else (_NO_CODES, _NO_SHIFTS)
        packets, held, tread = kernels_compile.read_only(packets, held, tread)  # one compiled form (`read_only`)
        _compiled()["exact_kernel"](packets, table, shift, _NO_WEIGHTS if per_row else wt, which,
                                    jit_tiles.tile_order(which), held, sstep, tread, plan.read_elems, wofs0, plan.g,
                                    tpad, out, pairs, quads, wcodes, wshifts, widen_table(outer.weight_type), woffs,
                                    n_w, _NO_SCAN, _NO_SCAN)
        return out
    if getattr(stream, "sparse", False):   # the general kernel reads every row: the copies written out
        packets = packets[held]
    if per_row:  # not exact after all: the general kernel takes the laid-out weights
        wt, which, w_range = jit_operand.operand(_compiled(), outer, trf, rows, mem, n_w, woffs, kept=kept)
    if paired:                                          # the first shift's (0) first lanes: the plain layout
        wt = np.ascontiguousarray(wt[0].reshape(wt.shape[1], -1, 2 * trf.lanes)[:, :, :trf.lanes])
    inputs = kernels_compile.read_only(packets, table, shift, wt, which, sstep, tread, 1, plan.read_elems,
                                       plan.q // plan.g, leaf_order(plan.g), _lane_mask(plan.outer_pad, plan),
                                       _lane_mask(plan.reduce_pad, plan), tpad, proved)  # one compiled form
    _compiled()["_float_kernel"](*inputs, out)
    return out
