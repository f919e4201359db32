"""Imports inside functions, in the packages of CHECKED.

A module's imports belong at its top, where a reader and an IDE find them. An import
inside a function is kept for one of two reasons only:

- a cycle: the imported module imports this one (directly or through others) at its top,
  so this one cannot import it at its own top. The test finds these itself;
- start-up: the import is deferred so that a command or `import npu_opt` does not load
  what it does not use (tests/npu_opt/test_startup.py). Each such import is listed in
  `START_UP` below with why; an entry no longer needed fails the test.

A third kind is the loader of a package's public names (a function decorated
`@_EXPORTS.loader` in a package's `__init__`, ir/lazy_exports.py): each holds one import,
and tests/test_lazy_exports.py holds them to the package's TYPE_CHECKING block. A stage
method's family loads on first use by a real import in the function that
npu_opt.stagebase.LazyStageMethod calls (tests/npu_opt/test_lazy_stages.py): a START_UP entry.
In npu_opt no function-level import breaks a cycle: the DSL reads downward (issue 59).
"""

from __future__ import annotations

import ast
import functools
from pathlib import Path

from tests import source_tree

ROOT = Path(__file__).resolve().parent.parent
CHECKED = ("npu_opt", "driver", "backends", "visa", "tu_ops", "ir")
ALL_PACKAGES = ("npu_opt", "synth", "driver", "ir", "tu_ops", "visa", "backends")

# (importing module, imported module) -> why the import waits for the call. The start-up
# properties are tests/npu_opt/test_startup.py's.
START_UP: dict[tuple[str, str], str] = {
    # the DSL's entry points: `check` loads npu_opt.compile_api (its ICE reports) and `compile`
    # loads npu_opt.run (through driver.run_command); neither loads more than it runs
    ("npu_opt.compile_api", "backends.npu"): "the lowering: `check` loads this module, never tu_ops",
    ("npu_opt.compile_api", "visa.schedule"): "the makespan model: `check` loads this module, never visa",
    ("npu_opt.run", "backends"): "only a run reaches a backend (`compile` loads this module)",
    ("npu_opt", "ir.vector.units"): "a unit's op enum, asked for by name: `import npu_opt` loads no unit",
    ("npu_opt.scalars", "ml_dtypes"): "an ml_dtypes scalar means it is loaded; `check` must not load it",
    # the command line: a warm `compile` loads driver.cli and driver.replay alone (docs/ci.md,
    # "The cache"), and each other command its own module
    ("driver.cli", "driver.cli_parser"): "argparse: a plain warm `compile` is parsed without it",
    ("driver.cli", "driver.replay"): "the warm replay: `compile` only",
    ("driver.cli_parser", "driver.lsp.server"): "the language server needs the lsp extra (pygls): `npu-opt lsp` only",
    ("driver.cli_parser", "driver.lsp.supervisor"): "the language server's worker, started before the protocol "
                                                     "libraries load: `npu-opt lsp` only",
    ("driver.cli", "driver.compile_command"): "the compiler: a warm `compile` answers without it",
    ("driver.cli", "npu_opt.fault_owner"): "signal: a warm `compile` runs no user code",
    ("driver.cli_parser", "driver.schedule_command"): "a command's module, when that command runs",
    ("driver.cli_parser", "driver.run_command"): "a command's module, when that command runs",
    ("driver.search_parser", "driver.tune_command"): "a command's module, when that command runs",
    ("driver.search_parser", "driver.synth_command"): "a command's module, when that command runs",
    ("driver.tune_exec", "dask.distributed"): "an optional dependency (the tune extra), for --scheduler only",
    ("driver.dask_probe", "dask.distributed"): "an optional dependency (the tune extra): the probe child only, "
                                               "which tune starts after importing dask itself",
    ("driver.tune_cluster", "dask.distributed"): "an optional dependency (the tune extra), for a local cluster only",
    ("driver.tune_share", "distributed"): "an optional dependency (the tune extra): a dask worker's task, which runs "
                                          "where dask is imported already",
    ("driver.cli_parser", "driver.visa_command"): "a command's module, when that command runs",
    ("driver.cli_parser", "driver.targets_command"): "a command's module, when that command runs",
    ("driver.cli_parser", "driver.explain"): "a command's module, when that command runs",
    ("driver.cli_parser", "driver.check_command"): "a command's module, when that command runs",
    ("driver.cli_parser", "driver.mapping_report"): "a command's module, when that command runs",
    ("driver.cli_parser", "ir.mapping.api"): "the mapping parser (lark): `explain-mapping` only",
    ("driver.compile_command", "multiprocessing"): "the worker pool: a one-kernel or --jobs 1 compile runs in process",
    ("driver.compile_command", "concurrent.futures"): "the worker pool, as multiprocessing",
    ("driver.compile_command", "concurrent.futures.process"): "the worker pool, as multiprocessing",
    ("driver.check_command", "multiprocessing"): "the worker pool: a one-kernel or --jobs 1 check runs in process",
    ("driver.check_command", "concurrent.futures"): "the worker pool, as multiprocessing",
    ("driver.cli_parser", "importlib.metadata"): "the installed version, for `--version` only",
    ("driver.fingerprint", "ir.version"): "a warm replay loads no `ir` package; only a stale stat stamp asks",
    ("driver.check_command", "tu_ops.target"): "`check` loads no lowering (tu_ops) unless given --target",
    ("npu_opt.device", "tu_ops.target"): "a target named by a path is read when a kernel is traced for it: `check` loads no tu_ops",
    ("npu_opt.resident", "tu_ops.target"): "a Device's target is read when one is made: `check` loads no tu_ops",
    # a stage method family loads on its first use (npu_opt.stagebase.LazyStageMethod,
    # tests/npu_opt/test_lazy_stages.py): the stream's start does not load every stage class
    ("npu_opt.collect_stages", "npu_opt.vector_engine"): "the Vector Engine's stage classes (~0.1 s): on the first "
                                                          "`vector_init`",
    ("npu_opt.stages", "npu_opt.fetch_lift"): "the fetch lifts and fetch_mask: on their first use",
    ("driver.explain", "npu_opt.device"): "a cached page runs no example: no DSL, numpy or lark",
    ("tu_ops.lower.build", "tu_ops.gather_records"): "a kernel's first gather, scatter or shuffle loads its records",
    ("tu_ops.lower.build", "tu_ops.runtime"): "a kernel's first runtime scalar or guard loads its records",
    ("tu_ops.dma_records", "tu_ops.spm"): "a kernel's first SPM move loads its record class (a GEMM has none)",
    ("driver.explain", "npu_opt.compile_api"): "a cached page runs no example: no compiler",
    ("driver.explain", "tu_ops.target_file"): "a cached page runs no example: no lowering",
    ("driver.explain", "tu_ops.base"): "a cached page runs no example: no lowering",
    # `compile` loads driver.schedule_command, and through it driver.visa_command and
    # driver.run_command, for their exit codes and the manifest's makespan
    ("driver.run_command", "backends.cpu.host"): "`compile` loads this module, never the cpu backend",
    ("driver.schedule_command", "visa"): "the VISA parser: a compile schedules its own parsed artifact",
    ("driver.schedule_command", "visa.schedule.compare"): "`schedule A B` only",
    ("driver.schedule_command", "visa.verify"): "`schedule FILE` verifies what it reads; a compile's artifact is verified",
    ("driver.schedule_command", "visa.schedule.report"): "`schedule` only",
    ("driver.schedule_command", "visa.schedule.trace"): "`schedule --trace` only",
    ("driver.schedule_command", "visa.schedule.page"): "`schedule --html` only",
    ("driver.visa_command", "visa"): "the VISA parser: `compile` loads this module and never parses",
    ("driver.visa_command", "visa.verify"): "the verifier: `visa verify` only",
    ("driver.visa_command", "visa.interp"): "the interpreter: `visa run` only",
    # the backends: numba is optional (the fast extra) and slow to import; a run loads it
    # at its first large float contraction, never before
    ("ir.exact_kernels.compile", "numba"): "optional; loaded by the first large float contraction only",
    ("ir.exact_kernels.tiles", "llvmlite"): "numba's own dependency, loaded with numba only",
    # the lowering: `compile` loads these modules, and so does the interpreter (`visa run`)
    ("tu_ops.lower.errors", "importlib.metadata"): "the installed version, named by an ICE report only",
    # the IR: every command traces, so these modules load with it
    ("ir.dtypes", "ml_dtypes"): "host arrays only: `check` and `compile` must not load ml_dtypes",
    ("npu_opt.annotations", "difflib"): "a refusal's did-you-mean hint only",
    ("npu_opt.fault_owner", "sysconfig"): "where the library lives, asked about an exception only",
    ("ir.lark_cache", "lark"): "a cached explain page reads the cache directory and loads no lark",
    ("ir.mapping.syntax", "lark"): "a kernel whose mapping texts were all parsed before loads no lark",
}

# Modules another branch is editing now (issue #26 reaches them once that work has merged):
# their function-level imports are not checked yet. An entry whose module has none left fails.
LATER: dict[str, str] = {
    "ir.vector.unit_codecs": "ir/vector/, being reworked on another branch",
}


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _is_type_checking(node: ast.AST) -> bool:
    test = getattr(node, "test", None)
    return isinstance(node, ast.If) and (
        (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING")
        or (isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"))


def _targets(node: ast.Import | ast.ImportFrom, known: set[str]) -> list[str]:
    """The modules an import statement loads (`from a import b` is `a.b` when that is a module)."""
    if isinstance(node, ast.Import):
        return [a.name for a in node.names]
    base = node.module or ""
    subs = [f"{base}.{a.name}" for a in node.names if f"{base}.{a.name}" in known]
    return subs or [base]


# Functions whose whole job is to import modules on demand, with why.
LOADING: dict[tuple[str, str], str] = {
    ("driver.compile_command", "_preload"): "the pipeline, imported before forking workers (and only then)",
}
# Modules made of such functions (the generated index): each imports the modules that declare a key.
LOADING_MODULES: dict[str, str] = {
    "tu_ops.lower.declared_index": "the lowering's index (ir/declare.py): a lookup imports one module",
}


def _is_loader(node: ast.AST, module: str) -> bool:
    """A lazy public name's loader (a function decorated `@<table>.loader`), or a LOADING one."""
    return isinstance(node, ast.FunctionDef) and (
        any(isinstance(d, ast.Attribute) and d.attr == "loader" for d in node.decorator_list)
        or (module, node.name) in LOADING or module in LOADING_MODULES)


@functools.cache
def _scan() -> tuple[dict[str, set[str]], list[tuple[str, str, int]], list[tuple[str, str]]]:
    """Top-level imports of every module of the tree, its function-level imports as
    (importer, imported, line), and its lazy names' loaders as (module, function), whose
    imports are neither. Read once per process, by the first test that asks (not at
    collection, which every xdist worker pays)."""
    paths = {_module_name(p): p for pkg in ALL_PACKAGES for p in source_tree.paths(pkg)}
    known = set(paths)
    top: dict[str, set[str]] = {}
    inner: list[tuple[str, str, int]] = []
    loaders: list[tuple[str, str]] = []
    for name, path in paths.items():
        tree = source_tree.tree(path)
        top[name] = set()

        def visit(node: ast.AST, in_function: bool, name: str = name) -> None:
            for child in ast.iter_child_nodes(node):
                if _is_type_checking(child):
                    continue
                if _is_loader(child, name):
                    loaders.append((name, child.name))
                    continue
                if isinstance(child, (ast.Import, ast.ImportFrom)):
                    for target in _targets(child, known):
                        if in_function:
                            inner.append((name, target, child.lineno))
                        else:
                            top[name].add(target)
                visit(child, in_function or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)))

        visit(tree, False)
    return top, inner, loaders


def _top() -> dict[str, set[str]]:
    return _scan()[0]


def _all_inner() -> list[tuple[str, str, int]]:
    return _scan()[1]


def _inner() -> list[tuple[str, str, int]]:
    """The function-level imports that are checked: CHECKED's packages, less LATER's modules."""
    return [i for i in _all_inner() if i[0].split(".")[0] in CHECKED and i[0] not in LATER]


def _loaders() -> list[tuple[str, str]]:
    return _scan()[2]


@functools.cache
def _loads(module: str) -> frozenset[str]:
    """Every module importing `module` loads at once: its top-level imports, transitively,
    with each module's parent packages (once per module: each check of a cycle asks)."""
    seen: set[str] = set()
    todo = [module]
    while todo:
        m = todo.pop()
        parts = m.split(".")
        for k in range(1, len(parts) + 1):
            prefix = ".".join(parts[:k])
            if prefix not in seen:
                seen.add(prefix)
                todo.extend(_top().get(prefix, ()))
    return frozenset(seen)


def _cycle(importer: str, imported: str) -> bool:
    return importer in _loads(imported)


def test_every_function_level_import_breaks_a_cycle_or_is_a_listed_start_up_one():
    bad = sorted(f"{importer}:{line} imports {imported}" for importer, imported, line in _inner()
                 if not _cycle(importer, imported) and (importer, imported) not in START_UP)
    assert bad == []


def test_every_start_up_entry_is_still_needed():
    """An entry whose import went to the top, or that a cycle already explains, is removed."""
    taken = {(importer, imported) for importer, imported, _ in _inner()}
    assert sorted(set(START_UP) - taken) == []
    assert sorted(entry for entry in START_UP if _cycle(*entry)) == []


def test_every_later_module_still_has_function_level_imports():
    assert sorted(set(LATER) - {importer for importer, _, _ in _all_inner()}) == []


def test_the_scan_sees_function_level_imports():
    assert ("driver.cli", "driver.compile_command") in {(a, b) for a, b, _ in _inner()}
    assert _cycle("ir.mapping.nodes", "ir.mapping.cells")  # cells import nodes, nodes call cells
    assert not _cycle("npu_opt.tensors", "npu_opt.dma")  # the tensors are assembled above their operations
    assert not _cycle("driver.cli", "driver.compile_command")


def _dsl_graph() -> dict[str, set[str]]:
    """npu_opt's modules and their imports of one another, function-level ones included."""
    graph = {m: {t for t in targets if t.startswith("npu_opt.")} for m, targets in _top().items()
             if m.startswith("npu_opt.")}
    for importer, imported, _ in _all_inner():
        if importer in graph and imported.startswith("npu_opt."):
            graph[importer].add(imported)
    return graph


def test_the_dsl_imports_no_module_that_imports_it_back():
    """npu_opt reads downward: the tensors' data below the operations on them, those below the
    public tensor classes; the Vector Engine's pass below its stage methods, those below the
    written-out stage classes; the stages below the context, the device and the public API
    (issue 59). So no function-level import there waits for a module that imports its own
    module back, and the DSL's modules form no cycle. (`npu_opt.testing`, loaded by the package
    on first use, is the package's own subpackage: it loads the package, as every submodule
    does, and imports nothing of it.)"""
    bad = sorted(f"{importer}:{line} imports {imported}" for importer, imported, line in _inner()
                 if importer.startswith("npu_opt") and _cycle(importer, imported)
                 and not imported.startswith(importer + "."))
    assert bad == []
    graph = _dsl_graph()

    def reaches(start: str, goal: str) -> bool:
        seen, todo = set(), list(graph.get(start, ()))
        while todo:
            m = todo.pop()
            if m == goal:
                return True
            if m not in seen:
                seen.add(m)
                todo.extend(graph.get(m, ()))
        return False

    assert sorted(f"{a} -> {b}" for a in graph for b in graph[a] if reaches(b, a)) == []


def test_lazy_name_loaders_live_in_package_inits_only():
    assert {module for module, _ in _loaders()} - set(LOADING_MODULES) - {m for m, _ in LOADING} == {
        "npu_opt", "tu_ops", "visa"}
    assert sorted(set(LOADING) - set(_loaders())) == []  # an entry whose function is gone is removed
