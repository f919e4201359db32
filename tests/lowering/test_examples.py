"""Every example lowers and verifies; records keep the user's call site; inferred mappings
print from their factor form; `dump_ir` writes one file per pass."""

from __future__ import annotations

import linecache
from pathlib import Path

import pytest

from backends.npu import lower_kernel
from npu_opt.device import DeviceKernel
from tests.backends.examples import EXAMPLES, example, load
from tu_ops import rngd
from tu_ops.lower import Options, lower
from tu_ops.lower.errors import stage_of

KERNELS = [(path.stem, name) for path in sorted(EXAMPLES.glob("*.py"))
           for name, v in vars(load(path)).items() if isinstance(v, DeviceKernel)]

METHOD = {"feed_buffer": "begin", "trf_load": "to_trf", "contract_outer": "contract_outer",
          "packet_reduce": "contract_packet", "time_reduce": "contract_time", "lane_fold": "contract_lane",
          "cast_op": "cast", "commit": "commit_trim", "vector": "vector_init", "vector_pair": "vector_init",
          "vector_branch": "vector_init", "vector_rf": "vector_init", "vector_branch_rf": "vector_init",
          "vrf_load": "to_vrf"}


def test_the_examples_are_all_here():
    assert {name for _, name in KERNELS} >= {
        "dot_product_kernel", "gemv_kernel", "gemm_kernel", "gemm_i8_kernel", "gemm_bf16_kernel",
        "row_sum_kernel", "fetch_commit_simple"}


@pytest.mark.parametrize("stem,name", KERNELS)
def test_example_lowers_and_verifies(stem, name):
    kernel = example(stem, name)
    lowered = lower_kernel(kernel)
    lowered.verify(rngd())
    assert lowered.warnings == ()
    assert lowered.name == name and lowered.programs()
    assert [p.index for p in lowered.programs()] == list(range(len(lowered.programs())))
    ids = [op.result.id for op in lowered.ops()]
    assert ids == list(range(len(lowered.params), len(lowered.params) + len(ids)))


@pytest.mark.parametrize("stem,name", KERNELS)
def test_every_op_has_the_users_location(stem, name):
    lowered = lower_kernel(example(stem, name))
    for op in lowered.ops():
        assert op.loc is not None, op.text()
        assert Path(op.loc.file).name == f"{stem}.py"
        source = linecache.getline(op.loc.file, op.loc.line)
        method = METHOD.get(op.MNEMONIC) or stage_of(op)
        # a `commit_view` whose stream reads its own destination (resident_accumulate's `acc += x`)
        # commits aside, then copies in with a dma_into at the commit_view
        copied = op.MNEMONIC == "dma_into" and source[op.loc.col - 1:].startswith("commit_view")
        assert copied or source[op.loc.col - 1:].startswith(method), (op.text(), source)


def test_trf_is_loaded_before_its_use_and_programs_sit_at_their_sinks():
    lowered = lower_kernel(example("gemm", "gemm_kernel"))
    kinds = [getattr(s, "MNEMONIC", None) or s.ops[-1].MNEMONIC for s in lowered.steps]
    assert kinds == ["dma", "dma", "trf_load", "commit", "dma"]


def test_inferred_mappings_print_from_their_factor_form():
    """visa/visa.lark rule 5 on example 3: to_trf() and commit() defaults."""
    lowered = lower_kernel(example("gemm", "gemm_kernel"))
    load_op = next(op for op in lowered.ops() if op.MNEMONIC == "trf_load")
    commit = next(op for op in lowered.ops() if op.MNEMONIC == "commit")
    assert load_op.text().endswith('-> trf[bf16, "J % 8", "J / 8 % 4, K"]')
    assert commit.text().endswith('-> dm[bf16, "1", "1 # 2", "I / 32, J / 32", "I % 32, J % 32"]')
    out = lowered.dma_ops()[-1]
    assert out.text().endswith('-> hbm[bf16, "1", "I, J"]')
    assert lowered.axes == (("I", 512), ("J", 512), ("K", 64))


def test_user_written_mappings_keep_their_tree():
    lowered = lower_kernel(example("row_sum", "row_sum_kernel"))
    commit = next(op for op in lowered.ops() if op.MNEMONIC == "commit")
    assert commit.text().endswith('"I % 8, 1 # 2"]')


# The same kernel twice: once in a module that declares its axes in an order (N, K, M)
# unlike their first appearance in the kernel (M, K, N), once in a module with no axes()
# registry at all (every m() names its sizes with `axes=`).
_AXES_BODY = '''
@device(chip=1)
def order_k(ctx: Context, x: HbmTensor[i8, Chip, m("M, K"{ax})],
            y: HbmTensor[i8, Chip, m("N, K"{ax})]) -> HbmTensor[i8, Chip, m("M, K"{ax})]:
    d = x.to_dm(ctx.tdma, DmTensor[i8, Chip, Cluster, Slice, m("M, K"{ax})])
    e = y.to_dm(ctx.tdma, DmTensor[i8, Chip, Cluster, Slice, m("N, K"{ax})])
    return d.to_hbm(ctx.tdma, HbmTensor[i8, Chip, m("M, K"{ax})])
'''
_AXES_HEAD = '''from npu_opt import *
{decl}
Chip = m("1")
Cluster = m("1 # 2")
Slice = m("1 # 256")
'''
DECLARED = _AXES_HEAD.format(decl="axes(N=4, K=32, M=8)") + _AXES_BODY.format(ax="")
UNDECLARED = (_AXES_HEAD.format(decl="AX = {'M': 8, 'K': 32, 'N': 4}")
              + _AXES_BODY.format(ax=", axes=AX"))


def _axes_line(kernel) -> str:
    import npu_opt

    (line,) = [x.strip() for x in npu_opt.compile(kernel).text.splitlines() if x.strip().startswith("axes ")]
    return line


def test_axes_follow_the_declaration_order_of_the_module():
    from tests.kernel_files import load_source

    kernel = load_source(DECLARED, "axes-declared").order_k
    assert lower_kernel(kernel).axes == (("N", 4), ("K", 32), ("M", 8))
    assert _axes_line(kernel) == "axes N=4, K=32, M=8"


def test_axes_fall_back_to_first_appearance_without_a_declaration():
    from ir.mapping.axes import REGISTRY_NAME
    from tests.kernel_files import load_source

    module = load_source(UNDECLARED, "axes-undeclared")
    assert not vars(module).get(REGISTRY_NAME)      # no declaration: the fallback is taken
    assert lower_kernel(module.order_k).axes == (("M", 8), ("K", 32), ("N", 4))
    assert _axes_line(module.order_k) == "axes M=8, K=32, N=4"


def test_an_example_keeps_its_declared_axis_order():
    kernel = example("gemm_i8", "gemm_i8_kernel")
    assert lower_kernel(kernel).axes == (("M", 512), ("N", 512), ("K", 128))
    assert lower(kernel.trace().kernel, Options()).axes == (("M", 512), ("N", 512), ("K", 128))


def test_dump_ir_writes_one_file_per_pass(tmp_path):
    kernel = example("gemm_i8", "gemm_i8_kernel")
    first, second = tmp_path / "a", tmp_path / "b"
    for d in (first, second):
        lower_kernel(kernel, "rngd", Options(dump_ir=d, axes=kernel.axes))
    names = sorted(p.name for p in first.iterdir())
    assert names == ["gemm_i8_kernel.00-trace.txt", "gemm_i8_kernel.01-emulate-dtypes.txt",
                     "gemm_i8_kernel.02-lower-ops.txt", "gemm_i8_kernel.03-allocate-memory.txt"]
    for name in names:
        assert (first / name).read_text() == (second / name).read_text()
    assert "to_trf" in (first / names[0]).read_text()
    assert "dest=0 :" in (first / names[2]).read_text()         # before allocation
    assert "dest=4096 :" in (first / names[3]).read_text()      # after allocation


def test_no_dump_without_the_option(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    lower_kernel(example("gemm_i8", "gemm_i8_kernel"))
    assert list(tmp_path.iterdir()) == []
