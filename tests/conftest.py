"""Options of the test suite: `--update-golden` rewrites tests/golden/*.txt instead of comparing.

While the suite is collected, what collection has built is kept out of the cyclic garbage
collector's reach (`gc.freeze` after each collector): every xdist worker imports every test
module, and each full collection walked all the modules, functions and parameter sets built
so far again, ~6 CPU-s of a worker's ~27 s of collection. Frozen objects are still freed
when their last reference goes. The heap is unfrozen once collection ends, so the tests run
on an unfrozen process as before (the tuner's tests read and set the freeze themselves)."""

from __future__ import annotations

import atexit
import gc
import os
import shutil
import sys
import tempfile

from tests import golden


def _suite_bytecode() -> None:
    """When the caller asked Python not to write bytecode (`PYTHONDONTWRITEBYTECODE`, `-B`:
    some CI images set it), the suite's own processes keep theirs in a private temporary
    folder (`PYTHONPYCACHEPREFIX`), removed when the run ends, instead of none: each of the
    suite's ~hundred Python subprocesses and each xdist worker otherwise compiles the
    checkout's ~230 source files again (measured: a one-kernel `npu-opt check` 1.1 CPU-s
    without bytecode, 0.5 s with). Nothing is written to the checkout either way. Runs in
    the process that starts pytest (workers and subprocesses inherit the environment). A
    prefix the caller chose is kept only where bytecode is allowed: asked for none, the
    suite writes none there either."""
    if not sys.dont_write_bytecode or os.environ.get("PYTEST_XDIST_WORKER"):
        return
    prefix = tempfile.mkdtemp(prefix="npu-opt-suite-bytecode-")
    atexit.register(shutil.rmtree, prefix, True)
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
    os.environ["PYTHONPYCACHEPREFIX"] = prefix
    sys.pycache_prefix = prefix
    sys.dont_write_bytecode = False


_suite_bytecode()


def pytest_addoption(parser) -> None:
    parser.addoption("--update-golden", action="store_true", default=False,
                     help="rewrite the golden files (tests/golden/*.txt) the selected tests compare")


def pytest_configure(config) -> None:
    if config.getoption("--update-golden"):
        golden.UPDATE["on"] = True
    gc.freeze()


def pytest_collectreport(report) -> None:
    gc.freeze()


def pytest_collection_finish(session) -> None:
    gc.unfreeze()
