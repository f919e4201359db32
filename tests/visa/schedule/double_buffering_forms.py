"""Two more forms of the reference's double-buffering kernel (tests/visa/schedule/double_buffering.py
holds the three the tuning chapter tabulates, and their stage and contraction, reused here).

- `software_pipelined_rolled`: the reference's software-pipelined kernel as it is written
  there, its pair loop a Rust `for`, so a `ctx.loop` here: stage two groups into the TRF,
  contract both, per iteration (the pair's groups `2 * pair` and `2 * pair + 1`, tiles at
  a runtime start).
- `alternating`: the unrolled kernel with the TRF's two halves alternated by the author. The
  lowering places a TRF tensor at the lowest rows no live TRF tensor holds, so a kernel
  that stages group g + 1 before contracting group g keeps two groups live, and they take
  rows [0, 4) and [4, 8) by parity: the placement the reference's scheduler gives the
  unrolled kernel (`FirstHalf` / `SecondHalf`).
"""

from npu_opt import *

from tests.visa.schedule.double_buffering import _contract, _load, _stage, _store, _types


def software_pipelined_rolled_kernel(g: str):
    n, Act, Weight, Out = _types(g)

    @device(chip=1)
    def software_pipelined_rolled(ctx: Context, activation: Act, weight: Weight) -> Out:
        act, w, output = _load(ctx, activation, weight, g)
        for pair in ctx.loop(n // 2):   # the reference's `for pair in 0..Pairs::SIZE`: one body
            first, second = 2 * pair, 2 * pair + 1
            first_trf = _stage(ctx, w, g, n, first)
            second_trf = _stage(ctx, w, g, n, second)
            _contract(ctx, act, first_trf, output, g, n, first)
            _contract(ctx, act, second_trf, output, g, n, second)
        return _store(ctx, output, Out)
    return software_pipelined_rolled


def alternating_kernel(g: str):
    n, Act, Weight, Out = _types(g)

    @device(chip=1)
    def alternating(ctx: Context, activation: Act, weight: Weight) -> Out:
        act, w, output = _load(ctx, activation, weight, g)
        trf = [_stage(ctx, w, g, n, 0), None]   # one TRF tensor per parity
        for group in range(n):
            if group + 1 < n:   # stage the next group into the other half while this one is live
                trf[(group + 1) % 2] = _stage(ctx, w, g, n, group + 1)
            _contract(ctx, act, trf[group % 2], output, g, n, group)
        return _store(ctx, output, Out)
    return alternating


software_pipelined_rolled = software_pipelined_rolled_kernel("Group")
alternating = alternating_kernel("Group")
software_pipelined_rolled_few = software_pipelined_rolled_kernel("Few")
alternating_few = alternating_kernel("Few")
