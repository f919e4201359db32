"""The tables each layer fills by declaration (ir/declare.py): every traced op has its code in
every layer, a key is declared once, and a module nobody imports is still found."""

from __future__ import annotations

import sys
import textwrap

import pytest

from backends.cpu.handlers import HANDLERS, takes_options
from ir import ops as ir
from ir.declare import Table, load_package
from tu_ops import OP_CLASSES
from tu_ops.feed import dest_element_types, dest_mnemonics
from tu_ops.lower.dispatch import LOWERINGS

# Traced ops that are not stages of a TU program: the kernel's frame and the DMAs, which
# the lowering builds itself (tu_ops.lower.dma), and the stages a feed consumes whole.
FRAME = {"param", "return", "final"}
LOWERED_ELSEWHERE = {"to_dm", "to_hbm", "view", "begin", "begin_interleaved", "fetch", "fetch_table_lookup",
                     "fetch_chip_lift", "fetch_cluster_lift", "fetch_slice_lift",
                     "fetch_cast", "fetch_zero_point_sub", "switch", "collect", "fetch_mask",
                     # the memory ops, lowered to DMA-like records outside programs (tu_ops.lower.views)
                     "new", "window", "to_view", "memset", "dma_gather", "dma_scatter", "shuffle",
                     # the scratchpad moves, `dma_spm` records (tu_ops.lower.spm)
                     "to_spm", "spm_to_dm",
                     "redistribute",
                     # runtime scalars and guards, steps of their own (tu_ops.lower.runtime)
                     "scalar_load", "scalar", "when", "end_when"}


def test_every_traced_op_has_a_cpu_handler():
    missing = sorted(stage for stage, cls in ir.traced_op_classes().items()
                     if stage not in FRAME and cls not in HANDLERS)
    assert missing == []


def test_every_program_stage_has_a_lowering():
    missing = sorted(stage for stage, cls in ir.traced_op_classes().items()
                     if stage not in FRAME | LOWERED_ELSEWHERE and cls not in LOWERINGS)
    assert missing == []


def test_handlers_that_take_options_say_so():
    assert takes_options(ir.ContractTime) and takes_options(ir.ToDm)
    assert not takes_options(ir.View) and not takes_options(ir.ContractLane)


def test_feed_destinations_come_from_the_op_classes():
    assert {kind.name: name for kind, name in dest_mnemonics().items()} == {
        "TRF_LOAD": "trf_load", "CONTRACT_OUTER": "contract_outer", "CAST": "cast_op",
        "VECTOR": "vector", "VECTOR_PAIR": "vector_pair", "VECTOR_BRANCH": "vector_branch", "VRF_LOAD": "vrf_load", "TRANSPOSE": "transpose", "COMMIT": "commit",
        "INTER_SLICE_REDUCE": "inter_slice_reduce"}
    assert set(dest_element_types()) == set(dest_mnemonics())


def test_op_classes_are_in_pipeline_order():
    ranks = [cls.PIPELINE_RANK for cls in OP_CLASSES]
    assert ranks == sorted(ranks) and len(set(ranks)) == len(ranks) and 0 not in ranks


def test_a_key_is_declared_once():
    table = Table("test entry")

    @table.declare("k")
    def first():
        return 1

    with pytest.raises(ValueError, match="`k` already has a test entry: .*first"):
        table.declare("k")(lambda: 2)
    assert table["k"] is first and table.facts("k") == {}


def test_a_module_nobody_imports_is_found(tmp_path, monkeypatch):
    pkg = tmp_path / "declpkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("from ir.declare import Table\nTABLE = Table('step', package='declpkg')\n")
    (pkg / "engine.py").write_text(textwrap.dedent("""
        from declpkg import TABLE

        @TABLE.declare("new_op", fast=True)
        def run():
            return "ran"
    """))
    monkeypatch.syspath_prepend(str(tmp_path))
    try:
        import declpkg

        assert "declpkg.engine" not in sys.modules
        assert declpkg.TABLE["new_op"]() == "ran" and declpkg.TABLE.facts("new_op") == {"fast": True}
        load_package("declpkg")  # a second load is a no-op
        assert len(declpkg.TABLE) == 1
    finally:
        for name in [n for n in sys.modules if n.split(".")[0] == "declpkg"]:
            del sys.modules[name]


def test_a_prefixed_table_loads_only_the_modules_named_for_it(tmp_path, monkeypatch):
    """visa's re-derivations live in visa/retrace*.py: their table loads those, not the rest of visa."""
    pkg = tmp_path / "declpre"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("from ir.declare import Table\nTABLE = Table('inverse', package='declpre', "
                                     "prefix='inv')\n")
    for name, key in (("inv_a", "a"), ("inverse_b", "b"), ("other", "c")):
        (pkg / f"{name}.py").write_text(f"from declpre import TABLE\nTABLE.declare({key!r})(lambda: {key!r})\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    try:
        import declpre

        assert sorted(declpre.TABLE) == ["a", "b"]
        assert "declpre.other" not in sys.modules
    finally:
        for name in [n for n in sys.modules if n.split(".")[0] == "declpre"]:
            del sys.modules[name]

