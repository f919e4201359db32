"""Two threads for the one large integer matmul of a contraction (`ir.exact_sum`'s `parallel`):
the interpreter's wall time on a broadcast GEMM, whose distinct rows make one matmul, next to
the cpu backend's, which splits its parts between threads too. Each half writes its own rows,
so the sums are the same bits; BLAS stays on one thread inside each (the caller's limit)."""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

__all__ = ["run_halves"]

_POOL: list[ThreadPoolExecutor] = []


def run_halves(tasks: list[Callable[[], object]]) -> None:
    """Run `tasks`: the last on the calling thread, the others on a helper thread."""
    if not _POOL:
        _POOL.append(ThreadPoolExecutor(max_workers=1, thread_name_prefix="visa-interp-halves"))
    pending = [_POOL[0].submit(task) for task in tasks[:-1]]
    tasks[-1]()
    for done in pending:
        done.result()
