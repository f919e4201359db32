"""A deliberately naive reference model of a traced kernel, for the differential tests.

`evaluate(kernel, *arrays)` runs a `@device` kernel stage by stage, element by element
(vectorised over positions with numpy, never over the compiler's geometry), written from
the stage semantics of the Tensor Unit pipeline and the dtype rules:

- every value is a buffer over its levels; a position holds the element of its logical
  index (naive_layout.py), and every data movement -- Tensor DMA, `begin`, `fetch`,
  `collect`, `to_trf`, `contract_lane`, `cast`'s re-padding, `commit_trim`, `commit` --
  is the same *move*: each live output position takes the input element of the same
  logical index, digits the input lacks being a broadcast, padding being zero;
- `contract_outer`: each live position of `[L, out_time, out_packet]` multiplies the
  stream element and the TRF element of its logical index (padding contributes 0);
- `contract_packet`: the smallest depth d whose groups of 2^d adjacent packet cells all
  share the logical index of their output column; each group is summed by the
  adjacent-pair tree, level by level;
- `contract_time`: every live pre-reduce time step, in stream order, is added to the
  output slot holding its kept digits, starting from +0;
- the Fetch Adapter, the Cast Engine and the Commit Adapter convert element by element
  (naive_numbers.py).

It reads the traced ops (their names, attributes and the user-written DMA types) and
evaluates mapping cells with `ir.mapping`; it imports nothing else of the compiler. The
result is the host-shaped arrays as bit patterns (floats) or int64 values (integers).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ir.mapping.nodes import Broadcast, Pair
from tests.differential import naive_numbers as nn
from tests.differential.naive_pair import begin_interleaved, pair_stage
from tests.differential.naive_layout import ModelError, Value, digits, index_of, level_cells, move, restrict
from tests.differential.naive_vector import vector_stage
from tests.differential.naive_inter import inter_reduce

__all__ = ["ModelError", "evaluate", "host_bits"]

ONE = Broadcast(1)


def _items(element: Any) -> list[Any]:
    return element.flatten() if isinstance(element, Pair) else [element]


def host_bits(array: np.ndarray, dtype: str) -> np.ndarray:
    """A host array as the model stores it: float bit patterns, integer values."""
    a = np.asarray(array)
    if dtype in nn.FLOATS:
        return a.view({1: np.uint8, 2: np.uint16, 4: np.uint32}[a.dtype.itemsize]).astype(nn.storage(dtype))
    return a.astype(np.int64)


def _param(t: Any, array: np.ndarray) -> Value:
    dtype = str(t.dtype)
    levels = (t.chip, t.element)
    live, _ = index_of(levels)
    _, linear = _host_index(t.element, len(live))
    host = host_bits(array, dtype).reshape(-1)
    data = np.where(live, host[np.where(live, linear, 0)], 0).astype(nn.storage(dtype))
    return Value(dtype, levels, data, 1)


def _result(v: Value) -> np.ndarray:
    live, _ = index_of(v.levels)
    shape, linear = _host_index(v.levels[1], len(live))
    if v.levels[0].axes():  # a Chip holding axes: every live chip row in front (docs/machine/topology.md)
        chip_live, _ = level_cells(v.levels[0])
        row = np.arange(len(live), dtype=np.int64) // max(v.levels[1].size, 1)
        linear = linear + np.maximum((np.cumsum(chip_live) - 1)[row], 0) * int(np.prod(shape))
        shape = (int(chip_live.sum()), *shape)
    out = np.zeros(int(np.prod(shape)), dtype=v.data.dtype)
    out[linear[live]] = v.data[live]
    return out.reshape(shape)


def _host_index(element: Any, positions: int) -> tuple[tuple[int, ...], np.ndarray]:
    """(host shape, host linear index of every buffer position) of an HBM element: one host
    dimension per top-level term, as long as the term's live positions, and a position's
    index along it is its rank among them (padding is not in the host array)."""
    ranks = []
    for term in _items(element):
        term_live, _ = level_cells(term)
        ranks.append((int(term_live.sum()), np.cumsum(term_live) - 1, term.size))
    rest = np.arange(positions, dtype=np.int64) % max(element.size, 1)
    linear, stride = np.zeros(positions, dtype=np.int64), 1
    for n, rank, size in reversed(ranks):
        linear += np.maximum(rank[rest % size], 0) * stride
        rest, stride = rest // size, stride * n
    return tuple(n for n, _, _ in ranks), linear


# --- element-wise conversions ------------------------------------------------------------

def _fetch_cast(v: Value, to: str) -> np.ndarray:
    frm = v.dtype
    if frm == to or (frm in nn.INT_BITS and to == "i32"):
        return v.data.copy()
    if frm == "bf16" and to == "f32":
        return nn.widen_bf16(v.data)
    if frm == "f32" and to == "bf16":
        return nn.narrow_bf16(v.data)
    if frm in ("f8e4m3", "f8e5m2") and to == "f32":
        return nn.decode_f8(v.data, frm)
    raise ModelError(f"fetch_cast {frm} -> {to} is not a conversion of the model")


def _lookup(v: Value, to: str) -> np.ndarray:
    if v.dtype == "f4e2m1":
        return nn.f4_to_f8(v.data, to)
    return nn.f8_to_bf16(v.data, v.dtype)


def _cast(v: Value, to: str) -> np.ndarray:
    if to in nn.INT_BITS:
        return nn.wrap(v.data, nn.INT_BITS[to])
    return {"bf16": nn.narrow_bf16, "f8e4m3": nn.narrow_e4m3, "f8e5m2": nn.narrow_e5m2}[to](v.data)


def _converted(v: Value, dtype: str, data: np.ndarray) -> Value:
    return Value(dtype, v.levels, np.asarray(data).astype(nn.storage(dtype)), v.spatial)


# --- the Contraction Engine --------------------------------------------------------------

def _outer(stream: Value, trf: Value, time: Any, packet: Any, operand: str) -> Value:
    levels = stream.levels[:3] + (trf.levels[3], time, packet)
    live, _ = index_of(levels)
    xs = nn.widen_operand(move(stream, levels, 3, True).data, stream.dtype)
    xw = nn.widen_operand(move(trf, levels, 3, True).data, trf.dtype)
    if operand in nn.INT_BITS:
        product = np.where(live, xs * xw, 0)
    else:
        product = np.where(live, nn.fmul(xs, xw), np.uint32(0))
    return Value(nn.accumulator(operand), levels, product, 3)


def _same(a: dict, b: dict, ia: np.ndarray, ib: np.ndarray) -> bool:
    """Do positions `ia` of coordinates `a` hold the same index as positions `ib` of `b`?"""
    zero = np.zeros(len(ia), np.int64)
    return all(np.array_equal(a[k][ia] if k in a else zero, b[k][ib] if k in b else zero) for k in set(a) | set(b))


def packet_depth(packet: Any, out: Any) -> int:
    """The smallest d such that each group of 2^d adjacent cells of `packet` holds only
    the logical index of its output column (restricted to the output's digits), and the
    groups past the output's columns hold padding only."""
    p_live, p_coords = level_cells(packet)
    o_live, o_coords = level_cells(out)
    kept = restrict(p_coords, digits(out), packet.size)
    d = 0
    while packet.size % (1 << d) == 0:
        g = 1 << d
        groups = packet.size // g
        pos = np.arange(packet.size)
        col = pos // g
        inside = col < out.size
        ok = not np.any(p_live & ~inside)
        sel = p_live & inside
        ok = ok and bool(np.all(o_live[col[sel]])) and _same(kept, o_coords, pos[sel], col[sel])
        ok = ok and not np.any(o_live[groups:]) if groups < out.size else ok
        if ok:
            return d
        d += 1
    raise ModelError(f"no adder-tree depth reduces {packet} to {out}")


def _tree(leaves: np.ndarray, integer: bool) -> np.ndarray:
    """Adjacent pairs, level by level, along the last axis."""
    v = leaves
    while v.shape[-1] > 1:
        v = v[..., 0::2] + v[..., 1::2] if integer else nn.fadd(v[..., 0::2], v[..., 1::2])
    return v[..., 0]


def _packet(x: Value, out: Any) -> Value:
    p = x.levels[-1]
    g = 1 << packet_depth(p, out)
    rows = x.data.reshape(-1, p.size)
    n = min(out.size, p.size // g)
    y = np.zeros((rows.shape[0], out.size), dtype=rows.dtype)
    y[:, :n] = _tree(rows[:, :n * g].reshape(rows.shape[0], n, g), x.dtype == "i32")
    return Value(x.dtype, x.levels[:-1] + (out,), y.reshape(-1), 3)


def _time(y: Value, out_time: Any) -> Value:
    t, p = y.levels[-2], y.levels[-1]
    t_live, t_coords = level_cells(t)
    o_live, o_coords = level_cells(out_time)
    held = digits(out_time)
    axes = sorted(held)
    slot = {tuple(int(o_coords[a][s]) if a in o_coords else 0 for a in axes): s for s in np.flatnonzero(o_live)}
    kept = restrict(t_coords, held, t.size)
    rows = y.data.reshape(-1, t.size, p.size)
    acc = np.zeros((rows.shape[0], out_time.size, p.size), dtype=rows.dtype)
    for o in np.flatnonzero(t_live):                      # stream order
        key = tuple(int(kept[a][o]) for a in axes)
        if key not in slot:
            raise ModelError(f"time step {o} of {t} has no slot in {out_time}")
        s = slot[key]
        acc[:, s] = acc[:, s] + rows[:, o] if y.dtype == "i32" else nn.fadd(acc[:, s], rows[:, o])
    if y.dtype == "i32":
        acc = nn.wrap(acc, 32)
    return Value(y.dtype, y.levels[:-2] + (out_time, p), acc.reshape(-1), 3)


# --- the interpreter -------------------------------------------------------------------------

def _stage(op: Any, env: dict[int, Value]) -> Value:
    name = type(op).NAME.removeprefix("ir.")
    v = env[op.input.id] if hasattr(op, "input") else None
    if name in ("to_dm", "to_hbm"):
        src = env[op.src.id]
        levels = op.result.type.levels()
        return move(src, levels, 1 if name == "to_hbm" else 3, False)
    if name == "view":
        return env[op.src.id]
    if name == "begin_interleaved":
        return begin_interleaved(env[op.view.id], env[op.rhs.id], op.axis)
    if name == "begin":
        src = env[op.view.id]
        return Value(src.dtype, src.levels[:3] + (ONE, src.levels[3]), src.data, 3)
    if name in ("fetch", "collect"):
        return move(v, v.levels[:3] + (op.time, op.packet), 3, True)
    if name == "fetch_table_lookup":
        return _converted(v, str(op.dtype), _lookup(v, str(op.dtype)))
    if name == "fetch_cast":
        return _converted(v, str(op.dtype), _fetch_cast(v, str(op.dtype)))
    if name == "fetch_zero_point_sub":
        return _converted(v, str(op.dtype), v.data - int(op.zero_point))
    if name == "to_trf":
        return move(v, v.levels[:3] + (op.lane, op.element), 3, True)
    if name == "contract_outer":
        return _outer(v, env[op.trf.id], op.time, op.packet, v.dtype)
    if name == "contract_packet":
        return _packet(v, op.packet)
    if name == "contract_time":
        return _time(v, op.time)
    if name == "contract_lane":
        return move(v, v.levels[:3] + (op.time, op.packet), 3, True)
    if name == "cast":
        c = _converted(v, str(op.dtype), _cast(v, str(op.dtype)))
        return move(c, v.levels[:3] + (v.levels[3], op.packet), 3, True)
    if name == "to_vrf":
        return move(v, v.levels[:3] + (op.element,), 3, True)
    if name == "vector_inter_slice_reduce":  # across the slices of each (chip, cluster): naive_inter.py
        return inter_reduce(v, op)
    if name.startswith("vector_"):
        rf = [move(env[r.id], v.levels, 3, True).data for r in getattr(op, "rf", ())]
        if name == "vector_intra_slice_tag":  # the tag's comparisons, for the branched ops after it
            env["mode", op.result.id] = op.mode
            if op.mode.name == "COMPARISON":
                return v
        paired = pair_stage(name, op, env, v)
        return paired if paired is not None else vector_stage(name, op, v, rf[0] if rf else None)
    if name == "switch":         # the ring moves packets across the slices of each (chip, cluster): by logical index
        out = move(v, v.levels[:2] + (op.out_slice, op.out_time, v.levels[4]), 2, True)
        return Value(out.dtype, out.levels, out.data, 3)
    if name == "transpose":      # the Transpose Engine swaps time and packet: a move by logical index
        return move(v, v.levels[:3] + (op.out_time, op.out_packet), 3, True)
    if name == "commit_trim":
        return move(v, v.levels[:3] + (v.levels[3], op.packet), 3, True)
    if name == "commit_cast":
        return _converted(v, "bf16", nn.relu_bf16(v.data) if op.relu else nn.narrow_bf16(v.data))
    if name == "commit":
        return move(v, v.levels[:3] + (op.element,), 3, True)
    if name == "commit_valid_count_pack":  # the packed commit after it places every live cell by its index
        return v
    if name.endswith("_lift"):   # a fetch base per position: each row reads its own copy, by logical index
        spatial = list(v.levels[:3])
        spatial[("fetch_chip_lift", "fetch_cluster_lift", "fetch_slice_lift").index(name)] = op.out_placement
        return move(v, (*spatial, op.out_time, v.levels[4]), 3, True)
    if name == "fetch_mask":     # padding is zero in the model, so the mask is a move to the #{0} mappings
        return move(v, v.levels[:3] + (op.out_time, op.out_packet), 3, True)
    if name in ("new", "window", "to_view", "memset"):
        return _view_stage(name, op, env)
    raise ModelError(f"the naive model has no semantics for {type(op).NAME}")


def _shifted(levels: tuple[Any, ...], offset: tuple[int, ...]) -> tuple[np.ndarray, np.ndarray]:
    """(live positions of a view's buffer, the flat positions of its base they name): the
    base position of a cell shifts every level's coordinate by that level's offset."""
    live, _ = index_of(tuple(levels))
    grid = np.indices(tuple(m.size for m in levels)).reshape(len(levels), -1)
    shifted = grid[:, live] + np.asarray(offset, dtype=np.int64)[:, None]
    return np.flatnonzero(live), np.ravel_multi_index(tuple(shifted), tuple(m.size for m in levels))


def _fill(value: Any, dtype: str) -> Any:
    """A fill value as the model stores it (float bit patterns, integer values)."""
    if dtype not in nn.FLOATS:
        return int(value)
    import ml_dtypes

    host = {"bf16": ml_dtypes.bfloat16, "f32": np.float32, "f8e4m3": ml_dtypes.float8_e4m3fn,
            "f8e5m2": ml_dtypes.float8_e5m2}[dtype]
    return np.asarray(value, np.float64).astype(host).view(nn.storage(dtype))


def _view_stage(name: str, op: Any, env: dict[int, Value]) -> Value:
    """`new` is zeros; `window` reads the base's shifted cells; `to_view` writes them."""
    t = op.result.type
    levels, spatial = t.levels(), 1 if t.kind == "hbm" else 3
    if name == "new":
        return Value(str(t.dtype), levels, np.zeros(int(np.prod([m.size for m in levels])), nn.storage(str(t.dtype))),
                     spatial)
    if name == "window":
        base = env[op.src.id]
        out = np.zeros_like(base.data)
        mine, theirs = _shifted(levels, op.offset)
        out[mine] = base.data[theirs]
        return Value(base.dtype, levels, out, spatial)
    into = env[op.into.id]
    if name == "memset":
        out = into.data.copy()
        out[_shifted(op.view.levels(), op.offset)[1]] = _fill(op.value, into.dtype)
        return Value(into.dtype, into.levels, out, spatial)
    moved = move(env[op.src.id], op.view.levels(), spatial, False)
    out = into.data.copy()
    mine, theirs = _shifted(op.view.levels(), op.offset)
    out[theirs] = moved.data[mine]
    return Value(into.dtype, into.levels, out, spatial)


def evaluate(kernel: Any, *arrays: np.ndarray) -> tuple[np.ndarray | None, ...]:
    """Run `kernel` (a `@device` kernel whose trace is clean) on host `arrays`; the
    results as a tuple of host-shaped arrays (float bits, integer values)."""
    trace = kernel.trace()
    if trace.errors:
        raise ModelError(f"{kernel.name} does not trace: {[d.code for d in trace.errors]}")
    env: dict[int, Value] = {}
    results: tuple = ()
    finals: list[np.ndarray] = []  # the final contents of the in-out parameters, after the results
    for op in trace.kernel.ops:
        name = type(op).NAME
        if name == "ir.param":
            env[op.result.id] = _param(op.result.type, arrays[op.index])
        elif name == "ir.return":
            results = tuple(None if v is None else _result(env[v.id]) for v in op.values)
        elif name == "ir.final":
            finals.append(_result(env[op.value.id]))
        else:
            env[op.result.id] = _stage(op, env)
    return results + tuple(finals)
