"""The roofline's wait on a program counts the MACs on one cluster's slices
(visa/schedule/bounds.py `cluster_commands`): on one chip, a kernel whose MACs run on both
clusters issues two DMA commands more than one per tensor. Checked against independent
oracles: the DMA records of a kernel on both clusters (each command's partition), and the
rooflines of the benchmark's GEMMs against the rates' arithmetic with the explicit timelines
of tests/synth/test_synth_gap.py for the wait."""

from __future__ import annotations

from pathlib import Path

from backends.npu import compile_kernel
from driver.discover import load_file
from driver.synth_explain import spec_roofline
from synth import contraction
from tests.synth.test_synth_gap import D, GEMM, _oracle  # the timelines of one command more
from tu_ops.program import DmaOp
from tu_ops.target import get_target
from visa.schedule import builtin_rates, schedule_artifact
from visa.schedule.command_counts import cluster_commands

ROOT = Path(__file__).resolve().parents[2]
LAUNCH, DMA_BYTES = 2000, 256  # the rates file's launch and DMA engine bytes per cycle
CLUSTER_SLICES = 256


def test_a_kernel_on_both_clusters_issues_two_commands_more_and_is_no_faster() -> None:
    # the hand-written GEMV of the reference's choices: each cluster takes half of the rows, so
    # the matrix, the vector (copied to both) and the result each move in a command per cluster
    module, error = load_file(ROOT / "benchmarks" / "hand_kernels" / "gemv_k_split.py")
    assert error is None, error
    outcome = compile_kernel(module.ref_gemv_i8, get_target("rngd"))
    assert outcome.status == "ok", outcome.diagnostics
    parts = [c.part for op in outcome.artifact.kernel.steps if isinstance(op, DmaOp) for c in op.commands]
    tensors = 3  # matrix, vector, result
    assert {p.cluster for p in parts} == {0, 1}
    assert len(parts) >= cluster_commands(tensors) == tensors + 2
    makespan = schedule_artifact(outcome.artifact, target=get_target("rngd"), rates=builtin_rates("rngd")).makespan
    assert makespan >= spec_roofline(contraction("y[m] = a[m,k] * x[k]", dtype="i8:i32",
                                                 sizes=dict(m=4096, k=4096))).cycles


def _dma_bound(macs: int, peak: int, loads: int, store: int) -> float:
    """The DMA bound by hand: launch, three commands, the bytes, and the least wait of the
    explicit timelines with the MACs on one cluster's slices (z: the largest tensor, the store)."""
    m = -(-macs // (peak * CLUSTER_SLICES))
    return LAUNCH + 3 * D + (loads + store) / DMA_BYTES + _oracle(m, store / DMA_BYTES, 0)


def test_the_wait_counts_the_macs_of_one_cluster() -> None:
    # i8 512^3: 1,024 cycles of MACs on 256 slices (512 on 512), bf16 512 x 512 x 384: 1,536; a
    # kernel of one cluster waits for them, one of two pays two start-ups (1,000)
    cases = [("i8:i32", dict(m=512, n=512, k=512), 512, 2 * 512 * 512, 512 * 512 * 4),
             ("bf16:f32", dict(m=512, n=512, k=384), 256, 2 * 512 * 384 * 2, 512 * 512 * 4),
             ("bf16:bf16", dict(m=128, n=128, k=256), 256, 2 * 128 * 256 * 2, 128 * 128 * 2)]
    for dtype, sizes, peak, loads, store in cases:
        roof = spec_roofline(contraction(GEMM, dtype=dtype, sizes=sizes))
        want = _dma_bound(sizes["m"] * sizes["n"] * sizes["k"], peak, loads, store)
        assert roof.binding.name == "dma"
        assert abs(roof.cycles - want) <= 1, (dtype, roof.cycles, want)
    # with one cluster (pe=4: 256 slices) nothing changes: the MACs were on 256 slices already
    four = spec_roofline(contraction(GEMM, dtype="i8:i32", sizes=dict(m=512, n=512, k=512), pe=4))
    assert abs(four.cycles - _dma_bound(512 ** 3, 512, 2 * 512 * 512, 512 * 512 * 4)) <= 1
