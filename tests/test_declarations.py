"""The tables each layer fills by declaration (ir/declare.py): every traced op has its code in
every layer, a key is declared once, and each table's `load` imports every module of its
package that declares an entry (a module it misses fails here, named)."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from backends.cpu.handlers import HANDLERS, takes_options
from ir import ops as ir
from ir.declare import Table
from tests.kernel_text import traced_op_classes
from tu_ops import OP_CLASSES
from tu_ops.feed_fields import DestKind
from tu_ops.lower.dispatch import LOWERINGS
from tests.golden import assert_golden

# Traced ops that are not stages of a TU program: the kernel's frame.
FRAME = {"param", "return", "final"}


def _where(table, cls) -> str:
    """The module that declares `cls`'s entry of `table`, or `-`."""
    return table.where().get(cls, "-")


def test_each_traced_op_has_the_code_its_golden_file_lists():
    """tests/golden/traced_ops.txt: every traced op by stage, its class, and the modules holding
    its cpu handler and its lowering (`-`: none; the memory ops, the fetch adapters and the
    runtime scalars are lowered outside programs, by tu_ops.lower.build / views / runtime)."""
    lines = [f"{stage}: {cls.__module__}.{cls.__qualname__} cpu={_where(HANDLERS, cls)} "
             f"lowering={_where(LOWERINGS, cls)}" for stage, cls in sorted(traced_op_classes().items())]
    assert_golden("traced_ops", lines)


def test_every_traced_op_but_the_frame_has_a_cpu_handler():
    missing = sorted(stage for stage, cls in traced_op_classes().items() if stage not in FRAME and cls not in HANDLERS)
    assert missing == []


def test_handlers_that_take_options_say_so():
    assert takes_options(ir.ContractTime) and takes_options(ir.ToDm)
    assert not takes_options(ir.View) and not takes_options(ir.ContractLane)


def test_feed_destinations_come_from_the_op_classes():
    """tests/golden/feed_destinations.txt: each destination kind, the mnemonic of its class."""
    assert_golden("feed_destinations", sorted(f"{kind.name}: {kind.op_class.MNEMONIC}" for kind in DestKind))


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


def test_a_tables_load_runs_on_first_lookup_once(tmp_path, monkeypatch):
    pkg = tmp_path / "declpkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text(textwrap.dedent("""
        from ir.declare import Table

        LOADS = []

        def _load():
            LOADS.append(1)
            from declpkg import engine

        TABLE = Table('step', _load, package='declpkg')
    """))
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
        assert len(declpkg.TABLE) == 1 and declpkg.LOADS == [1]  # a second lookup loads nothing
    finally:
        for name in [n for n in sys.modules if n.split(".")[0] == "declpkg"]:
            del sys.modules[name]


# In a fresh process: what each table holds after its own `load`, then after every module of
# its package is imported (the walk is the test's; the code imports by name nowhere).
_WALK = """
import importlib, pkgutil, sys
from backends.cpu.handlers import HANDLERS
from ir import ops
from tu_ops.base import TU_OPS
from tu_ops.lower.dispatch import FEED_FLITS, LOWERINGS, PRINTED_TYPES
from visa.interp.steps import STEPS
import tu_ops

def held():
    out = {t.what: sorted(set(t.where().values())) for t in (HANDLERS, LOWERINGS, FEED_FLITS, PRINTED_TYPES,
                                                           STEPS)}
    out["tu op"] = sorted({c.__module__ for c in TU_OPS.values()})
    out["traced op"] = sorted({c.__module__ for c in ops._DECLARED.values()})
    return out

for table in (HANDLERS, LOWERINGS, FEED_FLITS, PRINTED_TYPES, STEPS):
    table._ready()
tu_ops.OP_CLASSES
import tests.kernel_text
loaded = held()
for package in ("backends.cpu", "tu_ops", "visa", "ir"):
    root = importlib.import_module(package)
    for info in pkgutil.walk_packages(root.__path__, package + "."):
        importlib.import_module(info.name)
walked = held()
print(repr({k: sorted(set(walked[k]) - set(loaded[k])) for k in walked}))
"""


def test_every_declaring_module_is_in_its_tables_load():
    root = Path(__file__).resolve().parent.parent
    done = subprocess.run([sys.executable, "-c", _WALK], capture_output=True, text=True, cwd=root)
    assert done.returncode == 0, done.stderr[-2000:]
    missed = {k: v for k, v in eval(done.stdout).items() if v}  # noqa: S307 (our own repr)
    assert missed == {}, "import these modules where the table is read (or in its `load`)"
