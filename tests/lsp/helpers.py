"""Client-side steps the language-server tests share."""

from __future__ import annotations

import io
import json
from pathlib import Path

from tests.lsp.client import Client
from tests.optional_deps import Deferred

lsp = Deferred("lsprotocol.types")  # imported by the worker that runs these tests, not at collection


def open_doc(client: Client, path: Path, text: str, version: int = 1) -> str:
    uri = path.as_uri()
    client.text_document_did_open(lsp.DidOpenTextDocumentParams(
        lsp.TextDocumentItem(uri=uri, language_id="python", version=version, text=text)))
    return uri


def change(client: Client, uri: str, text: str, version: int) -> None:
    """Replace the whole buffer (the client's edit, not saved)."""
    client.text_document_did_change(lsp.DidChangeTextDocumentParams(
        lsp.VersionedTextDocumentIdentifier(uri=uri, version=version),
        [lsp.TextDocumentContentChangeWholeDocument(text=text)]))


def settle(client: Client, uri: str) -> list[lsp.Diagnostic]:
    """The document's diagnostics once its pending check is done. The server answers a
    request on a document after publishing that document's diagnostics, so a hover is the
    barrier."""
    client.text_document_hover(lsp.HoverParams(lsp.TextDocumentIdentifier(uri), lsp.Position(0, 0)))
    return list(client.diagnostics.get(uri, []))


def hover_text(client: Client, uri: str, line0: int, char: int) -> str | None:
    found = client.text_document_hover(
        lsp.HoverParams(lsp.TextDocumentIdentifier(uri), lsp.Position(line0, char)))
    return None if found is None else found.contents.value


def position(text: str, needle: str, nth: int = 0, after: int = 0) -> lsp.Position:
    """The 0-based position of the `nth` occurrence of `needle` (plus `after` characters)."""
    index = -1
    for _ in range(nth + 1):
        index = text.index(needle, index + 1)
    index += after
    line0 = text.count("\n", 0, index)
    return lsp.Position(line0, index - (text.rfind("\n", 0, index) + 1))


def check_json(path: Path) -> list[dict]:
    """What `npu-opt check --format json` reports for the file on disk."""
    from driver.check_command import run_check

    out = io.StringIO()
    run_check([str(path)], None, "json", out=out)
    records = [json.loads(line) for line in out.getvalue().splitlines()]
    return [d for r in records if r["kind"] == "kernel" for d in r["diagnostics"]] + \
        [r for r in records if r["kind"] == "error"]
