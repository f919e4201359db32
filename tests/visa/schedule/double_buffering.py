"""The reference's three double-buffering kernels (its tuning chapter, "Double buffering"),
ported by docs/porting.md: stage one weight group of `Out x Red` bf16 into the TRF on SUB,
contract the activation against it on MAIN, commit the group's `Out` outputs into its tile
of the output.

One factory makes each form for a group axis of this module: `Group` (20, the reference's
size, whose makespans the tuning chapter tabulates) or `Few` (4, the reduced size the
tests run). The reference kernels' shape otherwise: Tok = 16 tokens over 2 clusters x 8
slices, Red = 64, Out = 8.

- `rolled`: one group per iteration of a `ctx.loop`, the reference's rolled loop: the body
  is compiled once, its weight tile read and its output tile committed at the loop index.
- `software_pipelined`: two groups per iteration (stage both, then contract both), the
  reference's manual two-stage pipeline; a Python `for` over the pairs.
- `unrolled`: the reference's `#[unroll] for`, a Python `for`.
"""

from npu_opt import *

axes(Tok=16, Red=64, Out=8, Group=20, Few=4)

Chip = m("1")
Cluster = m("Tok / 8 % 2")
Slice = m("Tok % 8 # 256")
SIZES = {"Group": 20, "Few": 4}


def _types(g: str):
    n = SIZES[g]
    act = HbmTensor[bf16, Chip, m("Tok, Red")]
    weight = HbmTensor[bf16, Chip, m(f"{g}, Out, Red")]
    out = HbmTensor[bf16, Chip, m(f"Tok, {g}, Out")]
    return n, act, weight, out


def _stage(ctx, weight, g: str, n: int, group: int):
    """SUB: weight group `group` (its `Out x Red` rows) into the TRF."""
    tile = weight.view().tile(m(g), 1, m(f"1 # {n}, Out, Red"), group)
    return (ctx.sub.begin(tile)
            .fetch(m("Out, Red / 16"), m("Red % 16"))
            .collect(m("Out, Red / 16"), m("Red % 16"))
            .to_trf(m("Out"), m("Red")))


def _contract(ctx, activation, trf, output, g: str, n: int, group: int):
    """MAIN: the activation against the staged group, committed into the group's output tile."""
    (ctx.main.begin(activation.view())
     .fetch(m("Red / 16"), m("Red % 16"))
     .collect(m("Red / 16"), m("Red % 16"))
     .contract_outer(trf, m("Red / 32"), m("Red % 32"))
     .contract_packet(m("1"))
     .contract_time(m("1"))
     .contract_lane(m("1"), m("Out"), LaneMode.INTERLEAVED)
     .cast(bf16, m("Out # 16"))
     .commit_trim(m("Out"))
     .commit_view(output.view_mut().tile(m(g), 1, m(f"1 #{{!}} {n}, Out"), group)))


def _load(ctx, activation, weight, g: str):
    act = activation.to_dm(ctx.tdma, DmTensor[bf16, Chip, Cluster, Slice, m("Red")])
    w = weight.to_dm(ctx.tdma, DmTensor[bf16, Chip, Cluster, Slice, m(f"{g}, Out, Red")])
    return act, w, DmTensor[bf16, Chip, Cluster, Slice, m(f"{g}, Out")].new()


def _store(ctx, output, result_type):
    result = result_type.new()
    output.view().to_hbm_view(ctx.tdma, result.view_mut())
    return result


def rolled_kernel(g: str):
    n, Act, Weight, Out = _types(g)

    @device(chip=1)
    def rolled(ctx: Context, activation: Act, weight: Weight) -> Out:
        act, w, output = _load(ctx, activation, weight, g)
        for group in ctx.loop(n):  # the reference's rolled loop: the body is compiled once
            trf = _stage(ctx, w, g, n, group)
            _contract(ctx, act, trf, output, g, n, group)
        return _store(ctx, output, Out)
    return rolled


def software_pipelined_kernel(g: str):
    n, Act, Weight, Out = _types(g)

    @device(chip=1)
    def software_pipelined(ctx: Context, activation: Act, weight: Weight) -> Out:
        act, w, output = _load(ctx, activation, weight, g)
        for pair in range(n // 2):
            first, second = 2 * pair, 2 * pair + 1
            first_trf = _stage(ctx, w, g, n, first)
            second_trf = _stage(ctx, w, g, n, second)
            _contract(ctx, act, first_trf, output, g, n, first)
            _contract(ctx, act, second_trf, output, g, n, second)
        return _store(ctx, output, Out)
    return software_pipelined


def unrolled_kernel(g: str):
    n, Act, Weight, Out = _types(g)

    @device(chip=1)
    def unrolled(ctx: Context, activation: Act, weight: Weight) -> Out:
        act, w, output = _load(ctx, activation, weight, g)
        for group in range(n):  # the reference's `#[unroll] for`
            trf = _stage(ctx, w, g, n, group)
            _contract(ctx, act, trf, output, g, n, group)
        return _store(ctx, output, Out)
    return unrolled


rolled = rolled_kernel("Group")
software_pipelined = software_pipelined_kernel("Group")
unrolled = unrolled_kernel("Group")
rolled_few = rolled_kernel("Few")
software_pipelined_few = software_pipelined_kernel("Few")
unrolled_few = unrolled_kernel("Few")
