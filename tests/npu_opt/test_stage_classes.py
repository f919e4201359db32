"""The written-out stage classes (npu_opt.gen_stage_classes): each checked-in module is what
the declaration writes today, each class offers exactly what its declaration says, and a
stage class can withdraw an inherited method with a reason (`stagebase.withdrawn`)."""

from __future__ import annotations

import ast
import importlib
import os
import subprocess
import sys

import pytest

from ir.diagnostic import Violation
from ir.vector.stages import VeStage
import npu_opt.stages  # noqa: F401 - before npu_opt.fetch_lift, which it imports at its end
from npu_opt import fetch_lift, gen_stage_classes as gen
from npu_opt.stagebase import STAGE_METHODS, StreamStage, adopt, stage_method, withdrawn
from npu_opt import vector_engine  # noqa: F401 - imports the written-out classes, which fill the tables
from npu_opt.vector_pair import PairStream
from npu_opt.vector_pass import AFTER_INTER_CLASSES, INTER_FIRST_CLASSES, PAIR_STAGE_CLASSES, VECTOR_STAGE_CLASSES
from tests.golden import assert_golden

S = VeStage
FAMILIES = [(gen.VECTOR, VECTOR_STAGE_CLASSES), (gen.INTER_FIRST, INTER_FIRST_CLASSES),
            (gen.AFTER_INTER, AFTER_INTER_CLASSES), (gen.PAIR, PAIR_STAGE_CLASSES)]


@pytest.mark.parametrize("path", sorted(gen.OUTPUTS))
def test_the_checked_in_module_is_what_the_declaration_writes(path):
    text = (gen.ROOT / path).read_text(encoding="utf-8")
    assert text == gen.render(path), f"{path} is stale: run `python -m npu_opt.gen_stage_classes`"
    assert "do not edit" in text.split('"""')[1]


def _written(path: str) -> dict[str, set[str]]:
    """class name -> the attributes its class statement assigns, read from the source."""
    tree = ast.parse((gen.ROOT / path).read_text(encoding="utf-8"))
    return {node.name: {t.id for stmt in node.body if isinstance(stmt, ast.Assign) for t in stmt.targets}
            for node in tree.body if isinstance(node, ast.ClassDef)}


def test_each_class_statement_lists_its_declared_methods_and_no_more():
    written = {name: attrs for path in gen.OUTPUTS for name, attrs in _written(path).items()}
    declared = {name: set(methods) for family, _ in FAMILIES for name, _, methods in map(
        lambda key, f=family: f.declare(*key), family.keys)}
    assert written == declared


@pytest.mark.parametrize("family,table", FAMILIES, ids=lambda f: getattr(f, "table", ""))
def test_each_class_offers_exactly_its_declaration(family, table):
    assert set(table) == set(family.keys)
    for key, cls in table.items():
        name, doc, methods = family.declare(*key)
        own = {k: v for k, v in vars(cls).items() if hasattr(v, "stage_name")}
        assert cls.__name__ == name and cls.__doc__ == doc
        assert own.keys() == methods.keys() and all(own[k] is methods[k] for k in methods)
        assert doc.endswith(", ".join(sorted(cls.OFFERS)) + ".")
        if family.twin is None:
            assert cls.OFFERS == frozenset(methods)
        else:  # it extends its twin, and its own methods only take the twin's back
            assert cls.__bases__ == (dict(FAMILIES)[family.twin][key],)
            assert cls.OFFERS == cls.__bases__[0].OFFERS - set(methods)


def test_every_stage_class_offers_what_its_golden_file_lists():
    """tests/golden/stage_offers.txt: each family's classes, each with the methods it offers
    (first pinned from the classes `type(...)` built before they were written out)."""
    lines = []
    for family, table in FAMILIES:
        lines.append(f"{family.table}: {len(table)} classes")
        lines += sorted(f"  {cls.__name__}: {' '.join(sorted(cls.OFFERS))}" for cls in table.values())
    assert_golden("stage_offers", lines)


def test_an_inter_first_class_offers_its_vector_class_less_the_inter_slice_reduce():
    for key, cls in INTER_FIRST_CLASSES.items():
        assert cls.OFFERS == VECTOR_STAGE_CLASSES[key].OFFERS - {"vector_inter_slice_reduce"}


def test_a_pair_withdraws_the_intra_slice_reduce():
    for cls in PAIR_STAGE_CLASSES.values():
        method = cls.vector_intra_slice_reduce
        assert method is PairStream.__dict__["vector_intra_slice_reduce"] and method.withdrawn
        assert "vector_intra_slice_reduce" not in cls.OFFERS


def _why(stage):
    return Violation("TOY-1", "not here")


def test_withdrawing_an_inherited_method_drops_it_from_offers_only():
    @stage_method("toy_step")
    def step(self, loc):
        return self

    class Base(StreamStage):
        toy_step = step

    class Narrower(Base):
        toy_step = withdrawn("toy_step", _why)

    class Wider(Narrower):
        toy_step = step  # offered again

    assert Base.OFFERS == {"toy_step"} and Narrower.OFFERS == frozenset() and Wider.OFFERS == {"toy_step"}
    assert "toy_step" in STAGE_METHODS  # still a stage method's name: no misspelling hint for it
    STAGE_METHODS.discard("toy_step")


def test_adopt_adds_a_method_declared_after_the_module_was_written_and_refuses_a_renamed_class():
    @stage_method("toy_late")
    def late(self, loc):
        return self

    class ToyStream(StreamStage):
        """written"""

    table = {}
    adopt(table, {("k",): ToyStream}, lambda key: ("ToyStream", "declared", {"toy_late": late}))
    assert table == {("k",): ToyStream} and ToyStream.OFFERS == {"toy_late"} and ToyStream.__doc__ == "declared"
    adopt(table, {("k",): ToyStream}, lambda key: ("ToyStream", "declared", {}))  # a unit removed again
    assert ToyStream.OFFERS == frozenset() and not hasattr(ToyStream, "toy_late")
    with pytest.raises(TypeError, match="regenerate it with `python -m npu_opt.gen_stage_classes`"):
        adopt(table, {("k",): ToyStream}, lambda key: ("OtherStream", "declared", {}))
    STAGE_METHODS.discard("toy_late")


def test_the_command_writes_the_stale_modules_and_check_reports_them(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(gen, "ROOT", tmp_path)
    (tmp_path / "npu_opt").mkdir()
    assert gen.main(["--check"]) == 1 and capsys.readouterr().out.count("stale: ") == len(gen.OUTPUTS)
    assert gen.main([]) == 0 and not any(tmp_path.glob("*.py"))
    assert all((tmp_path / p).read_text(encoding="utf-8") == gen.render(p) for p in gen.OUTPUTS)
    assert gen.main(["--check"]) == 0


def test_the_lifted_fetch_streams_share_the_adapter_stages():
    adapter = {"fetch_mask", "fetch_table_lookup", "fetch_cast", "fetch_zero_point_sub", "switch", "collect"}
    assert fetch_lift.FetchSliceLiftStream.OFFERS == adapter
    assert fetch_lift.FetchClusterLiftStream.OFFERS == adapter | {"fetch_slice_lift"}
    assert fetch_lift.FetchChipLiftStream.OFFERS == adapter | {"fetch_slice_lift", "fetch_cluster_lift"}


def test_every_written_out_module_imports_first():
    """Any of them may be the first module a process imports (an IDE, a test): each imports the
    modules holding its bodies (below it), and npu_opt.vector_engine fills every table."""
    for path in gen.OUTPUTS:
        module = path[:-3].replace("/", ".")
        code = (f"import {module}\nimport npu_opt.vector_engine\n"
                "from npu_opt.vector_pass import PAIR_STAGE_CLASSES as p, VECTOR_STAGE_CLASSES as v\n"
                f"assert len(v) == {len(VECTOR_STAGE_CLASSES)} and len(p) == {len(PAIR_STAGE_CLASSES)}")
        done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=gen.ROOT,
                              env={**os.environ, "PYTHONPATH": str(gen.ROOT)}, timeout=300)
        assert done.returncode == 0, done.stderr[-2000:]
    assert importlib.import_module("npu_opt.vector_stage_classes").VectorFxpI32Stream is VECTOR_STAGE_CLASSES[
        (S.FXP, "i32")]
