"""The runs behind `npu-opt tune`'s checks: candidates against the oracle, and their bits
against each other's (driver/tune.py).

`Runs(space, seed)` runs candidates on `space.inputs(numpy.random.default_rng(seed))`, each
candidate once per backend, keeping its results for the comparisons that follow:
- `check(params)`: the cpu backend and the VISA interpreter must agree bit for bit, both
  must match the oracle (integers exactly, floats within the space's rtol / atol), and, in
  an exact space, the cpu results must have the bits of the golden candidate's.
- `compare_bits(runs, a, b)`: "same", or "other: " and how many values of which result
  differ. Two candidates that tie on makespan may still sum floats in another order
  (another packet, a split contraction): the tuner reports it for the winner.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from backends import get_backend
from ir.errors import InternalError, NpuOptError
from npu_opt.tune import Space

__all__ = ["Runs", "compare_bits"]


def _key(params: dict[str, Any]) -> tuple[tuple[str, str], ...]:
    return tuple((k, repr(v)) for k, v in params.items())


def _results(got: Any) -> tuple[np.ndarray, ...]:
    return tuple(np.asarray(x) for x in (got if isinstance(got, tuple) else (got,)))


def _bytes(a: np.ndarray) -> bytes:
    return np.ascontiguousarray(a).tobytes()


def _differing(a: np.ndarray, b: np.ndarray) -> int:
    """How many values of two arrays of one shape and dtype differ in some bit."""
    width = a.dtype.itemsize
    a8 = np.ascontiguousarray(a).view(np.uint8).reshape(-1, width)
    b8 = np.ascontiguousarray(b).view(np.uint8).reshape(-1, width)
    return int(np.any(a8 != b8, axis=1).sum())


def bits_differ(got: tuple[np.ndarray, ...], want: tuple[np.ndarray, ...]) -> str | None:
    """None when `got` has exactly the bits of `want`, else what differs."""
    if len(got) != len(want):
        return f"{len(got)} result(s) against {len(want)}"
    for k, (g, w) in enumerate(zip(got, want)):
        if g.shape != w.shape or g.dtype != w.dtype:
            return f"result {k} is {g.dtype}{list(g.shape)}, not {w.dtype}{list(w.shape)}"
        if _bytes(g) != _bytes(w):
            return f"result {k}: {_differing(g, w)} of {g.size} values differ"
    return None


def _agrees(got: np.ndarray, want: np.ndarray, space: Space) -> bool:
    if got.shape != want.shape:
        return False
    if space.rtol == 0 and space.atol == 0:
        return bool(np.array_equal(got, want))
    return bool(np.allclose(got.astype(np.float64), want.astype(np.float64), rtol=space.rtol, atol=space.atol))


class Runs:
    """Candidates of `space` run on one set of inputs, each at most once per backend."""

    def __init__(self, space: Space, seed: int) -> None:
        self.space, self.seed = space, seed
        self._done: dict[tuple[str, tuple[tuple[str, str], ...]], tuple[np.ndarray, ...]] = {}
        self._want: tuple[np.ndarray, ...] | None = None
        self._refused: dict[tuple[str, tuple[tuple[str, str], ...]], NpuOptError] = {}

    def _fresh(self) -> tuple[Any, ...]:  # every run gets its own arrays: in-out results are written in place
        return tuple(self.space.inputs(np.random.default_rng(self.seed)))

    def results(self, params: dict[str, Any], backend: str = "cpu") -> tuple[np.ndarray, ...]:
        """The candidate's results on `backend`; a refusal when it runs (an NpuOptError other
        than an internal error: a backend's limit) is raised again without a second run."""
        key = (backend, _key(params))
        if key in self._refused:
            raise self._refused[key]
        if key not in self._done:
            kernel, inputs = self.space.factory(**params), self._fresh()  # the user's code: its errors are its own
            try:
                self._done[key] = _results(get_backend(backend).run(kernel, inputs))
            except InternalError:
                raise
            except NpuOptError as e:
                self._refused[key] = e
                raise
        return self._done[key]

    def refused(self, params: dict[str, Any]) -> bool:
        """Whether a backend refused to run the candidate (`results` raised its refusal)."""
        return any((backend, _key(params)) in self._refused for backend in ("cpu", "visa"))

    def golden(self) -> tuple[np.ndarray, ...]:
        """The golden candidate's cpu results (USAGE when it does not build or run)."""
        params = self.space.golden_point()
        try:
            return self.results(params)
        except Exception as e:  # noqa: BLE001 - the space names a golden candidate that cannot run
            raise NpuOptError(f"the golden candidate ({_label(params)}) does not run: {type(e).__name__}: {e}",
                              code="USAGE") from e

    def check(self, params: dict[str, Any]) -> str:
        """"pass", or "fail: " and what differed (see the module docstring)."""
        golden = self.golden() if self.space.exact else None
        try:
            cpu, visa = self.results(params, "cpu"), self.results(params, "visa")
        except InternalError:
            raise
        except NpuOptError as e:  # refused when run (a limit of a backend): the next candidate is checked
            if not self.refused(params):  # not a backend's refusal: the user's factory or inputs
                raise
            return f"fail: it does not run: {_refusal(e)}"
        if self.space.oracle is not None:
            if self._want is None:
                self._want = _results(self.space.oracle(*self._fresh()))
            if len(cpu) != len(self._want):
                return f"fail: the kernel gives {len(cpu)} result(s), the oracle {len(self._want)}"
        for k, (c, v) in enumerate(zip(cpu, visa)):
            if bits_differ((c,), (v,)) is not None:
                return f"fail: result {k}: the cpu backend and the VISA interpreter differ"
            if self._want is not None and not _agrees(c, self._want[k], self.space):
                return f"fail: result {k} differs from the oracle"
        if golden is not None:
            why = bits_differ(cpu, golden)
            if why is not None:
                return f"fail: other bits than the golden candidate ({why})"
        return "pass"


def _label(params: dict[str, Any]) -> str:
    return ", ".join(f"{k}={v!r}" for k, v in params.items())


def compare_bits(runs: Runs, a: dict[str, Any], b: dict[str, Any]) -> str:
    """"same" when candidates `a` and `b` give the same bits on the cpu backend, else "other: "
    and what differs."""
    try:
        why = bits_differ(runs.results(b), runs.results(a))
    except InternalError:
        raise
    except NpuOptError as e:  # the other candidate does not run (the winner did)
        if not runs.refused(b):
            raise
        return f"other: it does not run: {_refusal(e)}"
    return "same" if why is None else f"other: {why}"


def _refusal(e: NpuOptError) -> str:
    """`error[CODE]: ` and the first line of the refusal's message."""
    lines = str(e).splitlines()
    return f"error[{e.code}]: {lines[0]}" if lines else f"error[{e.code}]"
