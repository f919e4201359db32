"""Golden text files: the one place a test compares a listing with its checked-in copy.

A test that pins a set of names (the methods each stage class offers, the layers each
traced op has code in) renders the set as sorted text lines and calls
`assert_golden(name, lines)`; the expected text is `tests/golden/<name>.txt`. On a
difference the test fails with a unified diff (a name that appeared is a `+` line, one that
disappeared a `-` line). To accept a change, rewrite the files and review their diff:

    python -m pytest --update-golden tests/npu_opt/test_stage_classes.py tests/test_declarations.py

(`NPU_OPT_UPDATE_GOLDEN=1` in the environment does the same). docs/testing.md, "Golden files".
"""

from __future__ import annotations

import difflib
import os
from collections.abc import Iterable
from pathlib import Path

HERE = Path(__file__).resolve().parent
UPDATE = {"on": os.environ.get("NPU_OPT_UPDATE_GOLDEN") == "1"}  # tests/conftest.py sets it for --update-golden
COMMAND = "python -m pytest --update-golden TEST_FILE"

__all__ = ["assert_golden", "golden_path"]


def golden_path(name: str) -> Path:
    return HERE / f"{name}.txt"


def assert_golden(name: str, lines: Iterable[str]) -> None:
    """`lines` are the golden file `name`'s lines, or (update mode) become them."""
    text = "".join(f"{line}\n" for line in lines)
    path = golden_path(name)
    if UPDATE["on"]:
        path.write_text(text, encoding="utf-8")
        return
    old = path.read_text(encoding="utf-8") if path.is_file() else ""
    if old != text:
        diff = "".join(difflib.unified_diff(old.splitlines(True), text.splitlines(True),
                                            f"tests/golden/{name}.txt (checked in)", "this run"))
        raise AssertionError(f"tests/golden/{name}.txt differs (rewrite with `{COMMAND}` and review):\n{diff}")
