"""Ctrl-C arriving while a gc callback runs (issue 28 item 18): an exception cannot leave a gc
callback (Python prints it as "Exception ignored" and pytest warns), so the handler of
`npu_opt.fault_owner` delivers the interrupt again once the callback has returned.

The signal handler is process state, and a test runner's worker has its own (earlier tests
install ours through the command line, the runner has threads of its own that collect
garbage): each scenario runs in a fresh interpreter."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

_INSIDE_GC = """
import gc, signal, sys, time
from npu_opt.fault_owner import install_sigint, signalled

unraisable, raised = [], []
sys.unraisablehook = unraisable.append

def callback(phase, info):
    if phase == "start" and not raised:
        raised.append(phase)
        signal.raise_signal(signal.SIGINT)  # the handler runs here, inside the callback

install_sigint()
gc.callbacks.append(callback)
try:
    gc.collect()
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        time.sleep(0.01)
    print("no interrupt")
except KeyboardInterrupt:
    print("interrupted after the callback", raised, len(unraisable), signalled())
"""

_OUTSIDE_GC = """
import signal
from npu_opt.fault_owner import install_sigint, signalled

install_sigint()
try:
    signal.raise_signal(signal.SIGINT)
    print("no interrupt")
except KeyboardInterrupt:
    print("interrupted at once", signalled())
"""


def _run(script: str) -> str:
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(script)], cwd=ROOT, capture_output=True,
                          text=True, timeout=60, env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_sigint_inside_a_gc_callback_interrupts_after_it():
    assert _run(_INSIDE_GC) == "interrupted after the callback ['start'] 0 True"


def test_sigint_outside_a_gc_callback_interrupts_at_once():
    assert _run(_OUTSIDE_GC) == "interrupted at once True"
