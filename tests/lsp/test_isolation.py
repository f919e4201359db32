"""Issue 55 (2, 3, 4): every check starts from a clean npu-opt state, a long line costs no
more than a short one, and a document cannot end the server."""

from __future__ import annotations

import pytest

from tests.lsp import kernels as K
from tests.lsp.helpers import change, hover_text, open_doc, position, settle
from tests.optional_deps import Deferred

lsp = Deferred("lsprotocol.types")  # imported by the worker that runs these tests, not at collection

FETCH_I8 = "`Stream[i8; 1, 1 # 2, 1 # 256; N / 16, N % 16]`"


def _fetch_hover(client, uri: str, text: str) -> str:
    at = position(text, ".fetch(", after=2)
    return hover_text(client, uri, at.line, at.character)


def test_a_line_typed_then_deleted_leaves_no_trace(client, folder):
    patched = "import npu_opt\nnpu_opt.i8 = npu_opt.i32\n" + K.HALF_FLIT  # the line typed
    uri = open_doc(client, folder / "typed_then_deleted.py", K.HALF_FLIT)
    assert FETCH_I8 in _fetch_hover(client, uri, K.HALF_FLIT)
    change(client, uri, patched, 2)
    assert "Stream[i32;" in _fetch_hover(client, uri, patched)  # the patch is the file's own, while it is there
    change(client, uri, K.HALF_FLIT, 3)  # the line deleted again
    assert FETCH_I8 in _fetch_hover(client, uri, K.HALF_FLIT)


def test_a_patch_in_one_document_changes_no_other(client, folder):
    patch = open_doc(client, folder / "the_patch.py", K.PATCHES_NPU_OPT)
    assert settle(client, patch) == []
    other = open_doc(client, folder / "the_other.py", K.HALF_FLIT)
    diagnostics = settle(client, other)
    assert [d.code for d in diagnostics] == ["COLLECT-2"]
    assert any(r.message == "note: packet is 16 x i8 = 16 bytes" for r in diagnostics[0].related_information)
    assert FETCH_I8 in _fetch_hover(client, other, K.HALF_FLIT)


def test_completion_after_a_100_kb_line_answers_and_the_server_goes_on(client, folder):
    text = K.after_long_line(100_000)
    uri = open_doc(client, folder / "long_line.py", text)
    at = position(text, "LaneMode.\n", after=len("LaneMode."))
    found = client.text_document_completion(
        lsp.CompletionParams(lsp.TextDocumentIdentifier(uri), at), timeout=30)  # a hang fails, not a slow answer
    assert "INTERLEAVED" in {i.label for i in found.items}
    at = position(text, 'blob = "', after=200)
    assert client.text_document_signature_help(
        lsp.SignatureHelpParams(lsp.TextDocumentIdentifier(uri), at), timeout=30) is None
    other = open_doc(client, folder / "after_long_line.py", K.HALF_FLIT)
    assert [d.code for d in settle(client, other)] == ["COLLECT-2"]


@pytest.mark.parametrize("source", [K.KILLS_PARENT, K.KILLS_GROUP], ids=["parent", "group"])
def test_a_document_cannot_end_the_server(client, folder, source):
    name = "kills_parent.py" if source is K.KILLS_PARENT else "kills_group.py"
    uri = open_doc(client, folder / name, source)
    settle(client, uri)
    other = open_doc(client, folder / f"after_{name}", K.HALF_FLIT)
    assert [d.code for d in settle(client, other)] == ["COLLECT-2"]
