"""A candidate the backends refuse when they run it (an implementation limit such as
MAP-limit, not a bug) fails its check and the next candidate is checked: the search never
stops on it. Found on a padded GEMM (300 x 200 x 100), whose fastest candidate's layout
needed a mapping table over the limit on the cpu backend. The cpu backend now runs that
layout (tests/backends/test_split_padded_axis.py), so the search is shown the limit by a
backend that refuses one candidate's run, on a small padded GEMM (40 x 32 x 40, m and k
padded to 64: 88 candidates, where 300 x 224 x 100 swept 484 and ran its checks on
320 x 224 x 128, ten times the CPU); an internal error still stops the search, loudly."""

from __future__ import annotations

import numpy as np
import pytest

import npu_opt
from backends import get_backend
from driver import tune_bits
from driver.discover import load_file
from driver.synth import synthesize
from driver.tune_bits import Runs
from ir.errors import InternalError, NpuOptError
from synth import contraction
from synth.space import space_of


class _Refusing:
    def __init__(self, error: Exception) -> None:
        self.error = error

    def run(self, *_args, **_kwargs):
        raise self.error


def _spec():
    return contraction("out[m,n] = a[m,k] * w[n,k]", sizes=dict(m=64, n=64, k=64))


def test_a_candidate_refused_when_run_fails_its_check(monkeypatch) -> None:
    space = space_of(_spec(), run=True)
    runs = Runs(space, 0)
    monkeypatch.setattr(tune_bits, "get_backend", lambda name: _Refusing(NpuOptError("too big a table", code="MAP-limit")))
    verdict = runs.check(space.points()[0])
    assert verdict == "fail: it does not run: error[MAP-limit]: too big a table"


def test_an_internal_error_when_run_is_not_a_failed_check(monkeypatch) -> None:
    space = space_of(_spec(), run=True)
    monkeypatch.setattr(tune_bits, "get_backend", lambda name: _Refusing(InternalError("a bug")))
    with pytest.raises(InternalError):
        Runs(space, 0).check(space.points()[0])


class _RefusesOneRun:
    """The real backends, but the cpu backend's first run, the fastest candidate's check (a space
    with an oracle runs no golden candidate), is refused as over a mapping-table limit."""

    def __init__(self) -> None:
        self.cpu_runs = 0

    def __call__(self, name: str):
        real = get_backend(name)
        outer = self

        class _Backend:
            def run(self, kernel, inputs):
                if name == "cpu":
                    outer.cpu_runs += 1
                    if outer.cpu_runs == 1:
                        raise NpuOptError("a factor table of 2097152 cells (limit 1048576)", code="MAP-limit")
                return real.run(kernel, inputs)

        return _Backend()


def test_a_padded_gemm_whose_fastest_candidate_hits_a_backend_limit_still_synthesizes(tmp_path, monkeypatch) -> None:
    # m and k padded (40 -> 64); the fastest candidate is not the golden one, so the cpu backend's
    # second run is the fastest candidate's, refused, and the next one wins
    spec = contraction("out[m,n] = a[m,k] * w[n,k]", sizes=dict(m=40, n=32, k=40))
    monkeypatch.setattr(tune_bits, "get_backend", _RefusesOneRun())
    result = synthesize(spec, tmp_path)
    monkeypatch.undo()
    winner = result.tune.winner
    assert winner is not None and winner.checked.startswith("pass")
    refused = [c for c in result.tune.candidates if (c.checked or "").startswith("fail: it does not run")]
    assert refused, "a checked candidate the cpu backend cannot run (MAP-limit) is a failed check"
    assert all("MAP-limit" in c.checked for c in refused) and winner not in refused
    assert result.tune.ranked()[0] in refused  # the fastest candidate was the one refused
    rng = np.random.default_rng(3)
    a = rng.integers(-128, 128, (40, 40)).astype(np.int8)
    w = rng.integers(-128, 128, (32, 40)).astype(np.int8)
    want = a.astype(np.int64) @ w.astype(np.int64).T
    module, error = load_file(result.source_path)
    assert error is None, error
    kernel = getattr(module, spec.name)
    for backend in ("cpu", "visa"):
        result_host = np.zeros((64, 32), np.int32)  # the kernel's padded result, written in place
        npu_opt.run(kernel, *spec.pad(a, w), result_host, backend=backend)
        assert np.array_equal(result_host[:40].astype(np.int64), want), backend
