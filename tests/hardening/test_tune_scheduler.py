"""`tune --scheduler ADDRESS` with an address that is no dask scheduler (issue 55, item 6):
a malformed address or an unknown scheme is a USAGE error naming it, never a traceback or
an ICE, and a port that accepts the connection but never answers is given up after the
connect timeout with a USAGE error, instead of hanging `tune` for good."""

from __future__ import annotations

import socket
import threading
import time
from pathlib import Path

import pytest

from driver import tune_exec
from driver.cli import main
from tests.tune.probe_fresh import probe_in_a_fresh_process

TUNE_FILE = Path(__file__).parents[2] / "examples" / "tune_gemm.py"


@pytest.fixture(autouse=True)
def _distributed():
    """Skip without dask.distributed: asked when a test runs, so collecting this module
    (which every xdist worker does) does not import it (~1.5 CPU-s)."""
    pytest.importorskip("distributed")


def _tune(tmp_path, address: str) -> int:
    return main(["tune", str(TUNE_FILE), "-o", str(tmp_path / "out"), "--scheduler", address])


@pytest.mark.parametrize("address", ["foo", "tcp://", "", "http://127.0.0.1:1", "inproc://x", "tcp://[::1"])
def test_an_address_that_is_no_scheduler_is_a_usage_error(tmp_path, capsys, address):
    assert _tune(tmp_path, address) == 2
    out = capsys.readouterr()
    text = out.out + out.err
    assert "error[USAGE]" in text and "dask scheduler" in text and f"{address!r}" in text
    assert "ICE" not in text and "Traceback" not in text


def test_a_port_that_never_answers_times_out(tmp_path, capsys, monkeypatch):
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(8)
    held = []
    threading.Thread(target=lambda: held.extend(server.accept() for _ in range(4)), daemon=True).start()
    monkeypatch.setattr(tune_exec, "CONNECT_TIMEOUT", 2.0)
    monkeypatch.setattr(tune_exec, "PROBE_GRACE", 0.5)  # the child is killed 2.5 s in, not 12 s
    start = time.monotonic()
    try:
        status = _tune(tmp_path, f"tcp://127.0.0.1:{server.getsockname()[1]}")
    finally:
        server.close()
    assert status == 2 and time.monotonic() - start < 30
    text = capsys.readouterr()
    assert "did not answer within 2 s" in text.out + text.err and "Traceback" not in text.out + text.err


def test_a_forked_probe_gives_up_on_a_port_that_never_answers():
    """Run with one thread, tune asks the scheduler from a fork of itself (no second
    interpreter importing dask); a listening port that never answers still times out."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(8)  # the kernel completes the connections; nothing ever answers them
    try:
        out = probe_in_a_fresh_process(f"tcp://127.0.0.1:{server.getsockname()[1]}", grace=0.5)
    finally:
        server.close()
    code, forked, seconds, why = out.split(" ", 3)
    assert (code, forked) == ("USAGE", "True") and "did not answer within 2 s" in why and int(seconds) < 10
