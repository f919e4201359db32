"""Issue 55.4: a malformed message gets the protocol's error and the server goes on; `exit`
without `shutdown` exits 1; the limits on the command line must be positive numbers."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.lsp.conftest import ROOT
from tests.lsp.raw import RawServer

PARSE_ERROR, INVALID_REQUEST, METHOD_NOT_FOUND, INVALID_PARAMS = -32700, -32600, -32601, -32602
HOVER = {"textDocument": {"uri": "file:///nowhere/x.py"}, "position": {"line": 0, "character": 0}}


def _still_serving(server: RawServer, msg_id: int, error: int | tuple[int, ...] | None = None) -> None:
    """A well-formed request after the bad one is answered (and, given `error`, the bad one
    got that error first: a frame without a usable length ends where the next header starts,
    so the server can only answer it once the next message came)."""
    server.send({"id": msg_id, "method": "textDocument/hover", "params": HOVER})
    if error is not None:
        assert server.reply(None)["error"]["code"] in ((error,) if isinstance(error, int) else error)
    assert "error" not in server.reply(msg_id)


@pytest.fixture(scope="module")
def server():
    raw = RawServer()
    raw.initialize()
    yield raw
    assert raw.end() == 0
    assert "Traceback" not in raw.raw.decode(errors="replace")
    assert "Traceback" not in raw.stderr


def _body(message: dict) -> bytes:
    import json

    return json.dumps({"jsonrpc": "2.0", **message}).encode()


def test_params_that_are_a_string_are_invalid_params(server):
    server.send({"id": 1, "method": "textDocument/hover", "params": "not an object"})
    assert server.reply(1)["error"]["code"] == INVALID_PARAMS
    server.send({"id": 2, "method": "textDocument/hover", "params": {"textDocument": 5}})
    assert server.reply(2)["error"]["code"] == INVALID_PARAMS
    server.send({"method": "textDocument/didOpen", "params": "a string"})  # a notification: no reply
    _still_serving(server, 3)


def test_an_unknown_method_is_method_not_found(server):
    server.send({"id": 10, "method": "npuOpt/noSuchThing", "params": {}})
    assert server.reply(10)["error"]["code"] == METHOD_NOT_FOUND
    server.send({"method": "npuOpt/noSuchNotification", "params": {}})
    _still_serving(server, 11)


def test_bad_json_is_a_parse_error(server):
    body = b'{"jsonrpc": "2.0", "id": 20, "method": '
    server.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
    assert server.reply(None)["error"]["code"] == PARSE_ERROR
    server.write(b"Content-Length: 2\r\n\r\n[]")
    assert server.reply(None)["error"]["code"] == INVALID_REQUEST
    _still_serving(server, 21)


@pytest.mark.parametrize("header", [b"", b"Content-Length: twelve\r\n", b"Content-Length: -4\r\n",
                                    b"Content-Type: application/vscode-jsonrpc\r\n"],
                         ids=["none", "words", "negative", "other-header-only"])
def test_a_missing_or_non_numeric_length_is_an_error_and_the_next_message_is_read(server, header):
    body = _body({"id": 30, "method": "textDocument/hover", "params": HOVER})
    server.write(header + b"\r\n" + body)
    _still_serving(server, 31, (PARSE_ERROR, INVALID_REQUEST))


def test_a_short_length_is_a_parse_error_and_the_next_message_is_read(server):
    body = _body({"id": 40, "method": "textDocument/hover", "params": HOVER})
    server.write(b"Content-Length: %d\r\n\r\n" % (len(body) - 10) + body)
    _still_serving(server, 41, PARSE_ERROR)


def test_a_huge_length_is_refused_without_reading_it(server):
    server.write(b"Content-Length: 99999999999999\r\n\r\n")
    _still_serving(server, 51, INVALID_REQUEST)


def test_exit_without_shutdown_exits_1():
    raw = RawServer()
    raw.initialize()
    assert raw.end(shutdown=False) == 1


@pytest.mark.parametrize("option, value", [("--time-limit", "-1"), ("--time-limit", "0"), ("--time-limit", "nan"),
                                           ("--time-limit", "inf"), ("--memory-limit", "-5"),
                                           ("--memory-limit", "0")])
def test_limits_that_are_not_positive_numbers_are_usage_errors(option, value):
    out = subprocess.run([sys.executable, "-m", "driver.cli", "lsp", option, value], cwd=ROOT, capture_output=True,
                         text=True, timeout=60, stdin=subprocess.DEVNULL)
    assert out.returncode == 2, out.stderr
    assert option in out.stderr and "Traceback" not in out.stderr


def test_settings_that_are_not_usable_are_refused_with_a_message_and_the_server_goes_on():
    raw = RawServer()
    raw.send({"id": 0, "method": "initialize", "params": {"processId": None, "rootUri": None, "capabilities": {},
              "initializationOptions": {"npuOpt": {"timeLimit": "soon", "memoryLimitMb": -1, "debounceMs": None}}}})
    assert "result" in raw.reply(0)
    _still_serving(raw, 1)
    (shown,) = [m for m in raw.others if m.get("method") == "window/showMessage"]
    assert all(key in shown["params"]["message"] for key in ("timeLimit", "memoryLimitMb", "debounceMs"))
    assert raw.end() == 0
