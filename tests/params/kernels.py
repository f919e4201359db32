"""Kernels of the parameter tests: in-out (`Mut`) outputs, results plus in-place writes,
HBM element layouts with padding, split and reordered digits, and a contraction that
lands in a caller's padded buffer. Each is small enough to run in milliseconds."""

from npu_opt import *

axes(A=64, B=8, R=6, I=8, N=8, K=64, P=5)

Chip = m("1")
Cluster = m("1 # 2")
Rows = m("A / 4 # 64")
RowsDm = DmTensor[i8, Chip, Cluster, Rows, m("A % 4, B")]


@device(chip=1)
def copy_into(ctx: Context, x: HbmTensor[i8, Chip, m("A, B")],
              out: Mut[HbmTensor[i8, Chip, m("A, B")]]) -> None:
    """out[...] = x: a unit kernel that writes its output in place."""
    x.to_dm(ctx.tdma, RowsDm).to_hbm(ctx.tdma, out)


@device(chip=1)
def swap_into(ctx: Context, x: HbmTensor[i8, Chip, m("A, B")],
              out: Mut[HbmTensor[i8, Chip, m("B, A")]]) -> HbmTensor[i8, Chip, m("A, B")]:
    """Returns the old contents of `out` (transposed back) and writes x transposed into it."""
    old = out.to_dm(ctx.tdma, DmTensor[i8, Chip, Cluster, m("B # 64"), m("A")])
    x.to_dm(ctx.tdma, RowsDm).to_hbm(ctx.tdma, out)
    return old.to_hbm(ctx.tdma)


@device(chip=1)
def untouched(ctx: Context, x: HbmTensor[i8, Chip, m("A, B")],
              out: Mut[HbmTensor[i8, Chip, m("A, B")]]) -> HbmTensor[i8, Chip, m("A, B")]:
    """Never writes `out`: run returns it unchanged after the result (a copy of x)."""
    return x.to_dm(ctx.tdma, RowsDm).to_hbm(ctx.tdma)


@device(chip=1)
def twice(ctx: Context, x: HbmTensor[i8, Chip, m("A, B")], y: HbmTensor[i8, Chip, m("A, B")],
          out: Mut[HbmTensor[i8, Chip, m("A, B")]]) -> HbmTensor[i8, Chip, m("A, B")]:
    """Writes x into `out`, reads `out` back (the result: x), then writes y: y wins."""
    x.to_dm(ctx.tdma, RowsDm).to_hbm(ctx.tdma, out)
    back = out.to_dm(ctx.tdma, RowsDm)
    y.to_dm(ctx.tdma, RowsDm).to_hbm(ctx.tdma, out)
    return back.to_hbm(ctx.tdma)


@device(chip=1)
def padded(ctx: Context, x: HbmTensor[i32, Chip, m("A, R # 8")]) -> HbmTensor[i32, Chip, m("R, A")]:
    """A padded parameter (`R # 8`) read into a padded DM row, returned transposed."""
    d = x.to_dm(ctx.tdma, DmTensor[i32, Chip, Cluster, Rows, m("A % 4, R # 8")])
    return d.to_hbm(ctx.tdma, HbmTensor[i32, Chip, m("R, A")])


@device(chip=1)
def split(ctx: Context, x: HbmTensor[i8, Chip, m("A / 16, B, A % 16")]) -> HbmTensor[i8, Chip, m("A, B # 16")]:
    """Split digits in a parameter, padding in the result."""
    d = x.to_dm(ctx.tdma, DmTensor[i8, Chip, Cluster, m("A / 16 # 64"), m("B, A % 16")])
    return d.to_hbm(ctx.tdma, HbmTensor[i8, Chip, m("A, B # 16")])


@device(chip=1)
def adopted(ctx: Context, x: HbmTensor[i8, Chip, m("A, B")]) -> tuple[HbmTensor[i8, Chip, m("B, A")],
                                                                     HbmTensor[i8, Chip, m("A % 8, B, A / 8")]]:
    """Bare `to_hbm` calls whose values are returned take the annotation's layouts."""
    d = x.to_dm(ctx.tdma, RowsDm)
    return d.to_hbm(ctx.tdma), d.to_hbm(ctx.tdma)


@device(chip=1)
def matmul_into(ctx: Context, x: HbmTensor[i8, Chip, m("I, K")], w: HbmTensor[i8, Chip, m("N, K")],
                out: Mut[HbmTensor[i32, Chip, m("I, N # 16")]]) -> HbmTensor[i8, Chip, m("N, K")]:
    """out = x @ w.T in i32 into a padded in-out buffer; also returns a copy of w."""
    xd = x.to_dm(ctx.tdma, DmTensor[i8, Chip, Cluster, m("I # 64"), m("K")])
    wd = w.to_dm(ctx.tdma, DmTensor[i8, Chip, Cluster, m("I # 64"), m("N, K")])
    w_trf = (ctx.sub.begin(wd.view())
             .fetch(m("N"), m("K"))
             .collect(m("N, K / 32"), m("K % 32"))
             .to_trf(m("N"), m("K")))
    y = (ctx.main.begin(xd.view())
         .fetch(m("1"), m("K"))
         .collect(m("K / 32"), m("K % 32"))
         .contract_outer(w_trf, m("1"), m("K"))
         .contract_packet(m("1"))
         .contract_time(m("1"))
         .contract_lane(m("1"), m("N"), LaneMode.INTERLEAVED)
         .commit_trim(m("N"))
         .commit(m("N")))
    y.to_hbm(ctx.tdma, out)
    return w.to_hbm(ctx.tdma)


@device(chip=1)
def padded_tail(ctx: Context, x: HbmTensor[i32, Chip, m("A, P # 8")]) -> HbmTensor[i32, Chip, m("A, P # 8")]:
    """i32 rows of 5 live cells (20 bytes) padded to 8 on both sides: the DMA into DM
    moves the padded 32-byte rows (the live run alone is not 8-byte aligned)."""
    d = x.to_dm(ctx.tdma, DmTensor[i32, Chip, Cluster, m("A # 256"), m("P # 8")])
    return d.to_hbm(ctx.tdma)


@device(chip=1)
def padded_tail_i8(ctx: Context, x: HbmTensor[i8, Chip, m("A, P # 8")]) -> HbmTensor[i8, Chip, m("P, A")]:
    """i8 rows of 5 live bytes padded to 8, four rows per slice, returned transposed."""
    d = x.to_dm(ctx.tdma, DmTensor[i8, Chip, Cluster, Rows, m("A % 4, P # 8")])
    return d.to_hbm(ctx.tdma)
