"""`tune --scheduler`'s probe (driver/tune_exec.py `_Probe`) run in a fresh process of one
thread, as the command line runs it (a test process runs other threads, and the probe forks
only without them)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

PROBE = """
import sys, time
from dask.distributed import Client
from driver import tune_exec
from ir.errors import NpuOptError
tune_exec.CONNECT_TIMEOUT = 2.0
tune_exec.PROBE_GRACE = float(sys.argv[2])
probe = tune_exec._Probe(sys.argv[1], Client)
start = time.monotonic()
try:
    probe.answered(block=True)
    print("answered", probe.forked)
except NpuOptError as e:
    print(e.code, probe.forked, round(time.monotonic() - start), e)
"""


def probe_in_a_fresh_process(address: str, grace: float = 10.0) -> str:
    """`_Probe(address).answered()` in a process of one thread, as the command line runs it,
    with a connect timeout of 2 s and the child killed `grace` seconds after it."""
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).parents[2])}
    done = subprocess.run([sys.executable, "-c", PROBE, address, str(grace)], capture_output=True, text=True, env=env, timeout=60)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()
