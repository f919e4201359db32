"""Tune spaces of examples/tune_gemm_bf16.py's factory cut to one 512 x 512 tile, for the
tuner's numerics tests: `packet` 16 and 32 tie on makespan but sum the f32 products in
another order; `split` 2 adds two half-K partials (another order again).

`TIES` checks against the numpy oracle within a float tolerance; `EXACT` pins the bits of
its golden candidate (packet 32, split 1); `EXACT_DEFAULT` pins those of its first point."""

from examples.tune_gemm_bf16 import inputs, make_gemm, oracle
from npu_opt.tune import Space

ONE_TILE = {"tm": [512], "tn": [512], "packet": [16, 32], "order": ["ij"], "reuse": ["all"], "split": [1, 2]}
GOLDEN = {"tm": 512, "tn": 512, "packet": 32, "order": "ij", "reuse": "all", "split": 1}

TIES = Space(make_gemm, ONE_TILE, inputs=inputs, oracle=oracle, rtol=1e-5, atol=1e-5)
EXACT = Space(make_gemm, ONE_TILE, inputs=inputs, oracle=oracle, rtol=1e-5, atol=1e-5, exact=True, golden=GOLDEN)
EXACT_DEFAULT = Space(make_gemm, ONE_TILE, inputs=inputs, exact=True)
