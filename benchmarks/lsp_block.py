"""The editor benchmark's kernel file (benchmarks/bench_lsp.py): a ~290-line file of
hand-written kernels of one model block that imports a helper module beside it, as a
user's file does (issue 58: first diagnostics and the re-check after an edit on such a file).

`HELPERS` is `bench_helpers.py`; `kernel_file(edit)` is the kernel file, with the fetch
tile of `copy_0` picked by `edit` (the edit the benchmark re-checks).
"""

from __future__ import annotations

__all__ = ["HELPERS", "kernel_file", "KERNELS"]

HELPERS = '''"""Shared pieces of the benchmark's kernels (a helper module the kernel file imports)."""

from npu_opt import *

axes(R=8, C=64, N=512, K=128)


def to_dm_rows(ctx, x, dtype, chip, cluster, slice_, element):
    """Move an HBM tensor into DM with the given per-slice element mapping."""
    return x.to_dm(ctx.tdma, DmTensor[dtype, chip, cluster, slice_, element])


def f32_rows(begin):
    """Rows of C f32 as 4-element packets widened to the engine's 8."""
    return (begin.fetch(m("R, C / 4"), m("C % 4"))
            .collect(m("R, C / 4"), m("C % 4 # 8"))
            .vector_init()
            .vector_intra_slice_tag(TagMode.ZERO)
            .vector_narrow_trim(m("C % 4")))


def f32_rows_out(stream):
    """Back from the engine to DM rows."""
    return (stream.vector_widen_pad(m("C % 4 # 8"))
            .vector_final()
            .commit_trim(m("C % 4"))
            .commit(m("R, C")))


def row_scalars(begin):
    """One f32 per row, read back from DM for a second pass."""
    return (begin.fetch(m("R"), m("1 # 2"))
            .collect(m("R"), m("1 # 8"))
            .vector_init()
            .vector_intra_slice_tag(TagMode.ZERO)
            .vector_narrow_trim(m("1 # 4")))


def weights_trf(ctx, w):
    """The i8 weights of the GEMM into the TRF, two flits per beat."""
    return (ctx.sub.begin(w.view())
            .fetch(m("N % 8, N / 8 % 4"), m("K"))
            .fetch_cast(i8)
            .collect(m("N % 8, N / 8 % 4, K / 32"), m("K % 32"))
            .to_trf(m("N % 8"), m("N / 8 % 4, K")))
'''

_HEAD = '''"""Kernels of one model block, written by hand (the editor benchmark's file)."""

from npu_opt import *
from bench_helpers import f32_rows, f32_rows_out, row_scalars, to_dm_rows, weights_trf

axes(S=2048, H=64, I=2, M=512, N=512, K=128, R=8, C=64, T=256, U=16, V=16, Q=4096, A=4096, B=8)

Chip = m("1")
Cluster = m("1 # 2")
Rows = m("1 # 256")
Tokens = m("S / 8")
Tiles = m("M / 32, N / 32")


@device(chip=1)
def residual_add(ctx: Context,
                 x: HbmTensor[f32, Chip, m("S, H")],
                 y: HbmTensor[f32, Chip, m("S, H")]) -> HbmTensor[f32, Chip, m("S, H")]:
    x = to_dm_rows(ctx, x, f32, Chip, Cluster, Tokens, m("S % 8, H"))
    y = to_dm_rows(ctx, y, f32, Chip, Cluster, Tokens, m("S % 8, H"))
    out = (ctx.main.begin_interleaved(x.view(), y.view(), m("I"))
           .fetch(m("S % 8, H / 8, I"), m("H % 8"))
           .collect(m("S % 8, H / 8, I"), m("H % 8"))
           .vector_init()
           .vector_intra_slice_unzip(m("I"), m("S % 8, H / 8"))
           .vector_clip_zip(ClipBinaryOpF32.ADD)
           .vector_final()
           .commit_trim(m("H % 8"))
           .commit(m("S % 8, H")))
    return out.to_hbm(ctx.tdma, HbmTensor[f32, Chip, m("S, H")])


@device(chip=1)
def projection(ctx: Context,
               a: HbmTensor[i8, Chip, m("M, K")],
               w: HbmTensor[i8, Chip, m("N, K")]) -> HbmTensor[i32, Chip, m("M, N")]:
    a = to_dm_rows(ctx, a, i8, Chip, Cluster, Tiles, m("M % 32, K"))
    w = to_dm_rows(ctx, w, i8, Chip, Cluster, Tiles, m("N % 32, K"))
    w_trf = weights_trf(ctx, w)
    out = (ctx.main.begin(a.view())
           .fetch(m("M % 32, N / 8 % 4"), m("K"))
           .fetch_cast(i8)
           .collect(m("M % 32, N / 8 % 4, K / 32"), m("K % 32"))
           .contract_outer(w_trf, m("M % 32, N / 8 % 4, K / 64"), m("K % 64"))
           .contract_packet(m("1"))
           .contract_time(m("M % 32, N / 8 % 4"))
           .contract_lane(m("M % 32, N / 8 % 4"), m("N % 8"), LaneMode.INTERLEAVED)
           .commit_trim(m("N % 8"))
           .commit(m("M % 32, N % 32")))
    return out.to_hbm(ctx.tdma, HbmTensor[i32, Chip, m("M, N")])


@device(chip=1)
def rmsnorm(ctx: Context, x: HbmTensor[f32, Chip, m("R, C")],
            g: HbmTensor[f32, Chip, m("C")]) -> HbmTensor[f32, Chip, m("R, C")]:
    x = to_dm_rows(ctx, x, f32, Chip, Cluster, Rows, m("R, C"))
    g = to_dm_rows(ctx, g, f32, Chip, Cluster, Rows, m("C"))
    x_vrf = (ctx.sub.begin(x.view())
             .fetch(m("R, C / 8"), m("C % 8"))
             .collect(m("R, C / 8"), m("C % 8"))
             .to_vrf(m("R, C")))
    squares = (f32_rows(ctx.main.begin(x.view()))
               .vector_fp_binary(FpBinaryOp.MUL_F(FpMulAlu.MUL0), x_vrf)
               .vector_intra_slice_reduce(m("C"), m("R"), m("1 # 4"), IntraSliceReduceOpF32.ADD)
               .vector_widen_pad(m("1 # 8"))
               .vector_final()
               .commit_trim(m("1 # 2"))
               .commit(m("R, 1 # 2")))
    r_vrf = (row_scalars(ctx.sub.begin(squares.view()))
             .vector_fp_binary(FpBinaryOp.MUL_F(FpMulAlu.MUL0), 1.0 / 64)
             .vector_fp_binary(FpBinaryOp.ADD_F, 1e-6)
             .vector_fp_unary(FpUnaryOp.LOG)
             .vector_fp_binary(FpBinaryOp.MUL_F(FpMulAlu.MUL1), -0.5)
             .vector_fp_unary(FpUnaryOp.EXP)
             .vector_widen_pad(m("1 # 8"))
             .vector_final()
             .to_vrf(m("R")))
    g_vrf = (ctx.sub.begin(g.view())
             .fetch(m("C / 8"), m("C % 8"))
             .collect(m("C / 8"), m("C % 8"))
             .to_vrf(m("C")))
    y = f32_rows_out(f32_rows(ctx.main.begin(x.view()))
                     .vector_fp_binary(FpBinaryOp.MUL_F(FpMulAlu.MUL0), r_vrf)
                     .vector_fp_binary(FpBinaryOp.MUL_F(FpMulAlu.MUL1), g_vrf))
    return y.to_hbm(ctx.tdma)


@device(chip=1)
def softmax(ctx: Context, x: HbmTensor[f32, Chip, m("R, C")]) -> HbmTensor[f32, Chip, m("R, C")]:
    x = to_dm_rows(ctx, x, f32, Chip, Cluster, Rows, m("R, C"))
    row_max = (f32_rows(ctx.sub.begin(x.view()))
               .vector_intra_slice_reduce(m("C"), m("R"), m("1 # 4"), IntraSliceReduceOpF32.MAX)
               .vector_widen_pad(m("1 # 8"))
               .vector_final()
               .to_vrf(m("R")))
    sums = (f32_rows(ctx.main.begin(x.view()))
            .vector_fp_binary(FpBinaryOp.SUB_F, row_max)
            .vector_fp_unary(FpUnaryOp.EXP)
            .vector_intra_slice_reduce(m("C"), m("R"), m("1 # 4"), IntraSliceReduceOpF32.ADD)
            .vector_widen_pad(m("1 # 8"))
            .vector_final()
            .commit_trim(m("1 # 2"))
            .commit(m("R, 1 # 2")))
    shift = (row_scalars(ctx.sub.begin(sums.view()))
             .vector_fp_unary(FpUnaryOp.LOG)
             .vector_fp_binary(FpBinaryOp.ADD_F, row_max)
             .vector_widen_pad(m("1 # 8"))
             .vector_final()
             .to_vrf(m("R")))
    y = f32_rows_out(f32_rows(ctx.main.begin(x.view()))
                     .vector_fp_binary(FpBinaryOp.SUB_F, shift)
                     .vector_fp_unary(FpUnaryOp.EXP))
    return y.to_hbm(ctx.tdma)


@device(chip=1)
def transpose_tiles(ctx: Context, x: HbmTensor[bf16, Chip, m("T, U, V")]) -> HbmTensor[bf16, Chip, m("T, V, U")]:
    x = to_dm_rows(ctx, x, bf16, Chip, Cluster, m("T"), m("U, V"))
    y = (ctx.main.begin(x.view())
         .fetch(m("U, V / 8"), m("V % 8"))
         .collect(m("U, V / 8"), m("V % 8 # 16"))
         .transpose(m("U / 4, V"), m("U % 4 # 16"))
         .commit_trim(m("U % 4"))
         .commit(m("V, U")))
    return y.to_hbm(ctx.tdma, HbmTensor[bf16, Chip, m("T, V, U")])


NEGATIVE = TagGuard.matches([BitReq.ONE, BitReq.IGNORE, BitReq.IGNORE, BitReq.IGNORE])


@device(chip=1)
def leaky_relu(ctx: Context, x: HbmTensor[f32, Chip, m("S, H")]) -> HbmTensor[f32, Chip, m("S, H")]:
    x = to_dm_rows(ctx, x, f32, Chip, Cluster, Tokens, m("S % 8, H"))
    out = (ctx.main.begin(x.view())
           .fetch(m("S % 8, H / 4"), m("H % 4"))
           .collect(m("S % 8, H / 4"), m("H % 4 # 8"))
           .vector_init()
           .vector_intra_slice_tag(TagMode.COMPARISON([Cmp.LESS(0.0), Cmp.FALSE, Cmp.FALSE, Cmp.FALSE]))
           .vector_narrow_trim(m("H % 4"))
           .vector_fp_binary(FpBinaryOp.MUL_F(FpMulAlu.MUL0), Branched.imm(NEGATIVE, 0.01))
           .vector_widen_pad(m("H % 4 # 8"))
           .vector_final()
           .commit_trim(m("H % 4"))
           .commit(m("S % 8, H")))
    return out.to_hbm(ctx.tdma, HbmTensor[f32, Chip, m("S, H")])


@device(chip=1)
def widen(ctx: Context, x: HbmTensor[i8, Chip, m("A, B")]) -> HbmTensor[i32, Chip, m("B, A")]:
    x = to_dm_rows(ctx, x, i8, Chip, Cluster, m("A / 16"), m("A / 8 % 2, A % 8, B"))
    y = (ctx.main.begin(x.view())
         .fetch(m("A / 8 % 2"), m("A % 8, B"))
         .fetch_cast(i32)
         .collect(m("A / 8 % 2, A % 8"), m("B"))
         .commit_trim(m("B"))
         .commit(m("A / 8 % 2, A % 8, B")))
    return y.to_hbm(ctx.tdma, HbmTensor[i32, Chip, m("B, A")])
'''

_COPY = '''

@device(chip=1)
def copy_{k}(ctx: Context, src: HbmTensor[i8, Chip, m("Q")]) -> HbmTensor[i8, Chip, m("Q")]:
    d = src.to_dm(ctx.tdma, DmTensor[i8, Chip, Cluster, Rows, m("Q")])
    out = (ctx.main.begin(d.view())
           .fetch(m("Q / {t}"), m("Q % {t}"))
           .collect(m("Q / 32"), m("Q % 32"))
           .commit_trim(m("Q % 32"))
           .commit(m("Q")))
    return out.to_hbm(ctx.tdma)
'''

KERNELS = 7 + 12


def kernel_file(edit: int = 0) -> str:
    """The kernel file's text; `edit` alternates copy_0's fetch tile between 32 and 64."""
    copies = "".join(_COPY.format(k=k, t=(32, 64)[edit % 2] if k == 0 else (32, 64, 128)[k % 3])
                     for k in range(12))
    return _HEAD + copies
