"""Collectives across chips and clusters (docs/collectives.md): AllReduce, ReduceScatter and
AllGather as library calls, each a composition of staged redistributions
(docs/machine/topology.md "Redistributions") and Vector Engine adds.

Nothing here is a new op: every call traces the DMAs and the streams a kernel author would
write (the v0.8 collectives of furiosa-opt's `chip_reduce.rs` / `cluster_reduce.rs` are
such compositions), so every layer below (trace rules, cpu backend, lowering, VISA, the
interpreter) is the one those stages already go through.

The sums are added by the Vector Engine, which adds `i32` (wrapping, `ClipBinaryOpI32.ADD_FXP`)
and `f32` (IEEE, `ClipBinaryOpF32.ADD`); other element types are COLL-1. Each chip (cluster)
adds its terms in its own order, documented per call: integer sums do not depend on it;
`f32` sums do, so the chips of a ring AllReduce may end with different bits, and each
ReduceScatter shard carries its chip's rounding (docs/collectives.md says when).
"""

from __future__ import annotations

from typing import Any

from ir.diagnostic import Violation
from ir.dtypes import f32, i32
from ir.mapping.nodes import Broadcast, Mapping, Symbol
from ir.vector.enums import ClipBinaryOpF32, ClipBinaryOpI32
from npu_opt.stagebase import Poisoned, refuse_call
from npu_opt.tensor_data import DmTensorData

__all__ = ["chip_all_reduce", "chip_reduce_scatter", "chip_all_gather",
           "cluster_all_reduce", "cluster_reduce_scatter", "cluster_all_gather", "ALGORITHMS"]

ALGORITHMS = ("ring", "butterfly")
"""The `algorithm=` values of `chip_all_reduce`."""

# The size-2 axis along which the two addends of one add alternate in the stream
# (`begin_interleaved`). The library's own name, so that it cannot meet a kernel's axis.
PAIR = Symbol("CollectiveAddend", 2)
_FLIT_VALUES = 8  # 32 bytes of 4-byte values


def _refuse(code: str, message: str, call: str, fix: str | None = None) -> Poisoned:
    return refuse_call(Violation(code, message, help=fix), call)


def _refused(x: Any, call: str, level: str, adds: bool = True) -> Poisoned | None:
    """What the call returns instead of its result when `x` is already refused or does not
    fit (the refusal reported at the user's call), else None."""
    if isinstance(x, Poisoned):
        return x
    fault = _fault(x, call, level, adds)
    return None if fault is None else _refuse(fault.code, fault.message, call, fault.help)


def _fault(x: Any, call: str, level: str, adds: bool) -> Violation | None:
    """COLL-1 / COLL-2 for an operand the collective cannot take, else None (a call that
    only copies, `adds=False`, takes any DmTensor)."""
    if not isinstance(x, DmTensorData):
        return Violation("COLL-2", f"{call} takes a DmTensor, not {type(x).__name__}",
                         help="pass a DM tensor: copy HBM data in with `x.to_dm(ctx.tdma, DmTensor[...])`, "
                              "and give the tensor of a view or the `to_dm` of a plan")
    if not adds:
        return None
    t = x.type
    if t.dtype not in (i32, f32):
        return Violation("COLL-1", f"{call}: the Vector Engine adds i32 and f32, not {t.dtype}",
                         help="widen the data to i32 or f32 first (`fetch_cast` in a stream), and narrow the sum after")
    size = t.element.size
    if size > _FLIT_VALUES and size % _FLIT_VALUES:
        return Violation("COLL-2", f"{call}: the Element `{t.element}` holds {size} values, neither a multiple "
                                   f"of {_FLIT_VALUES} nor fewer, so the adds cannot read it in whole flits",
                         help=f"pad the Element to {_whole_flits(size)} values: `{_padded(t.element, size)}`")
    spread = t.chip if level == "chip" else t.cluster
    if spread.size < 2:
        return Violation("COLL-2", f"{call}: the tensor's {level.capitalize()} `{spread}` has one position, "
                                   f"so there is nothing to exchange between {level}s")
    return None


def _whole_flits(size: int) -> int:
    return -(-size // _FLIT_VALUES) * _FLIT_VALUES


def _padded(element: Mapping, size: int) -> str:
    text = str(element) if isinstance(element, Symbol) else f"({element})"
    return f"m(\"{text} # {_whole_flits(size)}\")"


def _like(x: Any, element: Mapping | None = None, chip: Mapping | None = None,
          cluster: Mapping | None = None) -> Any:
    """The `DmTensor[...]` type of `x`, with the levels given replaced."""
    t = x.type
    return DmTensorData[t.dtype, t.chip if chip is None else chip, t.cluster if cluster is None else cluster,
                    t.slice, t.element if element is None else element]


def add(ctx: Any, a: Any, b: Any) -> Any:
    """`a + b` slice by slice (two DM tensors of one type, i32 or f32), a new DM tensor of that
    type: the two tensors read as one stream alternating along `PAIR`, split into the two
    groups and added by `vector_clip_zip` in one Vector Engine pass (a the first operand).
    An operand already refused (a redistribution rule) is what it returns."""
    for operand in (a, b):
        if isinstance(operand, Poisoned):
            return operand
    t = a.type
    op = ClipBinaryOpI32.ADD_FXP if t.dtype == i32 else ClipBinaryOpF32.ADD
    e = t.element
    if e.size == _FLIT_VALUES:  # one flit per addend
        outer, inner, packet = Broadcast(1), e, e
    elif e.size % _FLIT_VALUES == 0:
        outer, inner, packet = e.stride(_FLIT_VALUES), e.modulo(_FLIT_VALUES), e.modulo(_FLIT_VALUES)
    else:  # fewer values than a flit: one flit per addend, padded
        outer, inner, packet = Broadcast(1), e, e.pad(_FLIT_VALUES)
    time = outer.pair(PAIR) if outer.size > 1 else PAIR
    return (ctx.main.begin_interleaved(a.view(), b.view(), PAIR)
            .fetch(time, inner)
            .collect(time, packet)
            .vector_init()
            .vector_intra_slice_unzip(PAIR, outer)
            .vector_clip_zip(op)
            .vector_final()
            .commit_trim(inner)
            .commit(e))


def _rotation(n: int, k: int) -> list[int]:
    return [(c + k) % n for c in range(n)]


def chip_all_reduce(ctx: Any, x: Any, algorithm: str = "ring") -> Any:
    """Every chip ends with the sum over the chips of `x` (a DmTensor whose Chip spreads over
    the kernel's chips): a new DmTensor of `x`'s type.

    `algorithm="ring"` (the default): chips - 1 rounds, each passing the last tensor received
    one chip along the ring (neighbour transfers only); chip c adds
    `((x[c] + x[c+1]) + x[c+2]) + ...` (chip numbers modulo the count), so in `f32` each chip
    rounds in its own order and chips may disagree in the last bits.
    `algorithm="butterfly"`: log2(chips) rounds, each exchanging with the chip whose number
    differs in one bit (XOR 1, then XOR 2); chip c adds `(x[c] + x[c^1]) + (x[c^2] + x[c^3])`,
    and since each add is commutative every chip computes the same `f32` bits."""
    call = "chip_all_reduce"
    refused = _refused(x, call, "chip")
    if refused is not None:
        return refused
    n = x.type.chip.size
    if algorithm not in ALGORITHMS:
        return _refuse("COLL-2", f"{call}: algorithm={algorithm!r}; expected one of {', '.join(map(repr, ALGORITHMS))}",
                       call)
    if algorithm == "butterfly" and n & (n - 1):
        return _refuse("COLL-2", f"{call}: a butterfly needs a power-of-two number of chips, not {n}", call,
                       "use algorithm=\"ring\"")
    kind = _like(x)
    total = x
    if algorithm == "ring":
        passed = x
        for _ in range(n - 1):
            passed = passed.chip_shuffle(_rotation(n, 1)).to_dm(ctx.tdma, kind)   # from the next chip
            total = add(ctx, total, passed)
        return total
    bit = 1
    while bit < n:
        total = add(ctx, total, total.chip_shuffle([c ^ bit for c in range(n)]).to_dm(ctx.tdma, kind))
        bit *= 2
    return total


def chip_reduce_scatter(ctx: Any, x: Any, axis: Any, element: Any) -> Any:
    """Chip c ends with position c of `axis` summed over the chips: `x`'s Element holds `axis`
    (one position per chip) as its outermost digit range, and `element` is that Element
    without it (as `chip_slice` takes them). A new DmTensor with Element `element`.

    Round k brings each chip its shard from the chip k places on; chip c adds
    `((x[c][c] + x[c+1][c]) + x[c+2][c]) + ...`, its own order."""
    call = "chip_reduce_scatter"
    refused = _refused(x, call, "chip")
    if refused is not None:
        return refused
    n = x.type.chip.size
    kind = _like(x, element=element)
    total = None
    for k in range(n):
        part = x.chip_shuffle(_rotation(n, k)).chip_slice(axis, element, list(range(n))).to_dm(ctx.tdma, kind)
        if isinstance(part, Poisoned):  # the same refusal would come back every round
            return part
        total = part if total is None else add(ctx, total, part)
    return total


def chip_all_gather(ctx: Any, x: Any, into: Any = None) -> Any:
    """Every chip ends with every chip's `x`: one Tensor DMA into `into` (a `DmTensor[...]`
    type), by default the tensor whose Chip is the broadcast of the chip count and whose
    Element is `x`'s Chip mapping (outermost) then `x`'s Element. No arithmetic, so any
    element type."""
    return _gather(ctx, x, into, "chip_all_gather", "chip")


def cluster_all_reduce(ctx: Any, x: Any) -> Any:
    """Both clusters of each chip end with the sum of the two (`x`'s Cluster spreads over
    the two clusters): cluster g adds `x[g] + x[1 - g]`, which is the same `f32` in both."""
    call = "cluster_all_reduce"
    refused = _refused(x, call, "cluster")
    if refused is not None:
        return refused
    return add(ctx, x, x.cluster_swap().to_dm(ctx.tdma, _like(x)))


def cluster_reduce_scatter(ctx: Any, x: Any, axis: Any, element: Any) -> Any:
    """Cluster g ends with position g of `axis` summed over the two clusters (`axis` the
    outermost digit range of `x`'s Element, `element` the Element without it): its own
    shard by `asymmetric_cluster_slice` on the Sub context, the other's by a cluster swap
    and slice; cluster g adds `x[g][g] + x[1 - g][g]`."""
    call = "cluster_reduce_scatter"
    refused = _refused(x, call, "cluster")
    if refused is not None:
        return refused
    own = x.asymmetric_cluster_slice(ctx.sub, axis, element, [0, 1])
    other = x.cluster_swap().cluster_slice(axis, element, [0, 1]).to_dm(ctx.tdma, _like(x, element=element))
    return add(ctx, own, other)


def cluster_all_gather(ctx: Any, x: Any, into: Any = None) -> Any:
    """Both clusters of each chip end with both clusters' `x`: one Tensor DMA into `into`, by
    default the tensor whose Cluster is the broadcast `2` and whose Element is `x`'s Cluster
    mapping (outermost) then `x`'s Element."""
    return _gather(ctx, x, into, "cluster_all_gather", "cluster")


def _gather(ctx: Any, x: Any, into: Any, call: str, level: str) -> Any:
    """`x` copied into `into`, by default the type whose `level` (chip or cluster) is the
    broadcast of its count and whose Element is `x`'s mapping of that level, then `x`'s Element."""
    refused = _refused(x, call, level, adds=False)
    if refused is not None:
        return refused
    if into is None:
        spread = x.type.chip if level == "chip" else x.type.cluster
        copies = {level: Broadcast(spread.size)}
        into = _like(x, element=spread.pair(x.type.element), **copies)
    return x.to_dm(ctx.tdma, into)
