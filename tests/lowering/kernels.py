"""Small kernels built on demand for the lowering tests: one per (element type, flits,
destination) combination of the FEED-2 table, plus TRF and DM pressure kernels.

The module does not postpone annotations: the factories build mappings with explicit
axes and the kernel signatures read them from the enclosing scope at definition time.
"""

from npu_opt import (
    Context, DmTensor, HbmTensor, LaneMode, bf16, device, f4e2m1, f8e4m3, f8e5m2, f32, i4, i5, i8,
    i9, i16, i32, m, u8,
)

__all__ = ["trf_kernel", "contract_kernel", "cast_kernel", "commit_kernel", "transpose_engine_kernel",
           "trf_pressure_kernel",
           "ragged_commit_kernel", "relayout_kernel", "two_cluster_kernel", "transpose_kernel", "long_loop_kernel",
           "DTYPES"]

DTYPES = {"i4": i4, "i5": i5, "i8": i8, "i9": i9, "i16": i16, "i32": i32, "u8": u8, "bf16": bf16,
          "f32": f32, "f8e4m3": f8e4m3, "f8e5m2": f8e5m2, "f4e2m1": f4e2m1}

ACC = {"i4": i32, "i5": i32, "i8": i32, "i9": i32, "bf16": f32, "f8e4m3": f32, "f8e5m2": f32}


def _space(axes):
    q = lambda text: m(text, axes=axes)  # noqa: E731
    return q, q("1"), q("1 # 2"), q("1 # 64")


def _adapt(stream, conv):
    """Apply adapter stages given as (method, *args) tuples."""
    for method, *args in conv:
        stream = getattr(stream, method)(*args)
    return stream


def _flit_elems(d) -> int:
    return 256 // d.bits


def trf_kernel(src, conv=(), after=None, row_bytes=32, lanes=2, context="sub"):
    """`src` elements, converted by `conv` to `after`, loaded into the TRF as `lanes` lanes of
    `row_bytes` bytes (Flit1 for 32, Flit2 for a multiple of 64)."""
    after = after or src
    f = _flit_elems(after)
    e = row_bytes * 8 // after.bits
    q, chip, cluster, sl = _space({"L": lanes, "E": e})
    t2, p2 = (q("L, E / %d" % f), q("E %% %d" % f)) if e > f else (q("L"), q("E"))

    @device(chip=1)
    def trf_only(ctx: Context, x: HbmTensor[src, chip, q("L, E")]) -> None:
        x = x.to_dm(ctx.tdma, DmTensor[src, chip, cluster, sl, q("L, E")])
        s = getattr(ctx, context).begin(x.view()).fetch(q("L"), q("E"))
        _adapt(s, conv).collect(t2, p2).to_trf(q("L"), q("E"))

    return trf_only


def contract_kernel(src, weight, pack, conv=(), after=None, steps=8, weight_context="sub"):
    """A one-lane contraction: stream `src` (converted to `after`) x TRF `weight` (loaded in
    `weight_context`), packets of `pack` flits, tree-summed to one column, committed as 8
    bytes per step."""
    after = after or src
    f, wf = _flit_elems(after), _flit_elems(weight)
    k = pack * f
    acc = ACC[str(after)]
    q, chip, cluster, sl = _space({"T": steps, "K": k})
    wt, wp = (q("K / %d" % wf), q("K %% %d" % wf)) if k > wf else (q("1"), q("K"))
    st, sp = (q("T, K / %d" % f), q("K %% %d" % f)) if pack == 2 else (q("T"), q("K"))

    @device(chip=1)
    def contraction(ctx: Context, x: HbmTensor[src, chip, q("T, K")],
                    w: HbmTensor[weight, chip, q("K")]) -> HbmTensor[acc, chip, q("T")]:
        x = x.to_dm(ctx.tdma, DmTensor[src, chip, cluster, sl, q("T, K")])
        w = w.to_dm(ctx.tdma, DmTensor[weight, chip, cluster, sl, q("K")])
        w_trf = (getattr(ctx, weight_context).begin(w.view()).fetch(q("1"), q("K")).collect(wt, wp)
                 .to_trf(q("1"), q("K")))
        s = _adapt(ctx.main.begin(x.view()).fetch(q("T"), q("K")), conv)
        y = (s.collect(st, sp)
             .contract_outer(w_trf, q("T"), q("K"))
             .contract_packet(q("1"))
             .contract_time(q("T"))
             .contract_lane(q("T"), q("1 # 8"), LaneMode.INTERLEAVED)
             .commit_trim(q("1 # 2"))
             .commit(q("T, 1 # 2")))
        return y.to_hbm(ctx.tdma, HbmTensor[acc, chip, q("T")])

    return contraction


def cast_kernel(src, wide, narrow):
    """`src` widened by fetch_cast to the 32-bit `wide`, collected one flit per step and
    narrowed by the Cast Engine to `narrow` (CAST destination, Flit1)."""
    b = 8
    nf = _flit_elems(narrow)
    q, chip, cluster, sl = _space({"T": 4, "B": b})
    trim = q("B") if b * narrow.bits // 8 in (8, 16, 24, 32) else q("B # %d" % (64 // narrow.bits))

    @device(chip=1)
    def cast_chain(ctx: Context, x: HbmTensor[src, chip, q("T, B")]) -> HbmTensor[narrow, chip, q("T, B")]:
        x = x.to_dm(ctx.tdma, DmTensor[src, chip, cluster, sl, q("T, B")])
        y = (ctx.main.begin(x.view()).fetch(q("T"), q("B")).fetch_cast(wide).collect(q("T"), q("B"))
             .cast(narrow, q("B # %d" % nf)).commit_trim(trim).commit(q("T, B")))
        return y.to_hbm(ctx.tdma, HbmTensor[narrow, chip, q("T, B")])

    return cast_chain


def commit_kernel(src, conv=(), after=None, context="main", steps=4):
    """`src` fetched one flit (after `conv`) per step and committed as it is (COMMIT, Flit1)."""
    after = after or src
    f = _flit_elems(after)
    q, chip, cluster, sl = _space({"T": steps, "P": f})

    @device(chip=1)
    def copy(ctx: Context, x: HbmTensor[src, chip, q("T, P")]) -> HbmTensor[after, chip, q("T, P")]:
        x = x.to_dm(ctx.tdma, DmTensor[src, chip, cluster, sl, q("T, P")])
        s = _adapt(getattr(ctx, context).begin(x.view()).fetch(q("T"), q("P")), conv)
        y = s.collect(q("T"), q("P")).commit_trim(q("P")).commit()
        return y.to_hbm(ctx.tdma)

    return copy


def transpose_engine_kernel(src, context="main"):
    """A tile of `src` transposed (TRANSPOSE, Flit1): as many rows as one 64-bit transposed
    row holds, each of the `valid` columns the engine reads per packet."""
    f = _flit_elems(src)
    valid, rows = (16 if src.bits == 4 else 8), 64 // src.bits
    q, chip, cluster, sl = _space({"T": rows, "V": valid})

    @device(chip=1)
    def tile(ctx: Context, x: HbmTensor[src, chip, q("T, V")]) -> HbmTensor[src, chip, q("V, T")]:
        x = x.to_dm(ctx.tdma, DmTensor[src, chip, cluster, sl, q("T, V")])
        y = (getattr(ctx, context).begin(x.view()).fetch(q("T"), q("V")).collect(q("T"), q(f"V # {f}"))
             .transpose(q("V"), q(f"T # {f}")).commit_trim(q("T")).commit(q("V, T")))
        return y.to_hbm(ctx.tdma)

    return tile


def trf_pressure_kernel(loads: int, lane_bytes: int):
    """`loads` 8-lane TRF tensors of `lane_bytes` bytes per lane, all live at once: each is
    used by one contraction after every load has happened."""
    e = lane_bytes
    q, chip, cluster, sl = _space({"L": 8, "E": e, "T": 4})

    @device(chip=1)
    def pressure(ctx: Context, x: HbmTensor[i8, chip, q("T, E")],
                 w: HbmTensor[i8, chip, q("L, E")]) -> None:
        x = x.to_dm(ctx.tdma, DmTensor[i8, chip, cluster, sl, q("T, E")])
        w = w.to_dm(ctx.tdma, DmTensor[i8, chip, cluster, sl, q("L, E")])
        trfs = [ctx.sub.begin(w.view()).fetch(q("L"), q("E")).collect(q("L, E / 32"), q("E % 32"))
                .to_trf(q("L"), q("E")) for _ in range(loads)]
        for w_trf in trfs:
            (ctx.main.begin(x.view()).fetch(q("T"), q("E")).collect(q("T, E / 32"), q("E % 32"))
             .contract_outer(w_trf, q("T, E / 64"), q("E % 64"))
             .contract_packet(q("1"))
             .contract_time(q("T"))
             .contract_lane(q("T"), q("L"), LaneMode.INTERLEAVED)
             .commit_trim(q("L"))
             .commit())

    return pressure


def ragged_commit_kernel():
    """A committed tensor with a ragged `F # 8` row factor (F = 6), moved back to HBM: the
    DMA transfers the six live rows only."""
    q, chip, cluster, sl = _space({"F": 6, "P": 8})

    @device(chip=1)
    def ragged(ctx: Context, x: HbmTensor[i32, chip, q("F, P")]) -> HbmTensor[i32, chip, q("F, P")]:
        x = x.to_dm(ctx.tdma, DmTensor[i32, chip, cluster, sl, q("F, P")])
        y = (ctx.main.begin(x.view()).fetch(q("F # 8"), q("P")).collect(q("F # 8"), q("P"))
             .commit_trim(q("P")).commit(q("F # 8, P")))
        return y.to_hbm(ctx.tdma, HbmTensor[i32, chip, q("F, P")])

    return ragged


def relayout_kernel():
    """DM -> DM moves: a row split, its inverse, then rows spread over slices (`F # 256`)."""
    q, chip, cluster, sl = _space({"F": 6, "K": 128})
    rows = q("F # 256")

    @device(chip=1)
    def relayout(ctx: Context, x: HbmTensor[i8, chip, q("F, K")]) -> HbmTensor[i8, chip, q("K, F")]:
        y = x.to_dm(ctx.tdma, DmTensor[i8, chip, cluster, q("1 # 256"), q("F % 3, F / 3, K")])
        z = y.to_dm(ctx.tdma, DmTensor[i8, chip, cluster, q("1 # 256"), q("F, K")])
        w = z.to_dm(ctx.tdma, DmTensor[i8, chip, cluster, rows, q("K")])
        return w.to_hbm(ctx.tdma, HbmTensor[i8, chip, q("K, F")])

    return relayout


def two_cluster_kernel():
    """A tensor split over both clusters (`Cluster = C`): one DMA command per cluster."""
    q, chip, _, sl = _space({"C": 2, "K": 64})

    @device(chip=1)
    def clusters(ctx: Context, x: HbmTensor[i8, chip, q("C, K")]) -> HbmTensor[i8, chip, q("C, K")]:
        x = x.to_dm(ctx.tdma, DmTensor[i8, chip, q("C"), sl, q("K")])
        return x.to_hbm(ctx.tdma, HbmTensor[i8, chip, q("C, K")])

    return clusters


def transpose_kernel(axes_count: int):
    """A DM -> HBM move reversing `axes_count` size-2 axes: one paired entry per axis."""
    names = [chr(ord("A") + i) for i in range(axes_count)]
    q, chip, cluster, sl = _space({n: 2 for n in names})
    fwd, rev = q(", ".join(names)), q(", ".join(reversed(names)))

    @device(chip=1)
    def transpose(ctx: Context, x: HbmTensor[i8, chip, fwd]) -> HbmTensor[i8, chip, rev]:
        x = x.to_dm(ctx.tdma, DmTensor[i8, chip, cluster, sl, fwd])
        return x.to_hbm(ctx.tdma, HbmTensor[i8, chip, rev])

    return transpose


def long_loop_kernel():
    """A DM -> HBM move whose X loop (131072 steps) exceeds SEQ_MAX_ITER."""
    q, chip, cluster, sl = _space({"X": 131072, "B": 2})

    @device(chip=1)
    def long_loop(ctx: Context, x: HbmTensor[i8, chip, q("X, B")]) -> HbmTensor[i8, chip, q("B, X")]:
        x = x.to_dm(ctx.tdma, DmTensor[i8, chip, cluster, sl, q("X, B")])
        return x.to_hbm(ctx.tdma, HbmTensor[i8, chip, q("B, X")])

    return long_loop
