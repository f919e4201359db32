"""Where the lowering puts a TRF tensor (tu_ops/lower/alloc.py), the reference's double
buffering (its register-files chapter: a store fills one TRF half while the contraction reads
the other; its tuning chapter: that reuse is made only where no loop remains):

- outside a rolled loop, a TRF tensor keeps off the rows of the TRF tensor made just before
  it, when the TRF has room: its load need not wait for that tensor's last contraction (a
  write after read), so consecutive groups of an unrolled loop alternate between two regions;
- a TRF tensor made in a `ctx.loop` body is placed as before (the lowest free rows): the body
  is one schedule, its buffer reused by every iteration;
- no room for the other region: the tensor takes the lowest free rows as before, and a kernel
  that fits without the alternation is never refused because of it.
"""

import re

import numpy as np
import pytest

import npu_opt
from backends.npu import lower_kernel
from examples import tune_gemm
from npu_opt import Context, DmTensor, LaneMode, device, i8, m
from tests.visa.schedule import double_buffering as db
from tests.visa.schedule.test_double_buffering_forms import computes_the_contraction
from tu_ops import rngd
from visa import VisaTextError, parse_visa
from visa.interp.alloc import allocate
from visa.verify import verify_text


def _steps_kernel(plan: tuple[tuple[str, int], ...]):
    """8-lane i8 TRF tensors of `plan`'s sizes (bytes per lane): ("load", e) stages the next
    tensor, of `e` bytes a lane, on SUB; ("contract", i) contracts an activation against
    tensor i on MAIN. Lowered only: the DM tensors are made on the device, never filled."""
    q = lambda text: m(text, axes={"L": 8, "T": 4, **{f"E{e}": e for op, e in plan if op == "load"}})  # noqa: E731
    chip, cluster, sl = q("1"), q("1 # 2"), q("1 # 64")

    @device(chip=1)
    def steps(ctx: Context) -> None:
        trfs = []
        for op, arg in plan:
            if op == "load":
                e = f"E{arg}"
                w = DmTensor[i8, chip, cluster, sl, q(f"L, {e}")].new()
                trfs.append((e, ctx.sub.begin(w.view()).fetch(q("L"), q(e)).collect(q(f"L, {e} / 32"), q(f"{e} % 32"))
                             .to_trf(q("L"), q(e))))
                continue
            e, trf = trfs[arg]
            x = DmTensor[i8, chip, cluster, sl, q(f"T, {e}")].new()
            (ctx.main.begin(x.view()).fetch(q("T"), q(e)).collect(q(f"T, {e} / 32"), q(f"{e} % 32"))
             .contract_outer(trf, q(f"T, {e} / 64"), q(f"{e} % 64"))
             .contract_packet(q("1"))
             .contract_time(q("T"))
             .contract_lane(q("T"), q("L"), LaneMode.INTERLEAVED)
             .commit_trim(q("L"))
             .commit())

    return steps


def _rows(kernel) -> list[int]:
    return [a.base_row for a in sorted(lower_kernel(kernel).trf_allocations, key=lambda a: a.first_step)]


def test_consecutive_trf_tensors_outside_a_loop_alternate_between_two_regions():
    # 1 KiB a lane: 32 rows of 8 lanes each; load, contract, load, contract, ...
    plan = tuple(x for i in range(4) for x in (("load", 1024), ("contract", i)))
    assert _rows(_steps_kernel(plan)) == [0, 32, 0, 32]


def test_a_tensor_too_large_for_the_other_region_takes_the_lowest_free_rows():
    # 5 KiB a lane (160 of 256 rows): two do not fit side by side, so each starts at row 0
    plan = tuple(x for i in range(3) for x in (("load", 5120), ("contract", i)))
    assert _rows(_steps_kernel(plan)) == [0, 0, 0]


def test_the_alternation_never_refuses_a_kernel_that_fits_without_it():
    # the second small tensor, kept off the first's rows, would leave no 224 contiguous rows
    # for the large one loaded while it is live: the kernel is placed as without the alternation
    plan = (("load", 1024), ("contract", 0), ("load", 1024), ("load", 7168), ("contract", 1), ("contract", 2))
    assert _rows(_steps_kernel(plan)) == [0, 0, 32]


def _peeled_kernel(g: str):
    """Group 0 staged and contracted before a `ctx.loop` over the other groups."""
    n, Act, Weight, Out = db._types(g)

    @device(chip=1)
    def peeled(ctx: Context, activation: Act, weight: Weight) -> Out:
        act, w, output = db._load(ctx, activation, weight, g)
        db._contract(ctx, act, db._stage(ctx, w, g, n, 0), output, g, n, 0)
        for group in ctx.loop(1, n):
            db._contract(ctx, act, db._stage(ctx, w, g, n, group), output, g, n, group)
        return db._store(ctx, output, Out)
    return peeled


@pytest.mark.parametrize("kernel, rows", [
    # the body's TRF tensor is not kept off the peeled group's rows: one buffer for every iteration
    (_peeled_kernel("Few"), [0, 0]),
    # unrolled: rows 0 and 4 by parity (a group is 8 lanes x 4 rows), as the pipeline's two live groups
    (db.unrolled_few, [0, 4, 0, 4]),
    (db.software_pipelined_few, [0, 4, 0, 4]),
])
def test_each_kernel_places_its_groups_and_computes_the_contraction(kernel, rows):
    assert _rows(kernel) == rows
    computes_the_contraction(kernel, 62)


def test_the_tiled_example_keeps_its_values_with_the_outer_blocks_alternating():
    # examples/tune_gemm.py's default kernel: every second `w` block's TRF load moved off row 0
    rng = np.random.default_rng(64)
    inputs = tune_gemm.inputs(rng)
    want = tune_gemm.oracle(*inputs)
    assert [r for r in re.findall(r"= trf_load .* base_row=(\d+) ", npu_opt.compile(tune_gemm.tune_gemm).text)] \
        == ["0", "16"] * 2
    got = []
    for backend in ("cpu", "visa"):
        args = [x.copy() for x in inputs]
        out = npu_opt.run(tune_gemm.tune_gemm, *args, backend=backend)
        got.append(args[-1] if out is None else out)
    assert np.array_equal(got[0], got[1]) and np.array_equal(got[0], want)


def test_the_verifier_and_the_interpreter_follow_the_rule():
    # an unrolled artifact with every group at row 0 (the packed placement) is refused: the
    # rule places the second group at row 4, where the interpreter's contraction reads it
    text = npu_opt.compile(db.unrolled_few).text
    verify_text(text)
    with pytest.raises(VisaTextError) as info:
        verify_text(text.replace("base_row=4 ", "base_row=0 "))
    assert "base_row 0; the TRF allocation places this tensor at row 4" in str(info.value)
    kernel = parse_visa(text).kernel
    assert allocate(kernel, rngd())[1] == {a.tensor.id: a.base_row for a in kernel.trf_allocations}
    assert sorted(a.base_row for a in kernel.trf_allocations) == [0, 0, 4, 4]
