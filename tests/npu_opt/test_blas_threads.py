"""BLAS-free commands start numpy's OpenBLAS with one thread (driver/cli.py `_one_blas_thread`)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from driver import cli


def _subcommands() -> set[str]:
    parser = cli.build_parser()
    (sub,) = [a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction"]
    return set(sub.choices)


def test_every_command_says_whether_it_uses_blas():
    """A new command must be put in `_BLAS_FREE` or `_USES_BLAS`, never in both."""
    assert not cli._BLAS_FREE & cli._USES_BLAS
    assert _subcommands() == cli._BLAS_FREE | cli._USES_BLAS


def _threads_after(words: list[str], preset: str | None) -> str:
    env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_NUM_THREADS"}
    if preset is not None:
        env["OPENBLAS_NUM_THREADS"] = preset
    code = ("import os, sys\n"
            "from driver.cli import _one_blas_thread\n"
            f"_one_blas_thread({words!r})\n"
            "print(os.environ.get('OPENBLAS_NUM_THREADS'), 'numpy' in sys.modules)\n")
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    return done.stdout.strip()


@pytest.mark.parametrize("words, preset, want", [
    (["compile", "x.py"], None, "1 False"),   # numpy not loaded yet, and the command never uses BLAS
    (["check", "x.py"], "3", "3 False"),      # the user's own choice stays
    (["run", "x.py"], None, "None False"),    # a command that runs the cpu backend keeps the default pool
    ([], None, "None False"),
])
def test_one_thread_only_for_blas_free_commands(words, preset, want):
    assert _threads_after(words, preset) == want
