"""The Vector Engine's stages on cpu buffers: each op is one `ir.vector.numerics` step
on every cell; padding cells and dead rows are set back to zero after it (the engine's
output on padding is not data; zero keeps the buffers deterministic, as the interpreter does).
The inter-slice reduce folds every (chip, cluster) ring of slices instead of each row.
A step whose input the executor hands over (`donate`: read for the last time, shared with
nothing) writes its live rows into that buffer instead of a new one.

Pair mode: a pair is one array with a leading group axis of 2 over the stream's buffer
shape; the unzip gathers each group's time positions (`ir.vector.pair`), each paired step
runs `ir.vector.numerics.steps.run_step` on the groups it names, a zip merges the groups
(`ir.vector.pair.zip_values`). Padding cells are zero after every op, as in the
single-stream chain.

Branched operands: the execution ids come from the stream at its tag (the op's `tagged`
operand, `ir.vector.branching.tag_ids`); `branch_step` runs the op per slot. On the 4-way
float path the ids of a flit's front four cells follow the trimmed packet.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ir.vector import branch_ops as bops
from ir.vector import chain_ops as cops
from ir.vector import ops as vops
from ir.vector import pair_logic_ops as plogic
from ir.vector import pair_ops as pops
from ir.vector import pair_ternary_ops as ptern
from ir.vector import stash_ops as sops
from ir.vector.branching import branch_step, stash_step, tag_ids
from ir.vector.inter_ops import VectorInterSliceReduce
from ir.vector.inter_reduce import reduce_ring
from ir.vector.intra_reduce import axis_padded, mapping_live, reduce_counted, reduce_stored
from ir.vector.numerics.steps import run_step
from ir.vector.pair import unzip_index, zip_values
from ir.vector.reduce_ops import VectorIntraSliceReduce
from ir.vector.unit_ops import unit_op_classes

from backends.cpu import compact, compact_moves, layout, moves
from backends.cpu.compact import Compact
from backends.cpu.handlers import handles

__all__: list[str] = []


def _same_rows(a: Any, b: Any) -> bool:
    return layout.spatial_levels(a) == layout.spatial_levels(b)


def _masked(out: np.ndarray, t: Any) -> np.ndarray:
    """Live rows `out` (rows, *local) of `t` with the padding cells inside a row set to zero."""
    pad_local = layout.local_pad(layout.local_levels(t))
    if pad_local.any():
        out = np.where(pad_local.reshape(out.shape[1:])[None], np.zeros((), out.dtype), out)
    return out


def _live_result(out: np.ndarray, t: Any) -> np.ndarray:
    """The full buffer of type `t` from its live rows `out` (rows, *local): padding cells
    inside the rows set to zero, padding rows zero."""
    return layout.from_rows(_masked(out, t), t)


def _into(buf: np.ndarray, out: np.ndarray, t: Any) -> np.ndarray:
    """`_live_result` written into `buf` (a buffer of `t`'s shape and storage, handed over by
    the executor: `donate`), whose padding rows already hold zero: no new buffer."""
    out = _masked(out, t)
    flat = buf.reshape(layout.n_rows(t), *out.shape[1:])
    rows = layout.live_rows(t)
    even = layout.even_rows(t) if len(rows) != len(flat) else slice(None)
    flat[even if even is not None else rows] = out
    return buf


def _result(out: np.ndarray, t: Any, buf: np.ndarray, owned: bool) -> np.ndarray:
    """The full buffer of `t` from its live rows `out`: in `buf` when the executor handed it
    over and it fits, else a new one."""
    if owned and buf.shape == layout.shape_of(t) and buf.dtype == out.dtype:
        return _into(buf, out, t)
    return _live_result(out, t)


def _rf_operand(op: Any, vrf: np.ndarray) -> np.ndarray:
    """The VRF tensor broadcast over the stream by axis name (a per-slice move)."""
    return moves.move_local(compact.full(vrf), op.rf[0].type, op.input.type).astype(vrf.dtype, copy=False)


def _rf_rows(op: Any, vrf: np.ndarray | Compact) -> np.ndarray:
    """The live rows of `_rf_operand` (rows, *local of the stream), moved on those rows only."""
    moved = compact_moves.move_local(vrf, op.rf[0].type, op.input.type, fresh=True)
    return compact.rows_of(moved, op.input.type).astype(vrf.dtype, copy=False)


def _compact_step(op: Any, buf: Compact, vrf: np.ndarray | Compact | None) -> Compact:
    """`_step` on a value of live rows only, keeping its rows."""
    unit, name, arg, *extra = op.step()
    operand = None if vrf is None else _rf_rows(op, vrf)
    out = run_step(unit, name, arg, buf.base, *extra, operand=operand)
    out_t = op.result.type
    out = out.astype(layout.storage_dtype(out_t.dtype), copy=False).reshape(buf.base.shape)
    return compact.make(_masked(out, out_t), out_t)


@handles(vops.VectorFxp, vops.VectorClip, vops.VectorFxpToFp, vops.VectorFpToFxp, vops.VectorFpUnary,
         vops.VectorFpBinary, cops.VectorLogic, cops.VectorFpTernary, cops.VectorFpDiv, cops.VectorReinterpret,
         donate=0, compact=True)
def _step(op: Any, buf: np.ndarray, vrf: np.ndarray | None = None, owned: bool = False) -> np.ndarray:
    t, out_t = op.input.type, op.result.type
    if isinstance(buf, Compact) and _same_rows(t, out_t):
        return _compact_step(op, buf, vrf)
    buf, vrf = compact.full(buf), compact.full(vrf)
    unit, name, arg, *extra = op.step()
    if _same_rows(t, out_t):  # the step on the live rows only (padded slices stay zero)
        rows = layout.rows_view(buf, t)
        operand = None if vrf is None else layout.rows_view(_rf_operand(op, vrf).reshape(buf.shape), t)
        out = run_step(unit, name, arg, rows, *extra, operand=operand)
        return _result(out.astype(layout.storage_dtype(out_t.dtype), copy=False).reshape(rows.shape), out_t, buf, owned)
    operand = None if vrf is None else _rf_operand(op, vrf).reshape(buf.shape)
    out = run_step(unit, name, arg, buf, *extra, operand=operand).astype(layout.storage_dtype(op.result.type.dtype),
                                                                          copy=False)
    return layout.zero_padding(out.reshape(buf.shape), op.result.type)


for _cls in unit_op_classes():  # the units whose traced op is made from their declaration
    handles(_cls, donate=0, compact=True)(_step)


@handles(vops.VectorNarrowTrim, vops.VectorWidenPad, cops.VectorNarrowSplit, cops.VectorWidenConcat,
         compact=True, lazy=True)
def _way(op: Any, buf: np.ndarray) -> np.ndarray:
    """`vector_narrow_trim` / `vector_widen_pad`: the packet moves to its new mapping (the
    trimmed cells are padding; the padded ones are zero); composed with a move not made yet."""
    return compact_moves.move_local(buf, op.input.type, op.result.type, lazy=True)


@handles(vops.VectorInit, vops.VectorTag, vops.VectorFinal, compact=True, lazy=True)
def _pass(op: Any, buf: np.ndarray) -> np.ndarray:
    """`vector_init`, the ZERO tag and `vector_final` leave the data as it is."""
    return buf


@handles(VectorIntraSliceReduce, compact=True)
def _intra_reduce(op: Any, buf: np.ndarray | Compact) -> np.ndarray | Compact:
    """`vector_intra_slice_reduce`: the fold of `ir.vector.intra_reduce` on every slice row (of
    a padded axis: only the cells the mappings mark live in that row's slice; the interpreter
    folds by the record's Valid Count Generator configuration instead)."""
    t, out_t = op.input.type, op.result.type
    same = _same_rows(t, out_t)  # then only the live rows are folded (padded slices stay zero)
    kept = same and isinstance(buf, Compact)
    buf = buf if kept else compact.full(buf)
    rows = (compact.rows_of(buf, t) if same else buf).reshape(-1, t.time.size, t.packet.size)
    if axis_padded(op.axis, t.slice, t.time, t.packet):  # the padding is excluded cell by cell, by the mapping
        live = mapping_live(t.slice, t.time, t.packet)
        slices = layout.live_rows(t) if same else np.arange(rows.shape[0])
        live = live[slices % t.slice.size]  # rows are (chip, cluster, slice)-major: a row's slice is its index mod
        out = reduce_counted(op.scalar, op.op.name, rows, live, op.axis, t.time, op.out_time, op.out_packet)
    else:
        out = reduce_stored(op.scalar, op.op.name, rows, op.axis, t.time, t.packet, op.out_time, op.out_packet)
    if kept:
        return compact.make(_masked(out.reshape(len(rows), -1), out_t), out_t)
    if same:
        return _live_result(out.reshape(len(rows), -1), out_t).reshape(layout.shape_of(out_t))
    return layout.zero_padding(out.reshape(layout.shape_of(out_t)), out_t)


@handles(VectorInterSliceReduce)
def _inter_reduce(op: Any, buf: np.ndarray) -> np.ndarray:
    """`vector_inter_slice_reduce`: the fold of `ir.vector.inter_reduce` on every (chip, cluster)
    ring of the (chip, cluster, slice, time, packet) buffer."""
    t, out_t = op.input.type, op.result.type
    rings = np.asarray(buf).reshape(-1, t.slice.size, t.time.size, t.packet.size)
    out = np.stack([reduce_ring(op.scalar, op.op.name, ring, t.slice, t.time, op.out_slice, op.out_time)
                    for ring in rings])
    return layout.zero_padding(out.reshape(layout.shape_of(out_t)), out_t)


@handles(pops.VectorUnzip)
def _unzip(op: pops.VectorUnzip, buf: np.ndarray) -> np.ndarray:
    index = unzip_index(op.input.type.time, op.split_time, op.axis_name)
    groups = np.take(buf, np.maximum(index, 0), axis=-2)  # (..., 2, S, P)
    groups = np.where((index >= 0)[..., None], groups, np.zeros((), buf.dtype))
    out = np.moveaxis(groups, -3, 0)
    return np.stack([layout.zero_padding(g, op.result.type) for g in out])


@handles(pops.PairFxp, pops.PairClip, pops.PairFpBinary, pops.PairFpUnary, ptern.PairFpTernary, pops.PairFxpToFp,
         pops.PairFpToFxp, plogic.PairLogic, plogic.PairReinterpret)
def _paired(op: Any, buf: np.ndarray, *vrfs: np.ndarray) -> np.ndarray:
    """A paired step: each named group runs the step with its own argument (and the op's mode);
    a group whose operand is a VRF tensor reads it, broadcast over the group's stream."""
    unit, name, side, a0, a1 = op.pair_step()
    t, mode = op.result.type, op.step_mode()
    reads = getattr(op, "rf_groups", lambda: 0)()
    adds = op.addends() if hasattr(op, "addends") else (0, 0)  # a paired FMA_F's c per group
    t_in = op.input.type
    live = _same_rows(t_in, t)  # then each group steps its live rows only (padded slices stay zero)
    out = []
    for g, arg in ((0, a0), (1, a1)):
        values = layout.rows_view(buf[g], t_in) if live else buf[g]
        if reads >> g & 1:
            operand = _rf_operand(op, vrfs[0]).reshape(buf[g].shape)
            operand = layout.rows_view(operand, t_in) if live else operand
            values = run_step(f"{unit}_RF", name, 0, values, operand=operand).astype(values.dtype, copy=False)
        elif side in ("BOTH", f"G{g}"):
            values = run_step(unit, name, arg, values, mode, adds[g]).astype(layout.storage_dtype(t.dtype), copy=False)
        out.append(_live_result(values, t).reshape(buf[g].shape) if live else layout.zero_padding(values, t))
    return np.stack(out)


@handles(pops.PairNarrowSplit, pops.PairWidenConcat)
def _pair_way(op: Any, buf: np.ndarray) -> np.ndarray:
    """`vector_narrow_split` / `vector_widen_concat`: the flattened (time, packet) order is kept."""
    return buf.reshape(buf.shape[:-2] + tuple(m.size for m in (op.result.type.time, op.result.type.packet)))


@handles(pops.PairNarrowTrim, pops.PairWidenPad)
def _pair_packet(op: Any, buf: np.ndarray) -> np.ndarray:
    """`vector_narrow_trim` / `vector_widen_pad` on a pair: each group's packet moves to its new
    mapping (the trimmed cells are padding; the padded ones are zero)."""
    return np.stack([compact_moves.move_local(g, op.input.type, op.result.type) for g in buf])


@handles(pops.ZipFxp, pops.ZipClip, pops.ZipFp, plogic.ZipLogic)
def _zip(op: Any, buf: np.ndarray) -> np.ndarray:
    unit, name, _, mode, _ = op.pair_step()
    merged = zip_values(unit, name, mode, buf[0], buf[1])
    return layout.zero_padding(merged, op.result.type)


def _on_rows(op: Any, pairs: list[tuple[np.ndarray, Any]], compute: Any) -> np.ndarray:
    """`compute(*arrays)` on the buffers of `pairs` (buffer, type; the stream's first) and the
    result of `op`: on their live rows only when every one has the result's slices (the
    padded slices stay zero), else on the whole buffers; padding cells set back to zero."""
    out_t = op.result.type
    dtype = layout.storage_dtype(out_t.dtype)
    if all(_same_rows(t, out_t) for _, t in pairs):
        rows = [compact.rows_of(b if isinstance(b, Compact) else b.reshape(layout.shape_of(t)), t) for b, t in pairs]
        out = compute(*rows).astype(dtype, copy=False).reshape(rows[0].shape)
        if isinstance(pairs[0][0], Compact):  # the stream held its live rows only: so does the result
            return compact.make(_masked(out, out_t), out_t)
        return _live_result(out, out_t).reshape(layout.shape_of(out_t))
    return layout.zero_padding(compute(*(compact.full(b) for b, _ in pairs)).astype(dtype, copy=False), out_t)


def _branched(op: Any, buf: np.ndarray, tagged: np.ndarray, *read: np.ndarray) -> np.ndarray:
    """`read`: the VRF tensor of the rf slot (`op.rf`), or the stashed buffer (`op.stashed`)."""
    scalar = "f32" if op.tagged.type.dtype.name == "F32" else "i32"
    pairs = [(buf, op.input.type), (tagged, op.tagged.type)]
    if op.port_reads_stash():  # the stash holds the stream as `vector_stash` saw it
        pairs.append((read[-1], op.stashed[0].type))
    elif op.port() is not None:  # the rf slot: the VRF tensor broadcast over the stream by axis name
        pairs.append((compact.make(_rf_rows(op, read[0]), op.input.type) if isinstance(buf, Compact)
                      else _rf_operand(op, read[0]).reshape(buf.shape), op.input.type))

    def compute(values: np.ndarray, at_tag: np.ndarray, *port_values: np.ndarray) -> np.ndarray:
        ids = tag_ids(at_tag, op.cmps, scalar)  # branch_step follows a trim or a split (follow_way)
        port = None
        if port_values:
            port = (*op.port(), port_values[0], op.port_arg1()) if op.port_reads_stash() else \
                (*op.port(), port_values[0])
        return branch_step(op.unit(), op.op_name(), values, ids, op.slots(), port, op.mode_name(),
                           op.port_reads_stash())

    return _on_rows(op, pairs, compute)


def _stash_read(op: Any, buf: np.ndarray, stashed: np.ndarray) -> np.ndarray:
    """`op(stream, stashed)` (under the op's mode; FMA_F with its `c`): the stash holds the
    stream as `vector_stash` saw it."""
    return _on_rows(op, [(buf, op.input.type), (stashed, op.stashed.type)],
                    lambda values, kept: stash_step(op.unit(), op.op_name(), op.mode_name(), op.arg1(), values, kept))


handles(*bops.BRANCH_OP_CLASSES, compact=True)(_branched)
handles(*sops.STASH_READS, compact=True)(_stash_read)


@handles(sops.VectorStash, compact=True)
def _stash(op: Any, buf: np.ndarray) -> np.ndarray:
    """`vector_stash` passes the stream on unchanged; its snapshot is the buffer itself."""
    return buf
