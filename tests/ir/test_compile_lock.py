"""The cross-process lock around compiling a new kernel signature (ir/exact_kernels/compile_lock.py).

Two processes reaching the same new signature at once: the second waits for the first's
compile and loads its cache entry (numba's dispatcher counts a cache hit and no miss). A
compiled signature's call never takes the lock; a lock that cannot be had (held past the
wait, a folder that cannot be written) leaves the compile unlocked; a holder that dies
lets the lock go.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from ir.exact_kernels import compile as kernels_compile
from ir.exact_kernels import compile_lock

pytest.importorskip("fcntl")


@pytest.fixture(autouse=True)
def _numba() -> None:
    """numba, or the test skips: asked here, not at the top, so that collecting this file
    does not load numba in every worker (which makes every float contraction there compile)."""
    pytest.importorskip("numba")

ROOT = Path(__file__).resolve().parents[2]
KERNEL = "def add(a, b):\n    return a + b\n"


def _tiny(numba, monkeypatch, tmp_path: Path):
    """A one-line kernel from a file of its own, cached under tmp_path/cache."""
    monkeypatch.setattr(numba.config, "CACHE_DIR", str(tmp_path / "cache"))
    source = tmp_path / "tiny_kernel.py"
    source.write_text(KERNEL)
    spec = importlib.util.spec_from_file_location("tiny_kernel", source)
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, "tiny_kernel", module)   # numba's cache entry names the kernel's module
    spec.loader.exec_module(module)
    return kernels_compile.njit(numba, module.add)


# The second process: the same kernel from the same file and cache folder, called once; the
# first pause of a lock wait touches `waiting` (it found the lock held). A process of its own
# (not a fork: the worker may run threads), so it pays numba's import, ~1 CPU-s.
SECOND = """
import importlib.util, json, sys, time
from pathlib import Path
from ir.exact_kernels import compile as kernels_compile
cache, source, waiting = sys.argv[1:4]
numba = kernels_compile.numba()
numba.config.CACHE_DIR = cache
spec = importlib.util.spec_from_file_location("tiny_kernel", source)
module = sys.modules["tiny_kernel"] = importlib.util.module_from_spec(spec)
spec.loader.exec_module(module)
add = kernels_compile.njit(numba, module.add)
pause = time.sleep
def noted(seconds):
    Path(waiting).touch()
    pause(seconds)
time.sleep = noted
got = add(2, 3)
print(json.dumps([got, sum(add.stats.cache_hits.values()), sum(add.stats.cache_misses.values())]))
"""


def test_the_second_process_waits_for_the_first_compile_and_loads_it(monkeypatch, tmp_path):
    """A second process calls the kernel while this one compiles it: it finds the lock
    held, and once this compile ends it loads the entry (a cache hit, no miss)."""
    numba = kernels_compile.numba()
    add = _tiny(numba, monkeypatch, tmp_path)
    waiting = tmp_path / "waiting"
    second: list[subprocess.Popen] = []

    class StartSecondMidCompile(numba.core.event.Listener):
        """While this process compiles `add` (holding its lock), start the second and go on
        once it has found the lock held (or has exited)."""

        def on_start(self, event):
            if event.data["dispatcher"] is add and not second:
                second.append(subprocess.Popen(
                    [sys.executable, "-c", SECOND, str(tmp_path / "cache"), str(tmp_path / "tiny_kernel.py"),
                     str(waiting)], cwd=ROOT, stdout=subprocess.PIPE, text=True))
                while not waiting.exists() and second[0].poll() is None:
                    time.sleep(0.01)

        def on_end(self, event):
            pass

    with numba.core.event.install_listener("numba:compile", StartSecondMidCompile()):
        assert add(2, 3) == 5
    out, _ = second[0].communicate(timeout=300)
    assert second[0].returncode == 0
    assert (sum(add.stats.cache_misses.values()), sum(add.stats.cache_hits.values())) == (1, 0)
    assert waiting.exists()   # the second found the lock held ...
    assert json.loads(out) == [5, 1, 0]   # ... and loaded the first's entry: one hit, nothing compiled


def test_a_compiled_signature_never_takes_the_lock_and_a_held_lock_times_out(monkeypatch, tmp_path):
    numba = kernels_compile.numba()
    add = _tiny(numba, monkeypatch, tmp_path)
    assert add(2, 3) == 5
    path = compile_lock.lock_path(add)
    assert path is not None and tmp_path / "cache" in path.parents
    monkeypatch.setattr(compile_lock, "WAIT_MAX", 0.05)
    before = compile_lock.WAITED[0]
    with compile_lock.hold(path) as held:   # another holder (a second file description of this process)
        assert held
        assert add(4, 5) == 9 and compile_lock.WAITED[0] == before   # compiled already: no lock asked
        assert add(1.5, 2.0) == 3.5 and compile_lock.WAITED[0] == before + 1   # waited, then compiled anyway
    assert sum(add.stats.cache_misses.values()) == 2


def test_an_unwritable_folder_leaves_the_block_unlocked(tmp_path):
    plain_file = tmp_path / "not_a_folder"
    plain_file.write_text("")
    ran = False
    with compile_lock.hold(plain_file / "k-1.lock", wait=0) as held:
        ran = True
    assert ran and not held


def test_a_dead_holder_lets_the_lock_go(tmp_path):
    path = tmp_path / "k-1.lock"
    holder = subprocess.Popen(
        [sys.executable, "-c",
         "import fcntl, os, sys, time\n"
         "fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT)\n"
         "fcntl.flock(fd, fcntl.LOCK_EX)\nprint('held', flush=True)\ntime.sleep(120)\n", str(path)],
        stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        with compile_lock.hold(path, wait=0) as held:
            assert not held
    finally:
        holder.kill()
        holder.wait()
    with compile_lock.hold(path, wait=30) as held:
        assert held


def test_a_child_forked_while_the_lock_is_held_does_not_keep_it(tmp_path):
    """A fork copies the holder's open lock file, and a lock lasts while any process keeps
    its file open: the child closes its copy, so the lock goes when the holder lets it go."""
    path = tmp_path / "k-1.lock"
    go_read, go_write = os.pipe()
    up_read, up_write = os.pipe()
    with compile_lock.hold(path) as held:
        assert held
        pid = os.fork()
        if pid == 0:   # the child says it runs (fork's hooks have run), then waits until told
            os.write(up_write, b"u")
            os.read(go_read, 1)
            os._exit(0)
        assert os.read(up_read, 1) == b"u"
    try:
        with compile_lock.hold(path, wait=0) as again:
            assert again
    finally:
        os.write(go_write, b"g")
        os.waitpid(pid, 0)
        for fd in (go_read, go_write, up_read, up_write):
            os.close(fd)
