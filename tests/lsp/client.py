"""A synchronous LSP client for the language-server tests: `npu-opt lsp` over stdio, the
messages built and read with lsprotocol's types and converter.

The tests used pytest-lsp's asynchronous client, which brings pytest-asyncio into the
`test` extra, and pytest-asyncio warns in every project that leaves its loop-scope option
unset: a kernel author who installed the extra saw that warning open their own test runs
(issue 58 item 4). A request here blocks until its response (or fails the test after a
timeout); notifications go out at once; what the server publishes is kept by document.
"""

from __future__ import annotations

import json
import os
import subprocess
import threading
from functools import cache
from pathlib import Path
from typing import Any

from tests.optional_deps import Deferred

lsp = Deferred("lsprotocol.types")  # imported by the worker that runs these tests, not at collection

__all__ = ["Client"]

TIMEOUT = 60.0  # seconds a request may wait for its response before the test fails


@cache
def _converter():
    """lsprotocol's converter, made at the first message (not when the tests are collected)."""
    from lsprotocol.converters import get_converter

    return get_converter()


class Client:
    """`command` (the server) over pipes: `diagnostics` holds each document's last published
    ones; `shown` the `window/showMessage` texts; the server's own requests are answered null."""

    def __init__(self, command: list[str], cwd: Path, env: dict[str, str] | None = None) -> None:
        self.proc = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.DEVNULL, cwd=cwd, env=env or dict(os.environ))
        self.diagnostics: dict[str, list[lsp.Diagnostic]] = {}
        self.shown: list[str] = []
        self._responses: dict[int, dict[str, Any]] = {}
        self._next = 0
        self._closed = False
        self._arrived = threading.Condition()
        self._write_lock = threading.Lock()
        threading.Thread(target=self._read, daemon=True).start()

    # --- the wire -------------------------------------------------------------------------
    def _write(self, message: dict[str, Any]) -> None:
        body = json.dumps({"jsonrpc": "2.0", **message}).encode()
        with self._write_lock:
            assert self.proc.stdin is not None
            self.proc.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
            self.proc.stdin.flush()

    def _frame(self) -> dict[str, Any] | None:
        out, length = self.proc.stdout, None
        assert out is not None
        while True:
            line = out.readline()
            if not line:
                return None
            if line in (b"\r\n", b"\n"):
                break
            if line.lower().startswith(b"content-length:"):
                length = int(line.split(b":")[1])
        return json.loads(out.read(length or 0))

    def _read(self) -> None:
        while True:
            message = self._frame()
            if message is None:
                with self._arrived:
                    self._closed = True
                    self._arrived.notify_all()
                return
            method = message.get("method")
            if method is not None and "id" in message:  # the server's request (a progress token): accepted
                self._write({"id": message["id"], "result": None})
            elif method == "textDocument/publishDiagnostics":
                params = _converter().structure(message["params"], lsp.PublishDiagnosticsParams)
                with self._arrived:
                    self.diagnostics[params.uri] = list(params.diagnostics)
            elif method == "window/showMessage":
                self.shown.append(message["params"]["message"])
            elif method is None:
                with self._arrived:
                    self._responses[message.get("id")] = message
                    self._arrived.notify_all()

    def request(self, method: str, params: Any, timeout: float = TIMEOUT) -> Any:
        """Send request `method` and return its result as lsprotocol's response type has it."""
        with self._arrived:
            self._next += 1
            msg_id = self._next
        self._write({"id": msg_id, "method": method, "params": _converter().unstructure(params)})
        with self._arrived:
            if not self._arrived.wait_for(lambda: msg_id in self._responses or self._closed, timeout):
                raise TimeoutError(f"no response to {method} within {timeout:g} s")
            assert msg_id in self._responses, f"the server closed its output before answering {method}"
            message = self._responses.pop(msg_id)
        assert "error" not in message, message["error"]
        response = lsp.METHOD_TO_TYPES[method][1]
        return _converter().structure({"jsonrpc": "2.0", "id": msg_id, "result": message.get("result")},
                                      response).result

    def notify(self, method: str, params: Any) -> None:
        self._write({"method": method, "params": _converter().unstructure(params)})

    # --- the session ----------------------------------------------------------------------
    def initialize_session(self, params: lsp.InitializeParams) -> lsp.InitializeResult:
        result = self.request(lsp.INITIALIZE, params)
        self.notify(lsp.INITIALIZED, lsp.InitializedParams())
        return result

    def shutdown_session(self) -> int:
        """Shutdown, exit, and the server's exit status."""
        self.request(lsp.SHUTDOWN, None)
        self._write({"method": lsp.EXIT})
        return self.proc.wait(timeout=TIMEOUT)

    # --- what the tests send --------------------------------------------------------------
    def text_document_did_open(self, params: lsp.DidOpenTextDocumentParams) -> None:
        self.notify(lsp.TEXT_DOCUMENT_DID_OPEN, params)

    def text_document_did_change(self, params: lsp.DidChangeTextDocumentParams) -> None:
        self.notify(lsp.TEXT_DOCUMENT_DID_CHANGE, params)

    def text_document_did_save(self, params: lsp.DidSaveTextDocumentParams) -> None:
        self.notify(lsp.TEXT_DOCUMENT_DID_SAVE, params)

    def text_document_did_close(self, params: lsp.DidCloseTextDocumentParams) -> None:
        self.notify(lsp.TEXT_DOCUMENT_DID_CLOSE, params)

    def workspace_did_change_configuration(self, params: lsp.DidChangeConfigurationParams) -> None:
        self.notify(lsp.WORKSPACE_DID_CHANGE_CONFIGURATION, params)

    def text_document_hover(self, params: lsp.HoverParams, timeout: float = TIMEOUT) -> lsp.Hover | None:
        return self.request(lsp.TEXT_DOCUMENT_HOVER, params, timeout)

    def text_document_completion(self, params: lsp.CompletionParams, timeout: float = TIMEOUT) -> Any:
        return self.request(lsp.TEXT_DOCUMENT_COMPLETION, params, timeout)

    def text_document_signature_help(self, params: lsp.SignatureHelpParams,
                                     timeout: float = TIMEOUT) -> lsp.SignatureHelp | None:
        return self.request(lsp.TEXT_DOCUMENT_SIGNATURE_HELP, params, timeout)

    def text_document_inlay_hint(self, params: lsp.InlayHintParams, timeout: float = TIMEOUT) -> Any:
        return self.request(lsp.TEXT_DOCUMENT_INLAY_HINT, params, timeout)

    def text_document_code_action(self, params: lsp.CodeActionParams, timeout: float = TIMEOUT) -> Any:
        return self.request(lsp.TEXT_DOCUMENT_CODE_ACTION, params, timeout)
