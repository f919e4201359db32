"""The `cpu` backend: executes the traced IR with the chip's exact semantics, bit for bit.

Modules: `layout` (buffer shapes and storage), `moves` (the logical-index move of
docs/machine/index.md), `adapters` (element-wise conversions), `contract` (the Contraction
Engine; `contract_fast`, `contract_plan` and `contract_float` its whole-contraction
path), `executor` (the op walk), `host` (host arrays in and out), `options` (how the
backend evaluates, `CpuOptions`), `arena` (a run's large scratch buffers, kept for the next run;
`scratch` gives a dead value's back to it; `run_memo` keeps results computed from a buffer's
unchanged contents for the rest of the run),
`compact` and `compact_moves` (values of few live slices held as those rows only).
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Sequence
from typing import Any

import attrs
import numpy as np

from ir.boundary import Traceable
from ir.errors import CompileError
from ir.kernel import Kernel, TraceResult
from tu_ops.target import TargetLike

from backends import inout
from backends.typecheck import TypecheckBackend
from backends.cpu import arena, heap_trim, host
from backends.cpu.executor import execute_inout, run_blas_limit
from backends.cpu.options import DEFAULT, CpuOptions
from backends.cpu import (  # noqa: F401 - the modules that declare handlers (backends.cpu.handlers)
    adapters, contract, engines, fetch_lift, gather, redistribute, runtime,
    valid_count, vector, views,
)

__all__ = ["CpuBackend", "CpuOptions"]


_TUPLE = object()
"""The key, beside the targets, of a kernel's `returns_tuple` answer in `CpuBackend._traces`."""
_MISSING = object()


def _in_place(params: Sequence[Any], flat: Sequence[Any], buffers: Sequence[np.ndarray]) -> frozenset[int]:
    """The in-out HBM parameters whose buffer is a view of the caller's array itself (which
    `inout.finish` writes the final into anyway), sharing memory with no other argument:
    their buffers made writeable, for the executor to write in place (`execute_inout`)."""
    found = set()
    for k, (p, array, buf) in enumerate(zip(params, flat, buffers)):
        if not p.mutable or p.result.type.kind != "hbm" or not isinstance(array, np.ndarray) \
                or not isinstance(buf, np.ndarray) or buf.flags.writeable or not np.shares_memory(buf, array) \
                or any(j != k and isinstance(other, np.ndarray) and np.may_share_memory(array, other)
                       for j, other in enumerate(flat)):
            continue
        try:
            buf.flags.writeable = True
        except ValueError:  # a view the caller's array does not let write
            continue
        found.add(k)
    return frozenset(found)


def _finals(finals: Sequence[np.ndarray], kernel: Kernel, mutable: Sequence[int], inplace: frozenset[int],
            outs: Sequence[tuple[str, Any]]) -> tuple[np.ndarray, ...]:
    """The host arrays of the in-out finals, read in place (`finish` copies them into the
    caller's arrays), but copied for one reading a caller's array that an earlier write may
    change: any but its own, when written in place."""
    written = []
    for i, (buf, f, k) in enumerate(zip(finals, kernel.finals, mutable)):
        copy = any(np.may_share_memory(buf, out) for j, (_, out) in enumerate(outs) if not (j == i and k in inplace))
        written.append(host.from_buffer(buf, f.value.type, copy=copy))
    return tuple(written)


class CpuBackend:
    """Trace, refuse on any [T] error, then execute on numpy buffers (docs/testing.md).

    The trace of a kernel is kept per target for as long as the kernel object lives, so
    repeated `run` calls trace once (a trace reads no data). Runs may come from several
    threads at once: the first runs of a kernel trace it once, under `_lock`, and each
    run takes its own scratch arena."""

    name = "cpu"
    executes = True

    def __init__(self, options: CpuOptions = DEFAULT) -> None:
        self.options = options
        self._traces: weakref.WeakKeyDictionary[Any, dict[Any, Any]] = weakref.WeakKeyDictionary()
        self._arenas: list[arena.Arena] = []  # idle scratch of earlier runs (backends/cpu/arena.py)
        self._lock = threading.RLock()  # fills `_traces` (a trace may run a kernel: reentrant)

    def _kept(self, kernel: Any, key: Any, make: Any) -> Any:
        """`make()`, kept in `_traces[kernel][key]`: made once however many threads ask at
        once; a kernel that is not weak-referenceable or an unhashable key is not kept."""
        try:
            found = self._traces.get(kernel, {}).get(key, _MISSING)
        except TypeError:  # not weak-referenceable or an unhashable key: no cache
            return make()
        if found is not _MISSING:
            return found
        with self._lock:
            per_kernel = self._traces.setdefault(kernel, {})
            if key not in per_kernel:
                per_kernel[key] = make()
            return per_kernel[key]

    diagnostics = TypecheckBackend.diagnostics  # the trace's refusals and warnings, as the typecheck backend's

    def run(self, kernel: Traceable, arrays: Sequence[Any], target: TargetLike = "rngd", *,
            numerics: str | None = None) -> Any:
        """Results as host arrays, then the in-out arrays written in place (`backends.inout`).
        `numerics` overrides `CpuOptions.numerics` for this run ("chip" or "reference")."""
        options = self.options if numerics is None else attrs.evolve(self.options, numerics=numerics)
        traced: list[bool] = []  # traced in this call: the kernel's first run here (backends/cpu/heap_trim.py)
        result: TraceResult = self._kept(kernel, target, lambda: traced.append(True) or kernel.trace(target))
        if result.errors:
            raise CompileError(result.errors)
        params = result.kernel.params
        call = inout.prepare(kernel, [(p.name, p.result.type, p.mutable) for p in params], arrays, target)
        buffers = [host.to_buffer(p, a) for p, a in zip(params, call.flat)]
        inplace = _in_place(params, call.flat, buffers)
        ret = result.kernel.returns
        scratch = self._arenas.pop() if self._arenas else arena.Arena()  # one per concurrent run
        try:
            with arena.scope(scratch), heap_trim.first_run(bool(traced)), run_blas_limit(result.kernel, options):
                # from_buffer copies every result out of the scratch; BLAS limited once for the run's matmuls
                outputs, finals = execute_inout(result.kernel, buffers, options, inplace)
                values = tuple(host.from_buffer(buf, v.type) for buf, v in zip(outputs, ret.values)) if ret else ()
                written = _finals(finals, result.kernel, [k for k, p in enumerate(params) if p.mutable], inplace,
                                  call.outs)
                as_tuple = self._kept(kernel, _TUPLE, lambda: host.returns_tuple(kernel))  # it reads the signature
                done = inout.finish(call, values, written, as_tuple)
                del outputs, finals, written
        finally:
            self._arenas.append(scratch)
        return done
