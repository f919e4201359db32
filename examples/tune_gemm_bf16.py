"""A tunable tiled bf16 GEMM (examples/tune_gemm_bf16.py), a space of 216 candidates:
`npu-opt tune examples/tune_gemm_bf16.py --jobs 2 -o build/tune`.

out[M, N] = a[M, K] . w[N, K] in f32, M = N = 512, K = 128, computed as output tiles of
`tm` x `tn` (each one pass of the contraction, 16 x 16 slices of tm/16 x tn/16 outputs).
`make_gemm` builds the kernel for one choice of the levers, `SPACE` lists the choices:

- `tm`, `tn`: the output tile, 128, 256 or 512 rows / columns.
- `packet`: the contraction packet, 16 or 32 bf16 (one or two 32-byte flits).
- `order`: "ij" walks the tiles row by row, "ji" column by column.
- `reuse`: "none" loads both operands for every tile, "outer" keeps the outer operand
  across the inner loop, "all" loads every block of both operands once.
- `split`: 1 contracts all of K at once; 2 contracts each half of K into its own f32
  partial in DM and adds the two in the Vector Engine (another order of the float sums).
"""

import numpy as np

from npu_opt import *
from npu_opt.tune import Space

SIZE, DEPTH = 512, 128
axes(M=SIZE, N=SIZE, K=DEPTH, I=2)

Chip = m("1")
Cluster = m("1 # 2")


def make_gemm(tm: int = 512, tn: int = 512, packet: int = 32, order: str = "ij", reuse: str = "outer",
              split: int = 1):
    """The tiled GEMM for one choice of the levers (see the module docstring)."""
    mt, nt, rm, rn = SIZE // tm, SIZE // tn, tm // 16, tn // 16
    kk = DEPTH // split
    slices = m(f"M % {tm} / {rm}, N % {tn} / {rn}")
    k_part = "K" if split == 1 else f"K % {kk}"

    @device(chip=1)
    def tune_gemm_bf16(ctx: Context,
                       a: HbmTensor[bf16, Chip, m("M, K")],
                       w: HbmTensor[bf16, Chip, m("N, K")],
                       out: Mut[HbmTensor[f32, Chip, m("M, N")]]) -> None:
        def rows(x, axis, t, n, i, s):
            v = x.view().tile(m(f"{axis} / {t}"), 1, m(f"1 # {n}, {axis} % {t}, K"), i)
            if split > 1:
                v = v.tile(m(f"K / {kk}"), 1, m(f"1 # {n}, {axis} % {t}, 1 # {split}, K % {kk}"), s)
            return v

        def a_block(i, s):
            return rows(a, "M", tm, mt, i, s).to_dm(ctx.tdma, DmTensor[bf16, Chip, Cluster, slices,
                                                                        m(f"M % {rm}, {k_part}")])

        def w_trf(j, s):
            w_dm = rows(w, "N", tn, nt, j, s).to_dm(ctx.tdma, DmTensor[bf16, Chip, Cluster, slices,
                                                                        m(f"N % {rn}, {k_part}")])
            return (ctx.sub.begin(w_dm.view())
                    .fetch(m(f"N % 8, N / 8 % {rn // 8}"), m(k_part))
                    .collect(m(f"N % 8, N / 8 % {rn // 8}, {k_part} / 16"), m("K % 16"))
                    .to_trf(m("N % 8"), m(f"N / 8 % {rn // 8}, {k_part}")))

        def partial(a_dm, trf):
            return (ctx.main.begin(a_dm.view())
                    .fetch(m(f"M % {rm}, N / 8 % {rn // 8}"), m(k_part))
                    .collect(m(f"M % {rm}, N / 8 % {rn // 8}, {k_part} / 16"), m("K % 16"))
                    .contract_outer(trf, m(f"M % {rm}, N / 8 % {rn // 8}, {k_part} / {packet}"),
                                    m(f"K % {packet}"))
                    .contract_packet(m("1"))
                    .contract_time(m(f"M % {rm}, N / 8 % {rn // 8}"))
                    .contract_lane(m(f"M % {rm}, N / 8 % {rn // 8}"), m("N % 8"), LaneMode.INTERLEAVED)
                    .commit_trim(m("N % 8"))
                    .commit(m(f"M % {rm}, N % {rn}")))

        def tile(a_dms, trfs, i, j):
            parts = [partial(a_dm, trf) for a_dm, trf in zip(a_dms, trfs)]
            result = parts[0]
            if split == 2:
                result = (ctx.main.begin_interleaved(parts[0].view(), parts[1].view(), m("I"))
                          .fetch(m(f"M % {rm}, N / 8 % {rn // 8}, I"), m("N % 8"))
                          .collect(m(f"M % {rm}, N / 8 % {rn // 8}, I"), m("N % 8"))
                          .vector_init()
                          .vector_intra_slice_unzip(m("I"), m(f"M % {rm}, N / 8 % {rn // 8}"))
                          .vector_clip_zip(ClipBinaryOpF32.ADD)
                          .vector_final()
                          .commit_trim(m("N % 8"))
                          .commit(m(f"M % {rm}, N % {rn}")))
            dst = (out.view_mut()
                   .tile(m(f"M / {tm}"), 1, m(f"1 #{{!}} {mt}, M % {tm}, N"), i)
                   .tile(m(f"N / {tn}"), 1, m(f"1 #{{!}} {mt}, M % {tm}, 1 #{{!}} {nt}, N % {tn}"), j))
            result.view().to_hbm_view(ctx.tdma, dst)

        def a_blocks(i):
            return [a_block(i, s) for s in range(split)]

        def w_trfs(j):
            return [w_trf(j, s) for s in range(split)]

        # the tiles in loop order; the operands each tile reads, kept as `reuse` says: "all" loads
        # every block first, "outer" keeps the outer loop's block until the outer index moves on
        pairs = ([(i, j) for i in range(mt) for j in range(nt)] if order == "ij" else
                 [(i, j) for j in range(nt) for i in range(mt)])
        a_have = {i: a_blocks(i) for i in range(mt)} if reuse == "all" else {}
        w_have = {j: w_trfs(j) for j in range(nt)} if reuse == "all" else {}
        for i, j in pairs:
            if reuse != "all":
                if not (reuse == "outer" and order == "ij" and i in a_have):
                    a_have = {i: a_blocks(i)}
                if not (reuse == "outer" and order == "ji" and j in w_have):
                    w_have = {j: w_trfs(j)}
            tile(a_have[i], w_have[j], i, j)

    return tune_gemm_bf16


tune_gemm_bf16 = make_gemm()


def inputs(rng: np.random.Generator) -> tuple[np.ndarray, ...]:
    """Host arrays for one run: a, w (bf16) and the in-out f32 result."""
    import ml_dtypes
    a = rng.standard_normal((SIZE, DEPTH), dtype=np.float32).astype(ml_dtypes.bfloat16)
    w = rng.standard_normal((SIZE, DEPTH), dtype=np.float32).astype(ml_dtypes.bfloat16)
    return a, w, np.zeros((SIZE, SIZE), np.float32)


def oracle(a: np.ndarray, w: np.ndarray, out: np.ndarray) -> np.ndarray:
    """out = a . w^T, each product exact in f64 and the sum rounded once to f32."""
    return (a.astype(np.float64) @ w.astype(np.float64).T).astype(np.float32)


SPACE = Space(make_gemm, {"tm": [128, 256, 512], "tn": [128, 256, 512], "packet": [16, 32],
                          "order": ["ij", "ji"], "reuse": ["none", "outer", "all"], "split": [1, 2]},
              inputs=inputs, oracle=oracle, rtol=1e-5, atol=1e-5)
