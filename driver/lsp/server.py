"""`npu-opt lsp`: the language server (stdio, pygls), docs/editor.md.

The server holds the open documents and answers from each one's last facts
(driver/lsp/facts.py), which its worker process computes on open, on change and on save.
A change after a pause of typing is checked at once; within a burst of changes (each
within `debounceMs` of the one before), `debounceMs` after the last. A check reuses what
the last one found for every kernel an edit left as it was (driver/lsp/reuse.py); opening
and saving a file check it in full, and publish its diagnostics as soon as its kernels
are traced, before the hovers are made. A check that takes
longer than half a second (the first, while the worker starts) shows a work-done
progress notice in clients that support it. It never runs the user's code itself
(driver/lsp/supervisor.py). Settings come from the client's `initializationOptions`
and `workspace/didChangeConfiguration` (`{"npuOpt": {...}}` or the keys themselves):
`inlayHints` (default true), `debounceMs` (200), `timeLimit` (seconds per check, 5),
`memoryLimitMb` (4096) and `guideUrl` (where the guide is served, for the diagnostics'
links; default none: each code links to its explain page as a file, driver/lsp/pages.py).
"""

from __future__ import annotations

import asyncio
import logging
import math
import os
import sys
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

from lsprotocol import types as lsp
from pygls.io_ import StdoutWriter
from pygls.lsp.server import LanguageServer

from driver.lsp.editing import code_actions, completions, signature_help
from driver.lsp.features import abroad, hover, inlay_hints, to_diagnostics
from driver.lsp.supervisor import EMPTY, Limits, Worker, record
from driver.lsp.transport import SafeProtocol, serve_frames

__all__ = ["NpuOptServer", "build_server", "serve"]

PROGRESS_AFTER = 0.5  # seconds a check runs before the editor is shown a progress notice


def _number(low: float, strict: bool) -> Any:
    def fits(value: Any) -> bool:
        return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value) \
            and (value > low if strict else value >= low)
    return fits


_SETTINGS = {"inlayHints": lambda v: isinstance(v, bool), "debounceMs": _number(0, strict=False),
             "guideUrl": lambda v: v is None or isinstance(v, str), "timeLimit": _number(0, strict=True),
             "memoryLimitMb": lambda v: _number(0, strict=True)(v) and float(v).is_integer()}


class NpuOptServer(LanguageServer):
    """The language server with its worker and each document's last facts."""

    def __init__(self, worker: Worker | None = None) -> None:
        super().__init__("npu-opt", "0.1.0", protocol_cls=SafeProtocol)
        self.worker = worker or Worker(Limits())
        self.options: dict[str, Any] = {"inlayHints": True, "debounceMs": 200, "guideUrl": None}
        self.facts: dict[str, dict[str, Any]] = {}
        self.good: dict[str, dict[str, Any]] = {}  # the last facts with a trace (for a buffer mid-edit)
        self.tasks: dict[str, asyncio.Task] = {}
        self.changed: dict[str, float] = {}  # when each document last changed (loop time)
        self.debouncing: dict[str, asyncio.Task] = {}  # the check of a document that waits out a burst
        self.abroad: dict[str, dict[str, list[dict[str, Any]]]] = {}  # uri -> other file -> records raised there
        self.checks = 0
        self._progress = 0
        self.showing: dict[str, str] = {}  # the work-done progress token shown for each document's check

    def configure(self, settings: Any) -> None:
        options = settings if isinstance(settings, dict) else {}
        inner = options.get("npuOpt", options.get("npu-opt"))
        options = inner if isinstance(inner, dict) else options
        refused = []
        for key, fits in _SETTINGS.items():
            if key not in options:
                continue
            if fits(options[key]):
                self.options[key] = options[key]
            else:
                refused.append(f"{key}: {options[key]!r}")
        if refused:  # the setting keeps its value; the user is told which one was not taken
            self.window_show_message(lsp.ShowMessageParams(
                lsp.MessageType.Warning, "npu-opt lsp ignored settings it cannot use (" + "; ".join(refused) +
                "): inlayHints is true or false, debounceMs a number of 0 or more, timeLimit and memoryLimitMb "
                "positive numbers, guideUrl a string or null"))
        self.worker.limits.seconds = float(self.options.get("timeLimit", self.worker.limits.seconds))
        memory = int(self.options.get("memoryLimitMb", self.worker.limits.memory_mb))
        if memory != self.worker.limits.memory_mb:
            self.worker.limits.memory_mb = memory
            self.worker.stop()  # the limit is the process's: the next check starts one with it

    def schedule(self, uri: str, delay: float, fresh: bool = False) -> None:
        """Check the document after `delay` seconds (`fresh`: in full, on open and save)."""
        old = self.tasks.get(uri)
        if old is not None and not old.done():
            old.cancel()
        self.tasks[uri] = asyncio.get_running_loop().create_task(self._check(uri, delay, fresh))

    def changed_now(self, uri: str) -> None:
        """A change: checked at once after a pause of typing, else `debounceMs` after the last
        change of a burst (a change within `debounceMs` of the one before, or while one waits)."""
        now, debounce = asyncio.get_running_loop().time(), float(self.options["debounceMs"]) / 1000
        last, self.changed[uri] = self.changed.get(uri), now
        burst = uri in self.debouncing or (last is not None and now - last < debounce)
        self.schedule(uri, debounce if burst else 0)

    async def _check(self, uri: str, delay: float, fresh: bool = False) -> None:
        task = asyncio.current_task()
        if delay > 0:
            self.debouncing[uri] = task  # a debounce a later change restarts
            try:
                await asyncio.sleep(delay)
            finally:
                if self.debouncing.get(uri) is task:
                    del self.debouncing[uri]
        doc = self.workspace.get_text_document(uri)
        version, source = doc.version, doc.source
        loop = asyncio.get_running_loop()

        def early(records: list[dict[str, Any]]) -> None:  # (the worker's thread) a full check's diagnostics
            loop.call_soon_threadsafe(self._early, uri, version, source, records, task)

        running = asyncio.ensure_future(asyncio.to_thread(self.worker.check, _path_of(uri), source, fresh, early))
        try:
            facts = await self._with_progress(running, uri)
        except Exception as e:  # noqa: BLE001 - the server goes on; the editor shows why it cannot check
            facts = dict(EMPTY, diagnostics=[record(f"npu-opt lsp could not check the file: {e}", 1, None, code="ICE")])
        current = self.workspace.text_documents.get(uri)
        if current is None or current.version != version:
            return  # edited meanwhile: the next check publishes
        self.checks += 1
        self.facts[uri] = facts
        if facts.get("stages"):
            self.good[uri] = facts
        lines = source.split("\n")
        before = set(self.abroad.pop(uri, {}))
        self.abroad[uri] = abroad(facts, uri, lines)
        self._publish(uri, version, lines)
        for other, doc in list(self.workspace.text_documents.items()):  # the helpers' open documents
            if other != uri and _path_of(other) in before | set(self.abroad[uri]):
                self._publish(other, doc.version, doc.source.split("\n"))

    def _early(self, uri: str, version: int, source: str, records: list[dict[str, Any]], task: Any) -> None:
        """A full check's diagnostics, published as soon as its kernels are traced (the first
        check of a file is the slow one); its facts, and the same diagnostics, follow."""
        current = self.workspace.text_documents.get(uri)
        if self.tasks.get(uri) is task and current is not None and current.version == version:
            self._progress_end(uri)  # the check is done as far as the user sees: its diagnostics come now
            self._publish(uri, version, source.split("\n"), records)

    def _publish(self, uri: str, version: int | None, lines: list[str],
                 own: list[dict[str, Any]] | None = None) -> None:
        """The document's diagnostics: its own check's (`own`, else its last facts'), and those
        other documents' checks found raised in it (a helper module's refusals, at its own lines)."""
        here = _path_of(uri)
        records = list(self.facts.get(uri, EMPTY)["diagnostics"] if own is None else own)
        records += [r for other, found in self.abroad.items() if other != uri for r in found.get(here, [])]
        self.text_document_publish_diagnostics(lsp.PublishDiagnosticsParams(
            uri=uri, version=version,
            diagnostics=to_diagnostics({"diagnostics": records}, lines, uri, self.options["guideUrl"])))

    async def _with_progress(self, running: asyncio.Future, uri: str) -> dict[str, Any]:
        """The check's facts; a work-done progress is shown while it takes longer than
        PROGRESS_AFTER seconds, and at once while the worker is still starting (the first check)."""
        starting = not self.worker.ready  # the worker is still starting: the notice goes up at once
        done, _ = await asyncio.wait({running}, timeout=0.05 if starting else PROGRESS_AFTER)
        if done or not self._can_show_progress():
            return await asyncio.shield(running)
        self._progress += 1
        token = f"npu-opt-check-{self._progress}"
        name = Path(_path_of(uri)).name
        try:
            await asyncio.wait_for(self.work_done_progress.create_async(token), 5.0)
        except Exception:  # noqa: BLE001 - a client that refuses the progress still gets the diagnostics
            return await asyncio.shield(running)
        what = f"starting the checker, then checking {name}" if starting else f"checking {name}"
        self.work_done_progress.begin(token, lsp.WorkDoneProgressBegin(title="npu-opt", message=what))
        self.showing[uri] = token
        try:
            return await asyncio.shield(running)
        finally:
            self._progress_end(uri, token)

    def _progress_end(self, uri: str, token: str | None = None) -> None:
        """End the document's progress notice (`token`: only that one), if one is shown."""
        if uri in self.showing and (token is None or self.showing[uri] == token):
            token = self.showing.pop(uri)
            name = Path(_path_of(uri)).name
            self.work_done_progress.end(token, lsp.WorkDoneProgressEnd(message=f"checked {name}"))

    def _can_show_progress(self) -> bool:
        window = getattr(self.client_capabilities, "window", None)
        return bool(window is not None and window.work_done_progress)

    async def settled(self, uri: str, usable: bool = False) -> tuple[dict[str, Any], list[str]]:
        """The document's facts once no check of it is pending (`usable`: or, when this version
        does not load, mid-edit, the last ones with a trace), and its lines."""
        while True:
            task = self.tasks.get(uri)
            if task is None or task.done():
                break
            try:
                await asyncio.shield(task)
            except asyncio.CancelledError:
                if self.tasks.get(uri) is task:
                    raise
        facts = self.facts.get(uri, EMPTY)
        if usable and not facts.get("stages"):
            facts = self.good.get(uri, facts)
        doc = self.workspace.text_documents.get(uri)  # a document the client did not open: nothing is known
        return facts, doc.source.split("\n") if doc is not None else []


def _path_of(uri: str) -> str:
    parsed = urlparse(uri)
    if parsed.scheme == "file":
        return unquote(parsed.path)
    return str(Path.cwd() / (Path(unquote(parsed.path)).name or "untitled.py"))


def build_server(worker: Worker | None = None) -> NpuOptServer:
    """The server with every feature registered."""
    server = NpuOptServer(worker)
    _lifecycle(server)
    _documents(server)
    _requests(server)
    return server


def _lifecycle(server: NpuOptServer) -> None:
    """Initialize (the client's settings, the warm worker), settings changes and shutdown."""

    @server.feature(lsp.INITIALIZE)
    def _initialize(ls: NpuOptServer, params: lsp.InitializeParams) -> None:
        ls.configure(params.initialization_options)

    @server.feature(lsp.INITIALIZED)
    def _initialized(ls: NpuOptServer, params: lsp.InitializedParams) -> None:
        ls.worker.spawn()  # started already by `npu-opt lsp`; the first check waits for it to be warm

    @server.feature(lsp.SHUTDOWN)
    def _shutdown(ls: NpuOptServer, params: Any) -> None:
        ls.worker.stop()

    @server.feature(lsp.WORKSPACE_DID_CHANGE_CONFIGURATION)
    def _configuration(ls: NpuOptServer, params: lsp.DidChangeConfigurationParams) -> None:
        ls.configure(params.settings)



def _documents(server: NpuOptServer) -> None:
    """Open, change, save and close: each schedules a check (or drops the document's facts)."""

    @server.feature(lsp.TEXT_DOCUMENT_DID_OPEN)
    @server.feature(lsp.TEXT_DOCUMENT_DID_SAVE)
    def _check_now(ls: NpuOptServer, params: lsp.DidOpenTextDocumentParams | lsp.DidSaveTextDocumentParams) -> None:
        ls.schedule(params.text_document.uri, 0, fresh=True)

    @server.feature(lsp.TEXT_DOCUMENT_DID_CHANGE)
    def _change(ls: NpuOptServer, params: lsp.DidChangeTextDocumentParams) -> None:
        ls.changed_now(params.text_document.uri)

    @server.feature(lsp.TEXT_DOCUMENT_DID_CLOSE)
    def _close(ls: NpuOptServer, params: lsp.DidCloseTextDocumentParams) -> None:
        uri = params.text_document.uri
        task = ls.tasks.pop(uri, None)
        if task is not None:
            task.cancel()
        ls.facts.pop(uri, None)
        ls.good.pop(uri, None)
        ls.abroad.pop(uri, None)
        ls.text_document_publish_diagnostics(lsp.PublishDiagnosticsParams(uri=uri, diagnostics=[]))



def _requests(server: NpuOptServer) -> None:
    """Hover, inlay hints, completion, signature help and code actions, from the facts."""

    @server.feature(lsp.TEXT_DOCUMENT_HOVER)
    async def _hover(ls: NpuOptServer, params: lsp.HoverParams) -> lsp.Hover | None:
        facts, lines = await ls.settled(params.text_document.uri, usable=True)
        return hover(facts, lines, params.position)

    @server.feature(lsp.TEXT_DOCUMENT_INLAY_HINT)
    async def _inlay(ls: NpuOptServer, params: lsp.InlayHintParams) -> list[lsp.InlayHint]:
        if not ls.options.get("inlayHints", True):
            return []
        facts, lines = await ls.settled(params.text_document.uri)
        return inlay_hints(facts, lines, params.range.start.line, params.range.end.line)

    @server.feature(lsp.TEXT_DOCUMENT_COMPLETION, lsp.CompletionOptions(trigger_characters=["."]))
    async def _complete(ls: NpuOptServer, params: lsp.CompletionParams) -> lsp.CompletionList:
        facts, lines = await ls.settled(params.text_document.uri, usable=True)
        items = completions(facts, ls.worker.enums, lines, params.position)
        return lsp.CompletionList(is_incomplete=False, items=items)

    @server.feature(lsp.TEXT_DOCUMENT_SIGNATURE_HELP, lsp.SignatureHelpOptions(trigger_characters=["(", ","]))
    async def _signature(ls: NpuOptServer, params: lsp.SignatureHelpParams) -> lsp.SignatureHelp | None:
        facts, lines = await ls.settled(params.text_document.uri, usable=True)
        return signature_help(facts, lines, params.position)

    @server.feature(lsp.TEXT_DOCUMENT_CODE_ACTION,
                    lsp.CodeActionOptions(code_action_kinds=[lsp.CodeActionKind.QuickFix]))
    async def _actions(ls: NpuOptServer, params: lsp.CodeActionParams) -> list[lsp.CodeAction]:
        _, lines = await ls.settled(params.text_document.uri)
        return code_actions(params.context.diagnostics, lines, params.text_document.uri)


class _NoTraceback(logging.Formatter):
    """The server's log lines on stderr: one line each, no traceback."""

    def formatException(self, ei: Any) -> str:  # noqa: N802 - logging's name
        return ""

    def format(self, record: logging.LogRecord) -> str:
        record.exc_info, record.exc_text, record.stack_info = None, None, None
        return super().format(record).splitlines()[0]  # pygls writes tracebacks into some messages' text


def serve(worker: Worker | None = None) -> int:
    """Run the server on stdin/stdout until the client exits it: 0 after `shutdown` then
    `exit`, 1 after `exit` alone or the end of input without `shutdown`. `worker`: the
    checking process `npu-opt lsp` started already (default: one with the default limits)."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(_NoTraceback("npu-opt lsp: %(levelname)s: %(message)s"))
    logging.basicConfig(level=logging.ERROR, handlers=[handler], force=True)
    server = build_server(worker)
    server.protocol.set_writer(StdoutWriter(sys.stdout.buffer))
    code = None
    try:
        asyncio.run(serve_frames(server.protocol, sys.stdin.buffer))
    except SystemExit as e:  # `exit`: pygls says 0 after shutdown, else 1
        code = e.code if isinstance(e.code, int) else 1
    except BrokenPipeError:
        pass
    finally:
        server.worker.stop()
        if sys.stdout is None or sys.stdout.closed:  # the transport closed it: the caller's flush must not fail
            sys.stdout = open(os.devnull, "w", encoding="utf-8")  # noqa: SIM115 - lives to the process's end
    return code if code is not None else (0 if server.protocol._shutdown else 1)
