"""The shape of the source: lines, modules, import cycles and in-function imports.

Counts, over the non-test modules of the six packages (driver, npu_opt, ir, tu_ops, visa,
backends):
- source lines (every line of every .py file) and module count;
- module cycles: the strongly connected components of more than one module in the graph of
  every import, the function-level ones included (an import under `if TYPE_CHECKING:` is
  not an import at run time and is left out); printed with the modules each holds;
- in-function imports: import statements inside a function, method or lambda.
`from a import b` counts as an edge to `a.b` when `a.b` is a module, else to `a`.
Run: python benchmarks/module_graph.py [--cycles] [ROOT]
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

PACKAGES = ("driver", "npu_opt", "synth", "ir", "tu_ops", "visa", "backends")


def _module_name(root: Path, path: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _is_type_checking(node: ast.AST) -> bool:
    test = getattr(node, "test", None) if isinstance(node, ast.If) else None
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def scan(root: Path) -> dict:
    """{'lines', 'modules', 'edges': {module: set}, 'inner': [(module, target, line)]}."""
    paths = {_module_name(root, p): p for pkg in PACKAGES for p in sorted((root / pkg).rglob("*.py"))}
    edges: dict[str, set[str]] = {m: set() for m in paths}
    inner: list[tuple[str, str, int]] = []
    lines = 0
    for name, path in paths.items():
        text = path.read_text(encoding="utf-8")
        lines += text.count("\n")
        package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]

        def targets(node: ast.AST) -> list[str]:
            if isinstance(node, ast.Import):
                return [a.name for a in node.names]
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            return [f"{base}.{a.name}" if f"{base}.{a.name}" in paths else base for a in node.names]

        def visit(node: ast.AST, in_function: bool) -> None:
            for child in ast.iter_child_nodes(node):
                if _is_type_checking(child):
                    continue
                if isinstance(child, (ast.Import, ast.ImportFrom)):
                    for target in targets(child):
                        while target and target not in paths:  # `import a.b.c` of a name: its module
                            target = target.rpartition(".")[0]
                        if target and target != name:
                            edges[name].add(target)
                    if in_function:
                        inner.append((name, ast.unparse(child), child.lineno))
                visit(child, in_function or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)))

        visit(ast.parse(text, filename=str(path)), False)
    return {"lines": lines, "modules": len(paths), "edges": edges, "inner": inner}


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []
    for start in sorted(edges):
        if start in index:
            continue
        work = [(start, iter(sorted(edges[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on.add(start)
        while work:
            node, it = work[-1]
            for nxt in it:
                if nxt not in index:
                    index[nxt] = low[nxt] = len(index)
                    stack.append(nxt)
                    on.add(nxt)
                    work.append((nxt, iter(sorted(edges[nxt]))))
                    break
                if nxt in on:
                    low[node] = min(low[node], index[nxt])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    comp = []
                    while True:
                        m = stack.pop()
                        on.discard(m)
                        comp.append(m)
                        if m == node:
                            break
                    if len(comp) > 1:
                        out.append(sorted(comp))
    return sorted(out)


def main(argv: list[str]) -> None:
    show = "--cycles" in argv
    args = [a for a in argv if not a.startswith("--")]
    root = Path(args[0]) if args else Path(__file__).resolve().parents[1]
    facts = scan(root)
    found = cycles(facts["edges"])
    print(f"source lines (non-test .py)     {facts['lines']}")
    print(f"modules                         {facts['modules']}")
    print(f"module cycles (function-level imports counted)  {len(found)} "
          f"({sum(map(len, found))} modules)")
    print(f"in-function imports             {len(facts['inner'])}")
    if show:
        for comp in found:
            print(f"  cycle of {len(comp)}: {' '.join(comp)}")


if __name__ == "__main__":
    main(sys.argv[1:])
