"""One `npu-opt lsp` server per test session (per xdist worker), driven over stdio by a
synchronous client (tests/lsp/client.py). No test needs a fresh server: each opens its own
documents under its own tmp_path, a test that changes a setting sets it back, and the tests
of kernels that hang, exit or kill go on to check that the server still answers. (The tests
that need their own server options or a fresh one start it themselves: test_progress,
test_reuse, test_protocol.)

The server runs with a short time limit (1.5 s per check) and a short debounce, so the
tests of hanging kernels stay quick; each test opens its own documents (own file names).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from tests.lsp.client import Client
from tests.optional_deps import Deferred

lsp = Deferred("lsprotocol.types")  # imported by the worker that runs these tests, not at collection

ROOT = Path(__file__).resolve().parents[2]
TIME_LIMIT = 1.5
SERVER = [sys.executable, "-m", "driver.cli", "lsp", "--time-limit", str(TIME_LIMIT), "--memory-limit", "2048"]


@pytest.fixture(scope="session")
def client():
    session = Client(SERVER, ROOT, {**os.environ, "PYTHONPATH": str(ROOT)})
    session.initialize_session(lsp.InitializeParams(
        capabilities=lsp.ClientCapabilities(), root_uri=ROOT.as_uri(),
        initialization_options={"npuOpt": {"debounceMs": 20, "guideUrl": "https://guide.example/npu-opt"}}))
    yield session
    session.shutdown_session()


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    return tmp_path
