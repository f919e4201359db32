"""The package layering, checked over the whole tree: every import (function-level ones
included, parsed with `ast`) of every module of the six packages.

Data flows one way: the command line (`driver`) -> the DSL (`npu_opt`) -> `ir` -> `tu_ops`
(lowering + verifiers) -> `visa`; `backends` consume them. A package never imports one
upstream of it, the VISA interpreter imports only what it executes, and the package graph
has no cycle. The one edge against the flow is `npu_opt/__main__.py`, the start-up shim
behind `python -m npu_opt` (`ALLOWED`).
"""

from __future__ import annotations

import ast
import functools
from pathlib import Path

import pytest

from tests import source_tree

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("driver", "npu_opt", "synth", "ir", "tu_ops", "visa", "backends")

# (importing module prefix, imported module prefix): never allowed.
FORBIDDEN = [
    ("npu_opt", "driver"),                 # the DSL never depends on its command line
    # synthesis writes kernels with the DSL: nothing it builds on reaches up into it
    *[(p, "synth") for p in ("npu_opt", "ir", "tu_ops", "visa", "backends")],
    *[("ir", p) for p in ("driver", "npu_opt", "tu_ops", "visa", "backends")],
    *[("tu_ops", p) for p in ("driver", "npu_opt", "visa", "backends")],
    *[("visa", p) for p in ("driver", "npu_opt", "backends")],
    *[("backends", p) for p in ("driver", "npu_opt")],
    ("npu_opt", "tu_ops.lower"),           # the DSL never lowers
    # the interpreter executes an artifact: not the traced IR, the rules, the lowering or the verifier
    *[("visa.interp", p) for p in ("ir.ops", "ir.kernel", "ir.rules", "tu_ops.lower", "visa.verify",
                                    "visa.relower")],
    # the verifier checks what each record declares, never re-running the lowering (issue 37): nor
    # do the declarations it calls, the Vector Engine passes' included (`with_derived` in the record
    # modules and the reduce / VRF rules below them)
    ("visa.verify", "tu_ops.lower"),
    ("visa.relower", "tu_ops.lower"),
    *[(f"tu_ops.{m}", "tu_ops.lower") for m in ("base", "vector", "vector_pair", "vector_branch", "vrf", "vector_reduce",
                                                "vector_steps", "valid_count")],
]


# (importing module, imported module): the exceptions to FORBIDDEN, each exact, each with why.
ALLOWED = {
    # `python -m npu_opt` is the documented way to start the command line (docs/reference/cli.md)
    ("npu_opt.__main__", "driver.cli"): "the start-up shim of `python -m npu_opt`",
    ("npu_opt.__main__", "driver.cli.main"): "the start-up shim of `python -m npu_opt`",
}


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path: Path) -> list[str]:
    """Every module `path` imports (absolute names; `from a import b` also yields `a.b`)."""
    tree = source_tree.tree(path)
    package = _module_name(path).rsplit(".", 0 if path.name == "__init__.py" else 1)[0]
    out: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            out.append(base)
            out += [f"{base}.{a.name}" for a in node.names]
    return out


@functools.cache
def modules() -> dict[str, list[str]]:
    """Every module of PACKAGES -> what it imports. Parsed when a test first asks, not at
    import: every pytest-xdist worker imports this file to collect it, one runs its tests."""
    found = {}
    for package in PACKAGES:
        for path in source_tree.paths(package):
            found[_module_name(path)] = _imports(path)
    return found


def _within(name: str, prefix: str) -> bool:
    return name == prefix or name.startswith(prefix + ".")


def test_the_tree_is_found():
    assert len(modules()) > 100
    assert {m.split(".")[0] for m in modules()} == set(PACKAGES)


@pytest.mark.parametrize("importer, imported", FORBIDDEN, ids=[f"{a}->{b}" for a, b in FORBIDDEN])
def test_no_forbidden_edge(importer, imported):
    bad = sorted(f"{module} imports {name}" for module, names in modules().items() if _within(module, importer)
                 for name in names if _within(name, imported) and (module, name) not in ALLOWED)
    assert bad == []


def test_synthesis_is_a_package_of_its_own_above_the_dsl():
    """synth/ sits beside npu_opt/, not inside it (issue 59 item 7): it builds kernels with the
    DSL and the tune Space; FORBIDDEN keeps every package below it from importing it."""
    assert not (ROOT / "npu_opt" / "synth").exists()
    assert {m for m in modules() if _within(m, "synth")} >= {
        "synth", "synth.spec", "synth.space", "synth.tiling"}
    assert any(_within(name, "npu_opt") for m, names in modules().items() if _within(m, "synth") for name in names)


def test_no_cycle_between_packages():
    edges = {p: set() for p in PACKAGES}
    for module, names in modules().items():
        for name in names:
            top = name.split(".")[0]
            if top in edges and top != module.split(".")[0] and (module, name) not in ALLOWED:
                edges[module.split(".")[0]].add(top)
    order: list[str] = []
    state: dict[str, str] = {}

    def visit(p: str, path: tuple[str, ...]) -> None:
        assert state.get(p) != "open", f"package cycle: {' -> '.join(path + (p,))}"
        if p in state:
            return
        state[p] = "open"
        for q in sorted(edges[p]):
            visit(q, path + (p,))
        state[p] = "done"
        order.append(p)

    for p in PACKAGES:
        visit(p, ())
    assert order.index("ir") < order.index("tu_ops") < order.index("visa") < order.index("backends")
    assert order.index("backends") < order.index("npu_opt") < order.index("driver")


def test_each_exception_is_still_needed():
    """An ALLOWED edge that no module takes any more is removed from the list."""
    taken = {(module, name) for module, names in modules().items() for name in names}
    assert sorted(set(ALLOWED) - taken) == []


def test_the_shim_is_the_only_way_from_npu_opt_to_the_command_line():
    edges = sorted((module, name) for module, names in modules().items() if _within(module, "npu_opt")
                   for name in names if _within(name, "driver"))
    assert edges == sorted(ALLOWED)


def test_the_checker_sees_function_level_and_relative_imports(tmp_path):
    pkg = tmp_path / "visa" / "interp"
    pkg.mkdir(parents=True)
    (pkg / "x.py").write_text("def f():\n    from ir.rules import fetch\n    from .walker import run\n")
    global ROOT
    saved, ROOT = ROOT, tmp_path
    try:
        names = _imports(pkg / "x.py")
    finally:
        ROOT = saved
    assert "ir.rules.fetch" in names and "visa.interp.walker.run" in names


def test_importing_the_interpreter_loads_only_what_it_executes():
    import subprocess
    import sys

    probe = ("import sys, visa.interp; print(' '.join(sorted(m for m in sys.modules if m.split('.')[0] in "
             "('driver', 'npu_opt', 'backends') or m.startswith(('ir.ops', 'ir.kernel', 'ir.rules', 'tu_ops.lower', "
             "'visa.verify', 'visa.relower')))))")
    out = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, check=True)
    assert out.stdout.split() == []
    assert "visa.interp.walker" in subprocess.run(
        [sys.executable, "-c", "import sys, visa.interp; print(sorted(sys.modules))"],
        cwd=ROOT, capture_output=True, text=True, check=True).stdout


# The language server (driver/lsp, docs/editor.md): the protocol libraries of the `lsp` extra are
# imported by its server-side modules only; the worker process that runs the user's kernel
# files (driver.lsp.worker, driver.lsp.facts) never loads them, and the rest of the command
# line reaches the server through `npu-opt lsp` alone.
LSP_PROTOCOL_MODULES = {"driver.lsp.server", "driver.lsp.features", "driver.lsp.editing", "driver.lsp.transport"}


def test_only_the_language_server_imports_the_protocol_libraries():
    users = {module for module, names in modules().items()
             if any(_within(name, lib) for name in names for lib in ("pygls", "lsprotocol"))}
    assert users == LSP_PROTOCOL_MODULES


def test_only_the_lsp_command_imports_the_language_server():
    importers = sorted(f"{module} imports {name}" for module, names in modules().items()
                       if not _within(module, "driver.lsp") for name in names if _within(name, "driver.lsp"))
    assert importers == ["driver.cli_parser imports driver.lsp.server", "driver.cli_parser imports driver.lsp.server.serve",
                         "driver.cli_parser imports driver.lsp.supervisor",
                         "driver.cli_parser imports driver.lsp.supervisor.Limits",
                         "driver.cli_parser imports driver.lsp.supervisor.Worker"]


def test_the_checking_worker_loads_no_protocol_library():
    import subprocess
    import sys

    probe = ("import sys, driver.lsp.worker; print(' '.join(sorted(m for m in sys.modules if m.split('.')[0] in "
             "('pygls', 'lsprotocol', 'cattrs') or m in ('driver.lsp.server', 'driver.lsp.features'))))")
    out = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, check=True)
    assert out.stdout.split() == []


# The interpreter's plain modules are its spec (visa/interp/__init__.py): they import nothing
# from its speed machinery, visa/interp/fast/, whose shortcuts register themselves on the hooks
# of visa/interp/shortcuts.py. The package's __init__ loads fast/ (so its shortcuts register).
# NOT_YET_APART lists the plain modules that still import a held-stream form or a fast kernel
# from fast/ (issue 59 item 3, in progress): the list only shrinks.
NOT_YET_APART = {
    "visa.interp.contract": "the compiled float contraction, the row split and halves, Repeated operands",
    "visa.interp.dm": "pooled DM rows (split out of visa.interp.memory, same imports)",
    "visa.interp.drain": "a commit of a Front stream",
    "visa.interp.feed": "a feed delivering a Repeated or a Front stream",
    "visa.interp.memory": "pooled stores and the copy notes a Memory holds",
    "visa.interp.vector": "front-lane passes",
    "visa.interp.vector_branch": "front-lane passes",
    "visa.interp.vrf": "a VRF load of a Front stream",
}


def test_the_plain_interpreter_imports_nothing_from_fast():
    importers = {module for module, names in modules().items()
                 if _within(module, "visa.interp") and not _within(module, "visa.interp.fast")
                 and module != "visa.interp" and any(_within(name, "visa.interp.fast") for name in names)}
    assert importers == set(NOT_YET_APART)


def test_the_fast_modules_register_on_the_plain_hooks():
    """Every hook a plain module asks for (`shortcut("name")`, `per_record`) is one a module of
    fast/ registers, and every registered one is asked for: no shortcut is dead or missing."""
    import re

    asked = {m.group(1) for path in (ROOT / "visa" / "interp").glob("*.py")
             for m in re.finditer(r'shortcut\("([a-z_]+)"\)', path.read_text(encoding="utf-8"))}
    asked |= {"per_record"}  # shortcuts.per_record asks for its memo
    registered = {m.group(1) for path in (ROOT / "visa" / "interp" / "fast").glob("*.py")
                  for m in re.finditer(r'@register\("([a-z_]+)"\)', path.read_text(encoding="utf-8"))}
    assert asked == registered


def test_every_list_of_npu_opts_own_packages_is_the_one_list():
    """ir.location.OWN_PACKAGES is the list; the two modules that import nothing of npu-opt's
    spell it out, and this holds them equal to it and to this file's PACKAGES (a package
    missing from one of them was re-imported per kernel file as if it were the user's)."""
    from driver import crash_guard, fingerprint
    from ir.location import OWN_PACKAGES

    assert set(PACKAGES) == OWN_PACKAGES == set(fingerprint._PACKAGES)
    assert {Path(p).name for p in crash_guard._OURS} == OWN_PACKAGES
