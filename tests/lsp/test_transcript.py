"""The recorded session of docs/editor.md is what the server answers today.

The page's demo kernel (its `# file: editor_demo.py` block) is opened in the real server;
its diagnostics, quick fix, hovers and inlay hints, written out as the page shows them,
must equal the `text` block after `<!-- lsp-transcript -->`. Run with
NPU_OPT_WRITE_TRANSCRIPT=1 to write the block after a deliberate change (then read the diff).
"""

from __future__ import annotations

import os
import re

import pytest

from tests.lsp.conftest import ROOT
from tests.lsp.helpers import hover_text, open_doc, position, settle
from tests.optional_deps import Deferred

lsp = Deferred("lsprotocol.types")  # imported by the worker that runs these tests, not at collection

PAGE = ROOT / "docs" / "editor.md"
MARKER = "<!-- lsp-transcript -->\n```text\n"
GUIDE = "https://guide.example/npu-opt"  # tests/lsp/conftest.py's guideUrl, shown as GUIDE
HOVERS = (("fetch", '.fetch(', 1), ('m("N / 16")', 'm("N / 16")', 0), ('HbmTensor[i8, Chip, m("N")]', "HbmTensor[", 0),
          ("COLLECT-2", "COLLECT-2", 0))


def _demo() -> str:
    text = PAGE.read_text(encoding="utf-8")
    body = re.search(r"```python\n# file: editor_demo\.py\n(.*?)```", text, re.DOTALL).group(1)
    return body


def _recorded() -> str:
    text = PAGE.read_text(encoding="utf-8")
    start = text.index(MARKER) + len(MARKER)
    return text[start:text.index("```", start)]


def _session(client, uri: str, source: str) -> str:
    out = []
    diagnostics = settle(client, uri)
    for d in diagnostics:
        r = d.range
        severity = {lsp.DiagnosticSeverity.Error: "error", lsp.DiagnosticSeverity.Warning: "warning"}[d.severity]
        out.append(f"diagnostic {r.start.line + 1}:{r.start.character + 1}-{r.end.line + 1}:{r.end.character + 1} "
                   f"{severity} {d.code}: {d.message}")
        out.append(f"  link: {d.code_description.href.replace(GUIDE, 'GUIDE')}")
        out += [f"  {info.message}" for info in d.related_information or []]
        actions = client.text_document_code_action(lsp.CodeActionParams(
            lsp.TextDocumentIdentifier(uri), r, lsp.CodeActionContext(diagnostics=[d])))
        out += [f"quick fix: {a.title}" for a in actions or []]
    for label, needle, after in HOVERS:
        at = position(source, needle, after=after + 1)
        out += ["", f"hover on `{label}` (line {at.line + 1}):", hover_text(client, uri, at.line, at.character)]
    lines = source.split("\n")
    hints = client.text_document_inlay_hint(lsp.InlayHintParams(
        lsp.TextDocumentIdentifier(uri), lsp.Range(lsp.Position(0, 0), lsp.Position(len(lines), 0))))
    out += ["", "inlay hints:"] + [f"  line {h.position.line + 1}: {h.label}" for h in hints]
    return "\n".join(out) + "\n"


def test_the_recorded_session_is_what_the_server_answers(client, folder):
    source = _demo()
    uri = open_doc(client, folder / "editor_demo.py", source)
    session = _session(client, uri, source)
    if os.environ.get("NPU_OPT_WRITE_TRANSCRIPT") == "1":
        text = PAGE.read_text(encoding="utf-8")
        PAGE.write_text(text.replace(MARKER + _recorded(), MARKER + session), encoding="utf-8")
    assert session == _recorded()
