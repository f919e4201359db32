"""A language-server client that writes raw bytes: for the messages a well-behaved client
(tests/lsp/client.py) never sends."""

from __future__ import annotations

import json
import os
import queue
import subprocess
import threading

from tests.lsp.conftest import ROOT, SERVER


class RawServer:
    """`npu-opt lsp` over pipes; `replies()` are the messages it wrote, parsed."""

    def __init__(self, args: list[str] | None = None) -> None:
        self.proc = subprocess.Popen(SERVER + (args or []), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)})
        self.messages: queue.Queue = queue.Queue()
        self.raw = b""
        self.others: list[dict] = []  # what `reply` read past: notifications, other responses
        self.lock = threading.Lock()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        out = self.proc.stdout
        while True:
            length = None
            while True:
                line = out.readline()
                self.raw += line
                if not line:
                    self.messages.put(None)
                    return
                if line == b"\r\n":
                    break
                if line.lower().startswith(b"content-length:"):
                    length = int(line.split(b":")[1])
            body = out.read(length)
            self.raw += body
            message = json.loads(body)
            if "method" in message and "id" in message:  # the server's request (a progress token): accepted
                self.send({"id": message["id"], "result": None})
            self.messages.put(message)

    def write(self, data: bytes) -> None:
        with self.lock:
            self.proc.stdin.write(data)
            self.proc.stdin.flush()

    def send(self, message: dict) -> None:
        body = json.dumps({"jsonrpc": "2.0", **message}).encode()
        self.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)

    def reply(self, msg_id, timeout: float = 30.0) -> dict:
        """The response to request `msg_id` (a hang fails the test after `timeout`)."""
        while True:
            message = self.messages.get(timeout=timeout)
            assert message is not None, "the server closed its output"
            if "method" not in message and message.get("id") == msg_id:
                return message
            self.others.append(message)

    def initialize(self, capabilities: dict | None = None, options: dict | None = None) -> None:
        self.send({"id": 0, "method": "initialize", "params": {"processId": None, "rootUri": None,
                                                               "capabilities": capabilities or {},
                                                               "initializationOptions": options}})
        assert "result" in self.reply(0)
        self.send({"method": "initialized", "params": {}})

    def until(self, predicate, timeout: float = 30.0) -> list[dict]:
        """Every message up to the first one `predicate` accepts (a hang fails after `timeout`)."""
        seen = []
        while True:
            message = self.messages.get(timeout=timeout)
            assert message is not None, "the server closed its output"
            seen.append(message)
            if predicate(message):
                return seen

    def end(self, shutdown: bool = True, timeout: float = 60.0) -> int:
        if shutdown:
            self.send({"id": "bye", "method": "shutdown"})
            self.reply("bye")
        self.send({"method": "exit"})
        code = self.proc.wait(timeout=timeout)
        self.stderr = self.proc.stderr.read().decode(errors="replace")
        return code
