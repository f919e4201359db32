"""A package's public names, imported on first use (PEP 562) from its `if TYPE_CHECKING:` block.

A package whose `__init__` should stay cheap (`npu_opt`, `tu_ops`, `visa`) lists every
public name once, as a real import inside `if TYPE_CHECKING:` (what IDEs and type checkers
follow), and delegates its module `__getattr__` here:

    if TYPE_CHECKING:
        from tu_ops.base import Alloc, TuOp

    def __getattr__(name: str) -> Any:
        return lazy_export(__name__, name)

On the first unknown attribute the block's `from MODULE import NAME, ...` lines are read
from the package's source (a regular expression, not `ast`: importing `ast` costs more
than the start-up it saves) into a name -> module table; the name's module is then imported
and the value cached on the package, so the next access is a plain attribute.
"""

from __future__ import annotations

import importlib
import re
import sys
from typing import Any

__all__ = ["exports", "lazy_export"]

# The block: `if TYPE_CHECKING:` at column 0 and every following line that is indented or blank.
_BLOCK = re.compile(r"^if TYPE_CHECKING:[^\n]*\n((?:[ \t]+[^\n]*\n|[ \t]*\n)*)", re.MULTILINE)
_FROM = re.compile(r"^[ \t]+from[ \t]+([\w.]+)[ \t]+import[ \t]+(\([^)]*\)|[^\n]*)", re.MULTILINE)
_COMMENT = re.compile(r"#[^\n]*")
_NAME = re.compile(r"[A-Za-z_]\w*\Z")
_TABLES: dict[str, dict[str, str]] = {}


def exports(package: str) -> dict[str, str]:
    """Name -> defining module of every name `package` imports under `if TYPE_CHECKING:`."""
    table = _TABLES.get(package)
    if table is None:
        table = _TABLES[package] = _read_table(package)
    return table


def _read_table(package: str) -> dict[str, str]:
    path = sys.modules[package].__file__
    with open(path, encoding="utf-8") as f:  # the package's own source: the block is the table
        source = _COMMENT.sub("", f.read())
    table: dict[str, str] = {}
    for block in _BLOCK.findall(source):
        for module, names in _FROM.findall(block):
            for name in names.strip("()").replace("\\", " ").split(","):
                name = name.strip()
                if not name:
                    continue
                if not _NAME.match(name):  # `X as Y` or a star: not a table entry
                    raise ImportError(f"{path}: `from {module} import {name}` under TYPE_CHECKING: "
                                      "list plain names only")
                table[name] = module
    return table


def lazy_export(package: str, name: str) -> Any:
    """The value of `package.name`: imported from its module and cached on the package."""
    module = exports(package).get(name)
    if module is None:
        raise AttributeError(f"module {package!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    setattr(sys.modules[package], name, value)
    return value
