"""Ctrl-C arriving while a gc callback runs (issue 28 item 18): an exception cannot leave a gc
callback (Python prints it as "Exception ignored" and pytest warns), so the handler of
`npu_opt.blame` delivers the interrupt again once the callback has returned."""

from __future__ import annotations

import gc
import signal
import sys
import threading
import time

import pytest

from npu_opt.blame import install_sigint, signalled


def test_sigint_inside_a_gc_callback_interrupts_after_it(monkeypatch):
    unraisable = []
    monkeypatch.setattr(sys, "unraisablehook", unraisable.append)
    previous = signal.getsignal(signal.SIGINT)
    raised = []

    def callback(phase, info):
        # only the collection this test starts: under xdist another thread (execnet's) may collect too
        if phase == "start" and not raised and threading.current_thread() is threading.main_thread():
            raised.append(phase)
            signal.raise_signal(signal.SIGINT)  # the handler runs here, inside the callback

    install_sigint()
    enabled = gc.isenabled()
    gc.disable()  # no automatic collection, in any thread, between here and the gc.collect() below
    gc.callbacks.append(callback)
    try:
        with pytest.raises(KeyboardInterrupt):
            gc.collect()
            deadline = time.monotonic() + 10
            while time.monotonic() < deadline:
                time.sleep(0.01)
    finally:
        gc.callbacks.remove(callback)
        if enabled:
            gc.enable()
        signal.signal(signal.SIGINT, previous)
    assert raised == ["start"]
    assert unraisable == []
    assert signalled()


def test_sigint_outside_a_gc_callback_interrupts_at_once():
    previous = signal.getsignal(signal.SIGINT)
    install_sigint()
    try:
        with pytest.raises(KeyboardInterrupt):
            signal.raise_signal(signal.SIGINT)
    finally:
        signal.signal(signal.SIGINT, previous)
    assert signalled()
