"""`--format json` of `check` and `compile`: one JSON object per line.

Schema (stable): an input that could not be loaded is
`{"kind": "error", "file", "line", "col", "code", "message"}`; each kernel is
`{"kind": "kernel", "name", "file", "status", "code", "diagnostics": [...]}` with
`status` ok / refused / ice, `code` the first error's code (null when ok) and every
diagnostic (warnings too) as the objects of a `.fail` file; the last line is
`{"kind": "summary", "kernels", "ok", "refused", "ice", "input_errors", "exit"}`.
"""

from __future__ import annotations

import json
from collections import Counter
from typing import Any, TextIO

__all__ = ["SCHEMA_HELP", "error_record", "kernel_record", "summary_record"]

SCHEMA_HELP = ("json: one object per line: {kind: error|kernel|summary, ...}; a kernel line has name, file, "
               "status, code and diagnostics; the summary has the counts and the exit status")


def error_record(error: Any, out: TextIO) -> None:
    print(json.dumps({"kind": "error", "file": error.file, "line": error.line, "col": error.col,
                      "code": error.code, "message": error.message}, ensure_ascii=False), file=out)


def kernel_record(name: str, file: str, status: str, diagnostics: Any, out: TextIO) -> None:
    errors = [d for d in diagnostics if d.severity == "error"]
    print(json.dumps({"kind": "kernel", "name": name, "file": file, "status": status,
                      "code": errors[0].code if errors else None,
                      "diagnostics": [d.to_json() for d in diagnostics]}, ensure_ascii=False), file=out)


def summary_record(counts: Counter, input_errors: int, status: int, out: TextIO) -> None:
    print(json.dumps({"kind": "summary", "kernels": sum(counts.values()), "ok": counts["ok"],
                      "refused": counts["refused"], "ice": counts["ice"], "input_errors": input_errors,
                      "exit": status}), file=out)
