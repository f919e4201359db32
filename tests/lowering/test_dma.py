"""DMA commands (visa/visa.lark "DMA commands", docs/reference/diagnostics.md): partitions, packets,
ragged pieces, DM -> DM slices, DMAOP-2 splits; and LOWER-3 closure over every trace-valid
kernel the other test suites define."""

import re

import pytest

from backends.npu import lower_kernel
from ir.errors import CompileError
from npu_opt.device import DeviceKernel
from npu_opt import Context, DmTensor, HbmTensor, device, i8, i32
from tests.lowering.kernels import (
    _space, long_loop_kernel, ragged_commit_kernel, relayout_kernel, transpose_kernel, two_cluster_kernel,
)
from tu_ops import Aggregate, DmaKind, rngd


def entries(cmd) -> list[str]:
    return [f"{e.size}:{e.src_stride}:{e.dst_stride}" for e in cmd.entries]


def test_one_command_per_live_cluster():
    into, out = lower_kernel(two_cluster_kernel()).dma_ops()
    assert [(c.part.cluster, c.src_base, c.dst_base) for c in into.commands] == [(0, 0, 0), (1, 64, 0)]
    assert [(c.part.cluster, c.src_base, c.dst_base) for c in out.commands] == [(0, 0, 0), (1, 0, 64)]
    assert into.aggregate is Aggregate.HOMOGENEOUS and all(entries(c) == ["64:1:1"] for c in into.commands)


def test_a_ragged_piece_moves_its_live_run_only():
    into, out = lower_kernel(ragged_commit_kernel()).dma_ops()
    (cmd,) = out.commands
    assert out.kind is DmaKind.DM_TO_HBM and cmd.packet_bytes == 192    # 6 live rows x 8 x i32, not 8 rows
    assert out.dst_alloc.size == 192 and out.src_alloc.size == 256


def test_dm_to_dm_walks_slices_and_elements():
    first, second, third, back = lower_kernel(relayout_kernel()).dma_ops()
    assert entries(first.commands[0]) == ["3:128:256", "2:384:128", "128:1:1"]
    assert second.kind is DmaKind.DM_TO_DM and entries(second.commands[0]) == ["2:128:384", "3:256:128", "128:1:1"]
    assert (second.commands[0].src_base, second.commands[0].dst_base) == (0, 768)
    assert entries(third.commands[0]) == ["6:128:524288", "128:1:1"]       # row f -> slice f
    assert entries(back.commands[0]) == ["6:524288:1", "128:1:6"] and back.commands[0].packet_bytes == 1


def test_more_than_eight_entries_split_the_command():
    _, out = lower_kernel(transpose_kernel(9)).dma_ops()
    assert len(out.commands) == 2 and out.aggregate is Aggregate.HOMOGENEOUS
    assert [(c.src_base, c.dst_base) for c in out.commands] == [(0, 0), (256, 1)]
    assert all(len(c.entries) == 8 for c in out.commands)
    _, fits = lower_kernel(transpose_kernel(8)).dma_ops()
    assert len(fits.commands) == 1


def test_a_loop_longer_than_seq_max_iter_is_nested():
    into, out = lower_kernel(long_loop_kernel()).dma_ops()
    assert entries(into.commands[0]) == ["64:4096:4096", "4096:1:1"]          # DMAOP-3: 4096-byte packets
    assert entries(out.commands[0]) == ["2:131072:65536", "65536:2:1", "2:1:131072"]
    for op in (into, out):
        op.verify(rngd())


def _broadcast_kernel(sizes, src, dst, dtype=i32):
    """HBM `src` -> DM `src` -> HBM `dst`, `dst` holding digits `src` lacks (docs/machine/dma.md)."""
    q, chip, cluster, sl = _space(sizes)

    @device(chip=1)
    def bcast(ctx: Context, x: HbmTensor[dtype, chip, q(src)]) -> HbmTensor[dtype, chip, q(dst)]:
        d = x.to_dm(ctx.tdma, DmTensor[dtype, chip, cluster, sl, q(src)])
        return d.to_hbm(ctx.tdma, HbmTensor[dtype, chip, q(dst)])

    return bcast


def test_dm_to_hbm_replicates_the_digits_the_source_lacks():
    # docs/machine/dma.md: destination axes the source does not have are broadcast: one entry of
    # source stride 0 and the destination's byte stride, outermost.
    _, out = lower_kernel(_broadcast_kernel({"J": 2, "C": 8}, "C", "J, C")).dma_ops()
    (cmd,) = out.commands
    assert out.kind is DmaKind.DM_TO_HBM and entries(cmd) == ["2:0:32", "32:1:1"] and cmd.packet_bytes == 32
    _, inner = lower_kernel(_broadcast_kernel({"J": 2, "C": 8}, "C", "C, J")).dma_ops()
    assert entries(inner.commands[0]) == ["2:0:4", "8:4:8", "4:1:1"]          # J innermost in HBM
    _, two = lower_kernel(_broadcast_kernel({"J": 2, "L": 3, "C": 8}, "C", "J, C, L")).dma_ops()
    assert entries(two.commands[0]) == ["2:0:96", "3:0:4", "8:4:12", "4:1:1"]  # destination order
    for op in (out, inner, two):
        op.verify(rngd())


def test_a_broadcast_entry_counts_toward_the_dmaop_2_split():
    names = [chr(ord("A") + i) for i in range(8)]
    fwd, rev = ", ".join(names), ", ".join(reversed(names))
    sizes = {n: 2 for n in names} | {"J": 2}
    _, out = lower_kernel(_broadcast_kernel(sizes, fwd, f"J, {rev}", i8)).dma_ops()
    assert len(out.commands) == 2 and [(c.src_base, c.dst_base) for c in out.commands] == [(0, 0), (0, 256)]
    assert all(len(c.entries) == 8 for c in out.commands)


def test_without_a_broadcast_the_commands_are_unchanged():
    _, out = lower_kernel(_broadcast_kernel({"C": 8}, "C", "C")).dma_ops()
    assert entries(out.commands[0]) == ["32:1:1"]


# --- LOWER-3 closure ------------------------------------------------------------------------
# A fixed, listed set of the kernels the other suites define. Loading any of them must work
# (a load failure fails here, it is never skipped); every one that traces cleanly must lower
# and verify, and which ones trace cleanly is pinned too, so a kernel cannot drop out of
# the check unnoticed.

_SMALL = ("small_bf16", "small_i8", "load_only")
_SHAPES = ("packet_pairs", "trf_broadcast")
_CONVERT = ("lut_e4m3", "widen_i4", "narrow_e5m2")
_CONTRACT_VALID = ("base", "time_padded_kept")


def _closure_set() -> dict[str, DeviceKernel]:
    from tests.backends import kernels_convert, kernels_shapes, kernels_small
    from tests.ir.kernels_commit import RULE_KERNELS, VALID_KERNELS, kernel
    from tests.ir.kernels_contract import RULES, rule

    found = {f"small.{n}": getattr(kernels_small, n) for n in _SMALL}
    found |= {f"shapes.{n}": getattr(kernels_shapes, n) for n in _SHAPES}
    found |= {f"convert.{n}": getattr(kernels_convert, n) for n in _CONVERT}
    found |= {f"commit.{n}": kernel(text, n) for n, text in VALID_KERNELS.items()}
    found |= {f"commit-rule.{n}": kernel(text, n) for n, (_, text) in RULE_KERNELS.items()}
    names = re.findall(r"^def (\w+)\(ctx: Context", RULES, re.MULTILINE)
    found |= {f"contract.{n}": rule(n) for n in names}
    assert all(isinstance(k, DeviceKernel) for k in found.values())
    return found


_CLOSURE = _closure_set()
_TRACE_VALID = ({f"small.{n}" for n in _SMALL} | {f"shapes.{n}" for n in _SHAPES}
                | {f"convert.{n}" for n in _CONVERT} | {f"contract.{n}" for n in _CONTRACT_VALID}
                | {"commit.f32-commit", "commit.f32-cast", "commit.f32-commit-cast", "commit.f32-split-packet",
                   "commit.dm-to-dm", "commit.dm-cluster-relayout", "commit.dm-slice-relayout"})


def test_the_closure_set_is_the_listed_one():
    assert len(_CLOSURE) == 64
    assert {n for n, k in _CLOSURE.items() if not k.trace().errors} == _TRACE_VALID


@pytest.mark.parametrize("name", sorted(_TRACE_VALID))
def test_every_trace_valid_kernel_of_the_suites_lowers(name):
    lowered = lower_kernel(_CLOSURE[name])
    lowered.verify(rngd())
    assert lowered.programs() or lowered.dma_ops()


@pytest.mark.parametrize("make", [ragged_commit_kernel, relayout_kernel, two_cluster_kernel, long_loop_kernel])
def test_dma_kernels_have_locations(make):
    for op in lower_kernel(make()).ops():
        assert op.loc is not None and op.loc.file.endswith("kernels.py")
