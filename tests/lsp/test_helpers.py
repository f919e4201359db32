"""Issue 58.2: a refusal raised in an imported helper is shown at the call in the open
file, with the helper's place as related information, and in the helper's document when
it is open; diagnostic links open without a guide build; hovers on variables and helper
calls show their types."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import urlparse, unquote

import pytest

from tests.lsp import kernels as K
from tests.lsp.helpers import check_json, hover_text, open_doc, position, settle


def _project(folder: Path) -> Path:
    (folder / "helpers_mod.py").write_text(K.HELPER_MODULE)
    path = folder / "uses_helper.py"
    path.write_text(K.USES_HELPER)
    return path


def test_a_refusal_in_a_helper_is_shown_at_the_call_with_the_helper_as_related(client, folder):
    path = _project(folder)
    cli = check_json(path)[0]
    assert (Path(cli["file"]).name, cli["line"], cli["col"]) == ("helpers_mod.py", 9, 14)
    uri = open_doc(client, path, K.USES_HELPER)
    (d,) = settle(client, uri)
    call = position(K.USES_HELPER, "half_flits(ctx")
    assert d.code == "COLLECT-2" and d.message == cli["message"]
    assert (d.range.start.line, d.range.start.character) == (call.line, call.character)
    assert d.range.end.character - d.range.start.character == len("half_flits")
    (raised,) = [r for r in d.related_information if r.location.uri != uri]
    assert raised.location.uri == (folder / "helpers_mod.py").as_uri()
    assert (raised.location.range.start.line + 1, raised.location.range.start.character + 1) == (9, 14)
    assert "helpers_mod.py:9:14" in raised.message


def test_the_helpers_open_document_shows_the_refusal_at_its_line(client, folder):
    path = _project(folder)
    helper_uri = open_doc(client, folder / "helpers_mod.py", K.HELPER_MODULE)
    assert settle(client, helper_uri) == []  # alone, the helper defines no kernel
    uri = open_doc(client, path, K.USES_HELPER)
    settle(client, uri)
    (d,) = settle(client, helper_uri)
    assert d.code == "COLLECT-2" and (d.range.start.line + 1, d.range.start.character + 1) == (9, 14)
    assert any(r.location.uri == uri for r in d.related_information)


def test_a_diagnostic_links_to_a_page_that_exists_without_a_build(folder):
    from tests.lsp.raw import RawServer

    raw = RawServer()
    raw.initialize()  # no guideUrl: the default link
    doc = folder / "link.py"
    doc.write_text(K.HALF_FLIT)
    raw.send({"method": "textDocument/didOpen", "params": {"textDocument": {
        "uri": doc.as_uri(), "languageId": "python", "version": 1, "text": K.HALF_FLIT}}})
    seen = raw.until(lambda m: m.get("method") == "textDocument/publishDiagnostics")
    (d,) = seen[-1]["params"]["diagnostics"]
    href = urlparse(d["codeDescription"]["href"])
    assert href.scheme == "file"
    page = Path(unquote(href.path)).read_text(encoding="utf-8")
    assert "COLLECT-2" in page and "flit" in page
    assert raw.end() == 0


def test_hover_on_a_variable_and_on_a_helper_call_shows_the_type(client, folder):
    (folder / "helpers_mod.py").write_text(K.HELPER_MODULE.replace("16", "32"))  # whole flits: accepted
    text = K.USES_HELPER.replace("16", "32")
    uri = open_doc(client, folder / "uses_helper_ok.py", text)
    assert settle(client, uri) == []
    at = position(text, "d.view()")
    assert "`Dm[i8; 1, 1 # 2, 1 # 256; N]`" in hover_text(client, uri, at.line, at.character)
    stream = "`Stream[i8; 1, 1 # 2, 1 # 256; N / 32, N % 32]`"
    at = position(text, "half_flits(ctx", after=3)
    assert stream in hover_text(client, uri, at.line, at.character)
    at = position(text, "s.commit_trim")
    assert stream in hover_text(client, uri, at.line, at.character)
    at = position(text, "out.to_hbm")
    assert "`Dm[i8; 1, 1 # 2, 1 # 256; N]`" in hover_text(client, uri, at.line, at.character)
