"""Indexed declaration tables (ir/declare.py `Table(index=...)`): a lookup imports only the
module the index names for its key, and every checked-in index says what the declarations
say (a new or moved declaration fails here until `python -m ir.declare MODULE` rewrites it)."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from ir import declare
from ir.declare import index_text, indexed_tables, write_indexes

ROOT = Path(__file__).resolve().parent.parent
# Every module defining an indexed table (a new one is added here and to the index it names).
INDEXED = ["tu_ops.lower.dispatch"]


@pytest.mark.parametrize("module", INDEXED)
def test_every_index_is_current(module: str) -> None:
    tables = indexed_tables(module)
    assert tables, f"{module} defines no indexed table"
    for index, group in tables.items():
        path = ROOT / (index.replace(".", "/") + ".py")
        assert path.read_text(encoding="utf-8") == index_text(group, module), \
            f"{path.relative_to(ROOT)} is stale: run `python -m ir.declare {module}`"


def test_a_compile_lookup_loads_one_lowering_module() -> None:
    """A fresh process asking for the contraction's lowering loads its module, not the
    vector lowerings (what a one-kernel GEMM compile saves, issue 29)."""
    code = ("import sys\nfrom ir import ops\nfrom tu_ops.lower.dispatch import LOWERINGS, FEED_FLITS\n"
            "assert LOWERINGS.get(ops.ContractOuter) is not None and FEED_FLITS.get(ops.Fetch) is None\n"
            "print(' '.join(sorted(m for m in sys.modules if m.startswith('tu_ops.lower.'))))\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT,
                          env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin", "HOME": "/nonexistent"})
    assert done.returncode == 0, done.stderr
    loaded = set(done.stdout.split())
    assert "tu_ops.lower.contract" in loaded
    assert not loaded & {"tu_ops.lower.vector_pair", "tu_ops.lower.vector_branch", "tu_ops.lower.engines"}


def test_an_indexed_table_loads_what_its_index_names(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pkg = tmp_path / "declidx"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("from ir.declare import Table\n"
                                     "TABLE = Table('step', package='declidx', index='declidx.index')\n")
    for name, key in (("engine_a", "a"), ("engine_b", "b")):
        (pkg / f"{name}.py").write_text(textwrap.dedent(f"""
            from declidx import TABLE

            @TABLE.declare({key!r}, unit={name!r})
            def run():
                return {key!r}
        """))
    (pkg / "index.py").write_text("DECLARED = {}\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    try:
        import declidx

        assert write_indexes("declidx") == [str(pkg / "index.py")]  # loads the package to write it
        for name in ("declidx.engine_a", "declidx.engine_b", "declidx.index"):
            del sys.modules[name]
        declidx.TABLE._fns.clear()
        declidx.TABLE._where.clear()
        declare._LOADED.discard(("declidx", True, ""))
        assert """"'a'": 'declidx.engine_a',""" in (pkg / "index.py").read_text()  # a str key by its repr

        assert declidx.TABLE.get("zzz") is None  # not in the index: nothing loads
        assert "declidx.engine_a" not in sys.modules and "declidx.engine_b" not in sys.modules
        assert declidx.TABLE["b"]() == "b" and declidx.TABLE.facts("b") == {"unit": "engine_b"}
        assert "declidx.engine_a" not in sys.modules  # only b's module
        assert sorted(declidx.TABLE) == ["a", "b"]  # going over the table loads the rest
        assert "declidx.engine_a" in sys.modules

        # declared since the index was written: `get` misses it, `require` loads the package for it
        (pkg / "engine_c.py").write_text("from declidx import TABLE\n\nTABLE.declare('c')(lambda: 'c')\n")
        for name in ("declidx.engine_a", "declidx.engine_b"):
            del sys.modules[name]
        declidx.TABLE._fns.clear()
        declidx.TABLE._where.clear()
        declare._LOADED.discard(("declidx", True, ""))
        assert declidx.TABLE.get("c") is None and "declidx.engine_c" not in sys.modules
        assert declidx.TABLE.require("c")() == "c" and declidx.TABLE.require("zzz") is None
    finally:
        for name in [n for n in sys.modules if n.split(".")[0] == "declidx"]:
            del sys.modules[name]
