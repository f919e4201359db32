"""Writes out the Vector Engine's stream stage classes as plain class statements, so that a
reader, an IDE or a type checker finds `VectorFxpI32Stream` and what it offers.

The declaration stays the one source: the method tables and the stage order, read by the
`declare_*` functions (`npu_opt.vector_stages.declare_class`, ...). The written-out modules
are checked in; `python -m npu_opt.gen_stage_classes` rewrites them, `--check` only says
which are stale (tests/npu_opt/test_stage_classes.py fails on a stale one). At import each


class is held to its declaration (`npu_opt.stagebase.adopt`), so a unit declared after the
modules were written is offered all the same.
"""

from __future__ import annotations

import argparse
import re
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import Any

import attrs

from ir.vector.stages import VeStage
from npu_opt import vector_pair, vector_stages
from npu_opt.vector_unit_methods import UNIT_BODIES

__all__ = ["render", "main", "OUTPUTS"]

ROOT = Path(__file__).resolve().parent.parent

# the modules a method body may come from, and the name a written-out module imports each as
ALIASES = {
    "npu_opt.vector_stages": "vs",
    "npu_opt.vector_chain_methods": "chain",
    "npu_opt.vector_reduce": "vreduce",
    "npu_opt.vector_stash": "stash",
    "npu_opt.vector_unit_methods": "units",
    "npu_opt.vector_pair": "vp",
    "npu_opt.vector_pair_ternary": "ternary",
    "npu_opt.vector_stage_classes": "vsc",  # not bodies: the base classes of the InterFirst ones
    "npu_opt.vector_pass": "vpass",  # not bodies: the tables and the chain's base class
}


@attrs.frozen
class Family:
    """Classes of one table: the keys, the declaration, and how the module spells them."""

    table: str  # the table the module fills, as written there
    base: str  # the base class, as written there; with a twin, the module its classes are in
    keys: tuple[tuple[Any, ...], ...]
    declare: Callable[..., tuple[str, str, dict[str, Any]]]
    twin: Family | None = None  # the family whose class of the same key each class extends

    def base_text(self, key: tuple[Any, ...]) -> str:
        return self.base if self.twin is None else f"{self.base}.{self.twin.declare(*key)[0]}"

    def key_text(self, key: tuple[Any, ...]) -> str:
        return "(" + ", ".join(_literal(k) for k in key) + ")"

    def declare_text(self) -> str:
        return f"{ALIASES[self.declare.__module__]}.{self.declare.__name__}"


def _literal(value: Any) -> str:
    if isinstance(value, VeStage):
        return f"S.{value.name}"
    return f'"{value}"' if isinstance(value, str) else repr(value)


_CHAIN_KEYS = tuple((stage, scalar) for stage in vector_stages.CHAIN_STAGES for scalar in vector_stages.SCALARS)
VECTOR = Family("vpass.VECTOR_STAGE_CLASSES", "vpass.VectorStream", _CHAIN_KEYS, vector_stages.declare_class)
INTER_FIRST = Family("vpass.INTER_FIRST_CLASSES", "vsc", _CHAIN_KEYS, vector_stages.declare_inter_first_class, VECTOR)
AFTER_INTER = Family("vpass.AFTER_INTER_CLASSES", "vpass.VectorStream",
                     tuple((scalar, first) for scalar in vector_stages.SCALARS for first in (True, False)),
                     vector_stages.declare_after_class)
PAIR = Family("vpass.PAIR_STAGE_CLASSES", "vp.PairStream",
              tuple((stage, scalar) for stage in vector_pair.PAIR_STAGES for scalar in vector_stages.SCALARS),
              vector_pair.declare_class)

# module path -> (what its docstring says it holds, its families)
OUTPUTS: dict[str, tuple[str, tuple[Family, ...]]] = {
    "npu_opt/vector_stage_classes.py": (
        "The Vector Engine's stage objects of the intra-slice chain, one class per (stage, scalar)", (VECTOR,)),
    "npu_opt/vector_inter_first_classes.py": (
        "The Vector Engine's stage objects after an inter-slice reduce: right after it, one class per (scalar, "
        "order), and those of the intra-slice chain after an InterFirst one", (AFTER_INTER, INTER_FIRST)),
    "npu_opt/vector_pair_classes.py": (
        "The Vector Engine's pair stage objects (pair mode), one class per (stage, scalar)", (PAIR,)),
}


def _body_text(fn: Any) -> str:
    """How a written-out module names a method body: `alias.name`, or a unit's entry."""
    module = sys.modules[fn.__module__]
    alias = ALIASES.get(fn.__module__)
    if alias is None:
        raise LookupError(f"{fn.__module__} holds a stage method body: give it an alias in ALIASES")
    name = next((k for k, v in vars(module).items() if v is fn and not k.startswith("__")), None)
    if name is not None:
        return f"{alias}.{name}"
    unit = next((k for k, v in UNIT_BODIES.items() if v is fn), None)
    if unit is not None:
        return f'{alias}.UNIT_BODIES["{unit}"]'
    raise LookupError(f"{fn.__module__}.{fn.__qualname__} has no module-level name: bind it to one")


def _class_text(name: str, base: str, doc: str, methods: dict[str, Any]) -> str:
    lines = textwrap.wrap(doc, 108, break_on_hyphens=False)
    doc_text = f'"""{lines[0]}"""' if len(lines) == 1 else '"""' + "\n    ".join(lines) + '\n    """'
    body = "".join(f"    {attr} = {_body_text(fn)}\n" for attr, fn in methods.items())
    return f"class {name}({base}):\n    {doc_text}\n" + (f"\n{body}" if body else "")


def _imports(text: str, keys_have_stages: bool) -> str:
    """The import lines of a module whose code is `text`: the aliases it names (`alias.` after a
    space, `(` or `[`), `S` when its keys name stages."""
    used = {module for module, alias in ALIASES.items() if re.search(rf"[ (\[]{alias}\.", text)}
    lines = ["from ir.vector.stages import VeStage as S\n"] if keys_have_stages else []
    lines += [f"from npu_opt import {module.split('.')[1]} as {ALIASES[module]}\n" for module in sorted(used)]
    return "".join(lines) + "from npu_opt.stagebase import adopt\n"


def render(path: str) -> str:
    """The text of the written-out module at `path` (a key of OUTPUTS)."""
    what, families = OUTPUTS[path]
    classes, tables, names = [], [], []
    for family in families:
        entries = []
        for key in family.keys:
            name, doc, methods = family.declare(*key)
            classes.append(_class_text(name, family.base_text(key), doc, methods))
            entries.append(f"    {family.key_text(key)}: {name},\n")
            names.append(name)
        tables.append(f"adopt({family.table}, {{\n{''.join(entries)}}}, {family.declare_text()})\n")
    text = "\n\n".join(classes) + "\n\n" + "".join(tables)
    stages = any(isinstance(k, VeStage) for family in families for key in family.keys for k in key)
    sources = ", ".join(f"`{f.declare.__module__}.{f.declare.__name__}`" for f in families)
    all_text = textwrap.fill(", ".join(f'"{n}"' for n in names), 112, initial_indent="__all__ = [",
                             subsequent_indent="           ", break_on_hyphens=False)
    doc = "\n\n".join(textwrap.fill(paragraph, 112, break_on_hyphens=False) for paragraph in (
        f"Generated by `python -m npu_opt.gen_stage_classes` (do not edit) from {sources}.", f"{what}."))
    header = (f'"""{doc}\n"""'
              f"\n\nfrom __future__ import annotations\n\n{_imports(text, stages)}\n{all_text}]\n\n\n")
    return header + text


def _current(path: str) -> str | None:
    file = ROOT / path
    return file.read_text(encoding="utf-8") if file.exists() else None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m npu_opt.gen_stage_classes", description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="write nothing; exit 1 if a module is stale")
    args = parser.parse_args(argv)
    stale = [path for path in OUTPUTS if _current(path) != render(path)]
    if args.check:
        for path in stale:
            print(f"stale: {path}")
        return 1 if stale else 0
    for path in stale:
        (ROOT / path).write_text(render(path), encoding="utf-8")
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
