"""Contractions whose TRF rows are padded past the read: 16 live `i8` bytes stored as a
32-byte row (`K # 32`), 8 live `bf16` stored as 16 (`H # 16`). The reference keeps such a
tensor (matmul_split_reduce.rs at 06dda28) and contracts it with a packet that replicates
one 16-element read (`N % 4, K`); its sequencer never reads the padded half of a row. The
rows are loaded as a collect pads them, so the TRF element is the collect's packet."""

from npu_opt import *

axes(N=64, K=16, O=2, L=2, H=8)
Chip, Cluster, Slice = m("1"), m("1 # 2"), m("1 # 256")


def to_dm(ctx: Context, dt, *pairs):
    """Each (HBM tensor, element) on one slice of the first cluster."""
    return [t.to_dm(ctx.tdma, DmTensor[dt, Chip, Cluster, Slice, m(e)]) for t, e in pairs]


def stream(ctx: Context, x, inner: str):
    """x[N, inner] streamed two rows a flit, four rows a packet."""
    return (ctx.main.begin(x.view()).fetch(m("N / 2"), m(f"N % 2, {inner}"))
            .collect(m("N / 2"), m(f"N % 2, {inner}")))


def rows_by_four(ctx: Context, x, w_trf, inner: str, time: str):
    """Contract x's packets of four rows with w_trf, one sum per row (a sequential fold)."""
    return (stream(ctx, x, inner)
            .contract_outer(w_trf, m(time), m(f"N % 4, {inner}"))
            .contract_packet(m("N % 4"))
            .contract_time(m(time))
            .contract_lane(m(time), m("N % 4 # 8"), LaneMode.SEQUENTIAL)
            .commit_trim(m("N % 4")))


@device(chip=1)
def padded_row_matvec(ctx: Context, x: HbmTensor[i8, Chip, m("N, K")],
                      w: HbmTensor[i8, Chip, m("K")]) -> HbmTensor[i32, Chip, m("N")]:
    """One padded row, its layout inferred by `to_trf()`: y = x @ w."""
    xd, wd = to_dm(ctx, i8, (x, "N, K"), (w, "K"))
    w_trf = ctx.sub.begin(wd.view()).fetch(m("1"), m("K")).collect(m("1"), m("K # 32")).to_trf()
    y = rows_by_four(ctx, xd, w_trf, "K", "N / 4").commit(m("N / 4, N % 4"))
    return y.to_hbm(ctx.tdma, HbmTensor[i32, Chip, m("N")])


@device(chip=1)
def padded_rows_walked(ctx: Context, x: HbmTensor[i8, Chip, m("N, K")],
                       w: HbmTensor[i8, Chip, m("O, K")]) -> HbmTensor[i32, Chip, m("N, O")]:
    """Two padded rows walked in time: row O starts 32 bytes, two reads, after row O - 1."""
    xd, wd = to_dm(ctx, i8, (x, "N, K"), (w, "O, K"))
    w_trf = (ctx.sub.begin(wd.view()).fetch(m("O"), m("K")).collect(m("O"), m("K # 32"))
             .to_trf(m("1"), m("O, K # 32")))
    y = rows_by_four(ctx, xd, w_trf, "K", "N / 4, O").commit(m("N / 4, O, N % 4"))
    return y.to_hbm(ctx.tdma, HbmTensor[i32, Chip, m("N, O")])


@device(chip=1)
def padded_rows_on_lanes(ctx: Context, x: HbmTensor[i8, Chip, m("N, K")],
                         w: HbmTensor[i8, Chip, m("L, K")]) -> HbmTensor[i32, Chip, m("N, L")]:
    """One padded row on each of two lanes."""
    xd, wd = to_dm(ctx, i8, (x, "N, K"), (w, "L, K"))
    w_trf = (ctx.sub.begin(wd.view()).fetch(m("L"), m("K")).collect(m("L"), m("K # 32"))
             .to_trf(m("L"), m("K # 32")))
    y = (stream(ctx, xd, "K")
         .contract_outer(w_trf, m("N / 4"), m("N % 4, K"))
         .contract_packet(m("N % 4"))
         .contract_time(m("N / 4"))
         .contract_lane(m("N"), m("L # 8"), LaneMode.INTERLEAVED)
         .commit_trim(m("L"))
         .commit(m("N, L")))
    return y.to_hbm(ctx.tdma, HbmTensor[i32, Chip, m("N, L")])


@device(chip=1)
def padded_row_bf16(ctx: Context, x: HbmTensor[bf16, Chip, m("N, H")],
                    w: HbmTensor[bf16, Chip, m("H")]) -> HbmTensor[f32, Chip, m("N")]:
    """8 live bf16 in a 16-element row, read 8 at a time."""
    xd, wd = to_dm(ctx, bf16, (x, "N, H"), (w, "H"))
    w_trf = ctx.sub.begin(wd.view()).fetch(m("1"), m("H")).collect(m("1"), m("H # 16")).to_trf()
    y = rows_by_four(ctx, xd, w_trf, "H", "N / 4").commit(m("N / 4, N % 4"))
    return y.to_hbm(ctx.tdma, HbmTensor[f32, Chip, m("N")])


@device(chip=1)
def padded_rows_one_left_out(ctx: Context, x: HbmTensor[i8, Chip, m("N, K")],
                             w: HbmTensor[i8, Chip, m("O, K")]) -> HbmTensor[i32, Chip, m("N")]:
    """Refused: out_time leaves the live rows O unwalked (only padding may be left out)."""
    xd, wd = to_dm(ctx, i8, (x, "N, K"), (w, "O, K"))
    w_trf = (ctx.sub.begin(wd.view()).fetch(m("O"), m("K")).collect(m("O"), m("K # 32"))
             .to_trf(m("1"), m("O, K # 32")))
    y = (stream(ctx, xd, "K")
         .contract_outer(w_trf, m("N / 4"), m("N % 4, K"))  # OUTER-9
         .contract_packet(m("N % 4")).contract_time(m("N / 4"))
         .contract_lane(m("N / 4"), m("N % 4 # 8"), LaneMode.SEQUENTIAL)
         .commit_trim(m("N % 4")).commit(m("N / 4, N % 4")))
    return y.to_hbm(ctx.tdma, HbmTensor[i32, Chip, m("N")])
