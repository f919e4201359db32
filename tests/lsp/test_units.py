"""The server's pure steps on inputs no shipped kernel reaches end to end: a quick fix that
adds a cast, a warning's severity, positions in a line with non-ASCII text."""

from __future__ import annotations

from driver.lsp.positions import py_col, utf16_col
from tests.optional_deps import Deferred

# lsprotocol (which driver.lsp.editing and .features import) loads in the worker that runs these tests,
# not in every worker collecting them
lsp = Deferred("lsprotocol.types")
editing = Deferred("driver.lsp.editing")
features = Deferred("driver.lsp.features")


def _diag(line0: int, start: int, end: int, help_text: str, code: str = "GATHER-3") -> lsp.Diagnostic:
    return lsp.Diagnostic(range=lsp.Range(lsp.Position(line0, start), lsp.Position(line0, end)), message="m",
                          code=code, source="npu-opt", data={"help": help_text})


def test_a_cast_the_help_writes_is_a_quick_fix():
    lines = ["    s = (stream", "         .sparse_prefix(n)", "         .commit(m(\"N\")))"]
    start = lines[1].index("sparse_prefix")
    diag = _diag(1, start, start + len("sparse_prefix"), "cast it: `.sparse_prefix(n.cast(i32))`")
    (action,) = editing.code_actions([diag], lines, "file:///k.py")
    (edit,) = action.edit.changes["file:///k.py"]
    assert edit.new_text == "sparse_prefix(n.cast(i32))"
    assert (edit.range.start.character, edit.range.end.character) == (start, len(lines[1]))


def test_a_help_with_a_placeholder_is_no_quick_fix():
    lines = ['    y = x.cast(i8, m("A % 32"))']
    start = lines[0].index("cast")
    for advice in ("convert with `.cast(bf16, packet)`", "use `.cast(dtype, ...)`"):
        assert editing.code_actions([_diag(0, start, start + 4, advice, "CAST-1")], lines, "file:///k.py") == []
    fix = editing.code_actions([_diag(0, start, start + 4, 'use `.cast(bf16, m("A % 32"))`', "CAST-1")], lines, "file:///k.py")
    assert [a.edit.changes["file:///k.py"][0].new_text for a in fix] == ['cast(bf16, m("A % 32"))']


def test_a_warning_code_is_a_warning():
    record = {"code": "W-FETCH-1", "message": "w", "line": 1, "col": 1, "length": 3, "severity": "warning",
              "notes": [], "help": None}
    (d,) = features.to_diagnostics({"diagnostics": [record]}, ["abc"], "file:///k.py", "https://g")
    assert d.severity == lsp.DiagnosticSeverity.Warning and d.code_description.href == \
        "https://g/reference/diagnostics/#W-FETCH-1"


def test_columns_count_utf16_units_not_bytes():
    line = 'x = "é😀"; y.fetch()'
    byte_col = line.encode().index(b"fetch")
    assert utf16_col(line, byte_col) == len(line[:line.index("fetch")].encode("utf-16-le")) // 2
    assert py_col(line, utf16_col(line, byte_col)) == byte_col
