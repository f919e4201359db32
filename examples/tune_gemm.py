"""A tunable i8 GEMM (examples/tune_gemm.py): `npu-opt tune examples/tune_gemm.py -o build/tune`.

out[M, N] = a[M, K] . w[N, K] in i32, M = N = 1024, K = 128, as 2 x 2 output tiles of
512 x 512 (one pass of the contraction each). `make_gemm` builds the kernel for one choice
of three levers, `SPACE` lists the choices, and `npu-opt tune` compiles every candidate,
ranks them by the schedule's makespan and checks the best against the cpu backend, the
VISA interpreter and the numpy oracle below:

- `order`: "ij" walks the tiles row by row (the outer operand is a row block of `a`),
  "ji" column by column (the outer operand is a block of `w` and its TRF load).
- `reuse`: "none" loads both operands for every tile; "outer" keeps the outer operand
  across the inner loop; "all" loads every block of both operands once, before the loops.
- `packet`: the contraction packet, 32 or 64 i8 (one or two 32-byte flits per step).

`tune_gemm` (the default choice) is an ordinary kernel: `npu-opt compile examples/`
builds it like any other.
"""

import numpy as np

from npu_opt import *
from npu_opt.tune import Space

MT = NT = 2
axes(M=512 * MT, N=512 * NT, K=128)

Chip = m("1")
Cluster = m("1 # 2")
Slice = m("M % 512 / 32, N % 512 / 32")
A_BLOCK = DmTensor[i8, Chip, Cluster, Slice, m("M % 32, K")]
W_BLOCK = DmTensor[i8, Chip, Cluster, Slice, m("N % 32, K")]


def make_gemm(order: str = "ij", reuse: str = "outer", packet: int = 64):
    """The tiled GEMM for one choice of the levers (see the module docstring)."""

    @device(chip=1)
    def tune_gemm(ctx: Context,
                  a: HbmTensor[i8, Chip, m("M, K")],
                  w: HbmTensor[i8, Chip, m("N, K")],
                  out: Mut[HbmTensor[i32, Chip, m("M, N")]]) -> None:
        def a_block(i):
            rows = a.view().tile(m("M / 512"), 1, m(f"1 # {MT}, M % 512, K"), i)
            return rows.to_dm(ctx.tdma, A_BLOCK)

        def w_trf(j):
            rows = w.view().tile(m("N / 512"), 1, m(f"1 # {NT}, N % 512, K"), j)
            w_dm = rows.to_dm(ctx.tdma, W_BLOCK)
            return (ctx.sub.begin(w_dm.view())
                    .fetch(m("N % 8, N / 8 % 4"), m("K"))
                    .collect(m("N % 8, N / 8 % 4, K / 32"), m("K % 32"))
                    .to_trf(m("N % 8"), m("N / 8 % 4, K")))

        def tile(a_dm, trf, i, j):
            result = (ctx.main.begin(a_dm.view())
                      .fetch(m("M % 32, N / 8 % 4"), m("K"))
                      .collect(m("M % 32, N / 8 % 4, K / 32"), m("K % 32"))
                      .contract_outer(trf, m(f"M % 32, N / 8 % 4, K / {packet}"), m(f"K % {packet}"))
                      .contract_packet(m("1"))
                      .contract_time(m("M % 32, N / 8 % 4"))
                      .contract_lane(m("M % 32, N / 8 % 4"), m("N % 8"), LaneMode.INTERLEAVED)
                      .commit_trim(m("N % 8"))
                      .commit(m("M % 32, N % 32")))
            dst = (out.view_mut()
                   .tile(m("M / 512"), 1, m(f"1 #{{!}} {MT}, M % 512, N"), i)
                   .tile(m("N / 512"), 1, m(f"1 #{{!}} {MT}, M % 512, 1 #{{!}} {NT}, N % 512"), j))
            result.view().to_hbm_view(ctx.tdma, dst)

        a_all = [a_block(i) for i in range(MT)] if reuse == "all" else None
        w_all = [w_trf(j) for j in range(NT)] if reuse == "all" else None
        outer_n, inner_n = (MT, NT) if order == "ij" else (NT, MT)
        for o in range(outer_n):
            kept = None
            if reuse == "outer":
                kept = a_block(o) if order == "ij" else w_trf(o)
            for n in range(inner_n):
                i, j = (o, n) if order == "ij" else (n, o)
                a_dm = a_all[i] if a_all else (kept if kept is not None and order == "ij" else a_block(i))
                trf = w_all[j] if w_all else (kept if kept is not None and order == "ji" else w_trf(j))
                tile(a_dm, trf, i, j)

    return tune_gemm


tune_gemm = make_gemm()


def inputs(rng: np.random.Generator) -> tuple[np.ndarray, ...]:
    """Host arrays for one run: a, w and the in-out result (its initial contents are overwritten)."""
    a = rng.integers(-128, 128, (512 * MT, 128), dtype=np.int8)
    w = rng.integers(-128, 128, (512 * NT, 128), dtype=np.int8)
    return a, w, np.zeros((512 * MT, 512 * NT), np.int32)


def oracle(a: np.ndarray, w: np.ndarray, out: np.ndarray) -> np.ndarray:
    """out = a . w^T in exact integers (|sum| < 2^31 for K = 128 i8 products)."""
    return (a.astype(np.int64) @ w.astype(np.int64).T).astype(np.int32)


SPACE = Space(make_gemm, {"order": ["ij", "ji"], "reuse": ["none", "outer", "all"], "packet": [32, 64]},
              inputs=inputs, oracle=oracle)
