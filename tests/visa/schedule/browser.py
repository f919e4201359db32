"""A headless chromium driven over the DevTools protocol on a pipe (no websocket, no extra
package), and a PNG decoder for its screenshots. Test support only.

`chromium --remote-debugging-pipe` reads JSON commands from fd 3 and writes responses
and events to fd 4, each message ending with a NUL byte.
"""

from __future__ import annotations

import base64
import fcntl
import json
import os
import shutil
import tempfile
import zlib

import numpy as np

__all__ = ["Browser", "chromium_path", "decode_png"]

CANDIDATES = ("chromium", "chromium-browser", "google-chrome", "chrome")


def chromium_path() -> str | None:
    return next((p for p in map(shutil.which, CANDIDATES) if p), None)


def _high(fd: int) -> int:
    """`fd` moved to a number >= 10 (so the dup2 onto 3 and 4 never meets itself)."""
    new = fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 10)
    os.close(fd)
    return new


class Browser:
    """One page of a headless chromium; `call(method, **params)` returns the result."""

    def __init__(self, width: int = 1200, height: int = 520) -> None:
        path = chromium_path()
        if path is None:
            raise RuntimeError("no chromium on PATH")
        cmd_r, cmd_w = map(_high, os.pipe())
        out_r, out_w = map(_high, os.pipe())
        self.profile = tempfile.mkdtemp(prefix="npu-opt-chromium-")
        args = [path, "--headless=new", "--remote-debugging-pipe", "--no-sandbox", "--disable-gpu",
                "--no-first-run", "--disable-extensions", "--hide-scrollbars", f"--user-data-dir={self.profile}",
                f"--window-size={width},{height}", "about:blank"]
        actions = [(os.POSIX_SPAWN_DUP2, cmd_r, 3), (os.POSIX_SPAWN_DUP2, out_w, 4),
                   (os.POSIX_SPAWN_OPEN, 1, os.devnull, os.O_WRONLY, 0),
                   (os.POSIX_SPAWN_OPEN, 2, os.devnull, os.O_WRONLY, 0)]
        self.pid = os.posix_spawn(path, args, os.environ, file_actions=actions)
        os.close(cmd_r)
        os.close(out_w)
        self.w, self.r = cmd_w, out_r
        self.buffer = b""
        self.next_id = 0
        self.events: list[dict] = []
        target = self.call("Target.createTarget", url="about:blank", session=False)["targetId"]
        self.session = self.call("Target.attachToTarget", targetId=target, flatten=True, session=False)["sessionId"]
        self.call("Page.enable")
        self.call("Emulation.setDeviceMetricsOverride", width=width, height=height, deviceScaleFactor=1,
                  mobile=False)

    def _message(self) -> dict:
        while b"\0" not in self.buffer:
            chunk = os.read(self.r, 1 << 16)
            if not chunk:
                raise RuntimeError("chromium closed the DevTools pipe")
            self.buffer += chunk
        raw, self.buffer = self.buffer.split(b"\0", 1)
        return json.loads(raw)

    def call(self, method: str, session: bool = True, **params) -> dict:
        self.next_id += 1
        msg = {"id": self.next_id, "method": method, "params": params}
        if session:
            msg["sessionId"] = self.session
        os.write(self.w, json.dumps(msg).encode() + b"\0")
        while True:
            reply = self._message()
            if reply.get("id") == self.next_id:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return reply.get("result", {})
            self.events.append(reply)

    def open(self, url: str) -> None:
        self.events.clear()
        self.call("Page.navigate", url=url)
        while not any(e.get("method") == "Page.loadEventFired" for e in self.events):
            self.events.append(self._message())

    def eval(self, expression: str):
        result = self.call("Runtime.evaluate", expression=expression, returnByValue=True)
        if "exceptionDetails" in result:
            raise RuntimeError(f"page script failed: {result['exceptionDetails']}")
        return result["result"].get("value")

    def hover(self, x: float, y: float) -> None:
        self.call("Input.dispatchMouseEvent", type="mouseMoved", x=x, y=y)

    def screenshot_png(self, clip: dict | None = None) -> bytes:
        params = {"format": "png"} if clip is None else {"format": "png", "clip": {**clip, "scale": 1}}
        return base64.b64decode(self.call("Page.captureScreenshot", **params)["data"])

    def screenshot(self, clip: dict | None = None) -> np.ndarray:
        """The page (or the `clip` rectangle {x, y, width, height}) as an RGB(A) array."""
        return decode_png(self.screenshot_png(clip))

    def close(self) -> None:
        try:
            self.call("Browser.close", session=False)
        except (RuntimeError, OSError):
            pass
        os.waitpid(self.pid, 0)
        os.close(self.w)
        os.close(self.r)
        shutil.rmtree(self.profile, ignore_errors=True)


def _paeth(a: int, b: int, c: int) -> int:
    p = a + b - c
    pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
    return a if pa <= pb and pa <= pc else b if pb <= pc else c


def _unfilter(kind: int, line: np.ndarray, prev: np.ndarray, bpp: int) -> np.ndarray:
    if kind == 0:
        return line
    if kind == 2:
        return (line + prev) & 0xFF
    if kind == 1:
        return line.reshape(-1, bpp).cumsum(axis=0).reshape(-1) & 0xFF
    out = line.astype(np.int64)
    for i in range(len(out)):
        left = out[i - bpp] if i >= bpp else 0
        up, corner = prev[i], (prev[i - bpp] if i >= bpp else 0)
        out[i] = (out[i] + ((left + up) // 2 if kind == 3 else _paeth(left, up, corner))) & 0xFF
    return out


def decode_png(data: bytes) -> np.ndarray:
    """An 8-bit RGB or RGBA PNG as a (height, width, channels) uint8 array."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    pos, idat, header = 8, b"", None
    while pos < len(data):
        n = int.from_bytes(data[pos:pos + 4], "big")
        kind, body = data[pos + 4:pos + 8], data[pos + 8:pos + 8 + n]
        if kind == b"IHDR":
            header = body
        elif kind == b"IDAT":
            idat += body
        pos += 12 + n
    width, height = int.from_bytes(header[0:4], "big"), int.from_bytes(header[4:8], "big")
    depth, color = header[8], header[9]
    assert depth == 8 and color in (2, 6), f"unsupported PNG (depth {depth}, colour type {color})"
    bpp = 3 if color == 2 else 4
    raw = np.frombuffer(zlib.decompress(idat), dtype=np.uint8).reshape(height, 1 + width * bpp)
    rows, prev = [], np.zeros(width * bpp, dtype=np.int64)
    for r in range(height):
        prev = _unfilter(int(raw[r, 0]), raw[r, 1:].astype(np.int64), prev, bpp)
        rows.append(prev)
    return np.array(rows, dtype=np.uint8).reshape(height, width, bpp)
