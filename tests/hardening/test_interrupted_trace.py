"""An interruption is not the kernel's error (issue 56 item 3).

A harness that bounds a trace with a SIGALRM timeout raises from its signal handler, on top
of whatever frame runs, often the kernel body's; Python's own SIGINT handler delivers a
KeyboardInterrupt the same way. Both pass through `check`, `compile` and an import
unchanged, so the harness sees its own exception; what the kernel's code raises itself
(`raise KeyboardInterrupt`, a `TimeoutError` of its own, with a handler installed or not)
stays its USAGE error. The command line reports a handler's exception as an interruption,
exit 130."""

from __future__ import annotations

import _thread
import gc
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest

import backends.npu  # noqa: F401 - loaded before an alarm is armed, so that it lands in the kernel body
import npu_opt
from driver.discover import load_file
from ir.interruption import from_signal_handler, raised_by_statement
from tests.hardening.kernels import write

ROOT = Path(__file__).parents[2]


class Timeout(Exception):
    """What a harness's alarm handler raises."""


class Abort(BaseException):
    """A harness outcome outside `Exception` (as a test runner's failure is)."""


def _raise_timeout(signum, frame):
    raise Timeout("the harness gave up")


def _raise_abort(*_):
    raise Abort()


def _raise_after_uninstalling(signum, frame):
    signal.signal(signal.SIGALRM, signal.SIG_DFL)
    raise Timeout("gave up, handler gone")


BUSY = "import time\n    t = time.monotonic()\n    while time.monotonic() < t + 5: pass"


@pytest.fixture(autouse=True)
def _no_gc_callbacks():
    """No garbage collection while a signal may land: a handler that runs inside a gc
    callback (jax registers one when a framework test ran in the same worker) has its
    exception swallowed as "Exception ignored", which is not what these tests are about."""
    was = gc.isenabled()
    gc.disable()
    yield
    if was:
        gc.enable()


@pytest.fixture
def alarm():
    """Install a SIGALRM handler and fire it 50 ms later; restored afterwards."""
    old = signal.getsignal(signal.SIGALRM)

    def arm(handler, delay: float = 0.05):
        signal.signal(signal.SIGALRM, handler)
        signal.setitimer(signal.ITIMER_REAL, delay)
    yield arm
    signal.setitimer(signal.ITIMER_REAL, 0)
    signal.signal(signal.SIGALRM, old)


def _kernel(tmp_path: Path, body: str, name: str = "kern.py"):
    module, error = load_file(write(tmp_path, name, body=body), name=f"interrupted_{tmp_path.name}_{name[:-3]}")
    assert error is None, error
    return module.copy_kernel


@pytest.mark.parametrize("handler, caught", [(_raise_timeout, Timeout), (_raise_abort, Abort),
                                             (_raise_after_uninstalling, Timeout)])
def test_a_harness_timeout_passes_through_check(tmp_path, alarm, handler, caught):
    kernel = _kernel(tmp_path, BUSY)
    alarm(handler)
    with pytest.raises(caught):
        npu_opt.check(kernel)


def test_a_harness_timeout_passes_through_compile_not_an_ice(tmp_path, alarm):
    kernel = _kernel(tmp_path, BUSY)
    alarm(_raise_timeout)
    with pytest.raises(Timeout):
        npu_opt.compile(kernel)


def test_a_harness_timeout_while_a_file_is_imported_is_not_the_files_error(tmp_path, alarm):
    path = write(tmp_path, head="import time\nt = time.monotonic()\nwhile time.monotonic() < t + 5: pass\n")
    alarm(_raise_timeout)
    with pytest.raises(Timeout):
        load_file(path, name=f"interrupted_import_{tmp_path.name}")


def test_a_ctrl_c_delivered_by_pythons_own_handler_passes_through(tmp_path):
    """No npu-opt SIGINT handler (a library caller): `_thread.interrupt_main` is what Python
    does for SIGINT, KeyboardInterrupt at whatever instruction runs."""
    kernel = _kernel(tmp_path, BUSY)
    old = signal.signal(signal.SIGINT, signal.default_int_handler)
    timer = threading.Timer(0.05, _thread.interrupt_main)
    try:
        timer.start()
        with pytest.raises(KeyboardInterrupt):
            npu_opt.check(kernel)
    finally:
        timer.cancel()
        signal.signal(signal.SIGINT, old)


@pytest.mark.parametrize("body, shown", [
    ("raise KeyboardInterrupt", "the kernel raised KeyboardInterrupt"),
    ("raise TimeoutError('my own')", "the kernel raised TimeoutError: my own"),
])
def test_what_the_kernel_raises_itself_stays_usage_with_a_handler_installed(tmp_path, alarm, body, shown):
    kernel = _kernel(tmp_path, body)
    alarm(_raise_timeout, delay=60)  # installed, never fired during the trace
    (found,) = npu_opt.check(kernel).diagnostics
    assert found.code == "USAGE" and shown in found.message and found.line == 10


def test_the_two_tests_tell_a_raise_from_a_signal(alarm):
    try:
        raise KeyboardInterrupt
    except KeyboardInterrupt as e:
        assert raised_by_statement(e) and not from_signal_handler(e)
    alarm(_raise_timeout, delay=0.01)
    try:
        while True:
            pass
    except Timeout as e:
        assert from_signal_handler(e)


def test_the_command_line_reports_a_handlers_exception_as_an_interruption(tmp_path):
    """A kernel file that installs its own alarm: the command stops, exit 130, no traceback."""
    head = ("import signal\nclass Late(Exception): pass\n"
            "def late(signum, frame): raise Late()\nsignal.signal(signal.SIGALRM, late)\n")
    path = write(tmp_path, head=head, body="signal.setitimer(signal.ITIMER_REAL, 0.05)\n    " + BUSY)
    done = subprocess.run([sys.executable, "-m", "npu_opt", "check", str(path)], capture_output=True, text=True,
                          timeout=120, cwd=ROOT, env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})
    assert done.returncode == 130, done.stdout + done.stderr
    assert "interrupted: a signal handler raised Late" in done.stderr and "Traceback" not in done.stderr
