"""The server's side of the stdio channel: read framed messages, whatever the client sends.

pygls reads `Content-Length` framing as a well-behaved client writes it; one bad frame
(no length, a length that is a word, short or huge, a body that is not JSON, params that
are a string) made it drop requests without an answer, wait for ever, or log a traceback
(issue 55). Here each frame is read on its own:

- a header block without a usable `Content-Length` (missing, not a number, negative) or
  with one above `MAX_BODY` is answered with an Invalid Request error (id null), and the
  input is skipped up to the next `Content-Length` header;
- a body that is not JSON gets a Parse Error (id null); one that is not an object, an
  Invalid Request; what follows a body cut short is skipped up to the next header;
- a request whose params do not fit its method (a string, a number where an object goes)
  gets an Invalid Params error with its id; a notification's is dropped;
- an error a handler raises is answered with its message, never a traceback.

`exit` ends the loop with status 0 after `shutdown`, else 1, as the protocol says.
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
from concurrent.futures import ThreadPoolExecutor
from typing import Any, BinaryIO

from lsprotocol import types as lsp
from pygls.exceptions import JsonRpcException
from pygls.protocol import LanguageServerProtocol

__all__ = ["MAX_BODY", "Framing", "FrameReader", "SafeProtocol", "serve_frames"]

MAX_BODY = 256 << 20  # bytes: a bigger body is refused unread (a document of 256 MiB is no kernel file)
_MAX_LINE = 1 << 16  # a header line is read this much at a time (never all of a huge line at once)
_LENGTH = b"content-length:"
PARSE_ERROR, INVALID_REQUEST, INVALID_PARAMS = -32700, -32600, -32602


class Framing(Exception):
    """A frame that could not be read; the reader has skipped to the next header."""


_TOKEN = re.compile(rb"[A-Za-z0-9!#$%&'*+.^_`|~-]+")


class FrameReader:
    """Frames from a binary stream, one `read()` at a time."""

    def __init__(self, stream: BinaryIO) -> None:
        self.stream = stream
        self.pending = b""  # a header line found glued to the end of skipped input, read next
        self.resync = False  # the input is mid-frame (after a body cut short): skip to the next header, quietly

    def _line(self) -> bytes:
        line, self.pending = (self.pending, b"") if self.pending else (self.stream.readline(_MAX_LINE), b"")
        return line

    def _skip(self, line: bytes) -> None:
        """Discard input up to the next `Content-Length` header, which is read next."""
        while line:
            at = line.lower().find(_LENGTH)
            if at >= 0:
                self.pending = line[at:]
                return
            line = self.stream.readline(_MAX_LINE)

    def read(self) -> bytes | None:
        """One message body, None at the end of input; raises `Framing` for a frame that
        cannot be read (after skipping to the next header)."""
        line = self._line()
        if self.resync:
            self.resync = False
            self._skip(line)
            line = self._line()
        headers: dict[bytes, bytes] = {}
        while True:
            if not line:
                return None
            if line.strip() == b"":
                if headers:
                    break
            else:
                name, colon, value = line.partition(b":")
                if not colon or not _TOKEN.fullmatch(name) or not line.endswith(b"\n"):
                    self._skip(line[1:])
                    raise Framing(f"not a header line: {line[:40]!r}")
                headers[name.lower()] = value.strip()
            line = self._line()
        text = headers.get(b"content-length")
        length = int(text) if text is not None and text.isdigit() else None
        if length is None or length > MAX_BODY:
            self._skip(self._line())
            what = "no Content-Length header" if text is None else \
                f"Content-Length {text[:20].decode(errors='replace')!r}"
            raise Framing(f"{what}: a message needs a length of 0 to {MAX_BODY} bytes")
        body = self.stream.read(length)
        return body if len(body) == length else None


class SafeProtocol(LanguageServerProtocol):
    """pygls's protocol whose error responses carry a message, never a traceback."""

    def _send_response(self, msg_id: Any, result: Any | None = None, error: Any | None = None) -> None:
        if error is not None and isinstance(getattr(error, "data", None), dict) and "traceback" in error.data:
            error = lsp.ResponseError(code=error.code, message=f"npu-opt lsp internal error: {error.message}")
        super()._send_response(msg_id, result, error)

    def send_error(self, msg_id: Any, code: int, message: str) -> None:
        self._send_data({"jsonrpc": "2.0", "id": msg_id, "error": {"code": code, "message": message}})


def _handle(protocol: SafeProtocol, body: bytes) -> bool:
    """Handle one body; whether the input after it may be mid-frame (a body cut short)."""
    try:
        data = json.loads(body)
    except ValueError as e:
        protocol.send_error(None, PARSE_ERROR, f"the message is not JSON: {e}")
        return True
    if not isinstance(data, dict) or not isinstance(data.get("method", ""), str) \
            or not isinstance(data.get("id", 0), (int, str)) or isinstance(data.get("id"), bool):
        protocol.send_error(None, INVALID_REQUEST, "a message is a JSON object with a string method and an "
                                                   "integer or string id")
        return False
    is_request = "method" in data and "id" in data
    try:
        message = protocol.structure_message(data)
    except JsonRpcException as e:
        if is_request:
            protocol.send_error(data["id"], INVALID_PARAMS, f"the params of {data['method']} do not fit it: {e}")
        return False
    protocol.handle_message(message)
    return False


async def serve_frames(protocol: SafeProtocol, stream: BinaryIO) -> None:
    """Read and handle messages until the end of input or `exit` (which raises SystemExit).
    The reading thread is the reader's own: checks waiting in the default pool never stall it."""
    reader, loop = FrameReader(stream), asyncio.get_running_loop()
    with ThreadPoolExecutor(1, thread_name_prefix="npu-opt-lsp-read") as pool:
        while True:
            try:
                body = await loop.run_in_executor(pool, reader.read)
            except Framing as e:
                protocol.send_error(None, INVALID_REQUEST, f"cannot read the message: {e}")
                continue
            if body is None:
                return
            try:
                reader.resync = _handle(protocol, body)
            except SystemExit:
                raise
            except Exception as e:  # noqa: BLE001 - one message the server cannot handle does not end it
                logging.getLogger(__name__).error("npu-opt lsp could not handle a message: %s", e)
