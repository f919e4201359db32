"""DMA commands (visa/visa.lark "DMA commands", docs/reference/diagnostics.md): partitions, packets,
ragged pieces, DM -> DM slices, DMAOP-2 splits; and LOWER-3 closure over every trace-valid
kernel the other test suites define."""

import importlib

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

_MODULES = ("tests.backends.kernels_small", "tests.backends.kernels_shapes", "tests.backends.kernels_convert",
            "tests.ir.kernels_commit", "tests.ir.kernels_contract", "tests.ir.kernels_fetch")


def _harvest() -> list[DeviceKernel]:
    from tests.kernel_files import load_source

    found: list[DeviceKernel] = []
    for n, name in enumerate(_MODULES):
        try:
            module = importlib.import_module(name)
        except ImportError:
            continue
        found += [v for v in vars(module).values() if isinstance(v, DeviceKernel)]
        texts = [v for v in vars(module).values() if isinstance(v, str) and "@device" in v]
        texts += [x for v in vars(module).values() if isinstance(v, dict) for x in v.values()
                  if isinstance(x, str) and "@device" in x]
        for i, text in enumerate(texts):
            try:
                module = load_source(text, f"lowering-closure-{n}-{i}")
            except Exception:  # noqa: BLE001 - a source that fails to load is another suite's refusal case
                continue
            found += [v for v in vars(module).values() if isinstance(v, DeviceKernel)]
    return found


def test_every_trace_valid_kernel_of_the_suites_lowers_or_is_an_l_refusal():
    kernels = [k for k in _harvest() if not k.trace().errors]
    assert len(kernels) >= 10
    for kernel in kernels:
        try:
            lower_kernel(kernel).verify(rngd())
        except CompileError as e:
            codes = {d.code for d in e.diagnostics}
            assert codes <= {"MEM-3", "MEM-4", "FEED-11", "TRFLD-6", "CMT-5", "DMAOP-5"}, (kernel.name, codes)


@pytest.mark.parametrize("make", [ragged_commit_kernel, relayout_kernel, two_cluster_kernel, long_loop_kernel])
def test_dma_kernels_have_locations(make):
    for op in lower_kernel(make()).ops():
        assert op.loc is not None and op.loc.file.endswith("kernels.py")
