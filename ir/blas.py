"""The process's BLAS thread pool, limited while a matmul-heavy block runs (shared by the
cpu backend and the VISA interpreter; threadpoolctl is imported on first use: most
commands never call BLAS).

Blocks that overlap (runs on several threads) share the limit the first of them set, and
the last one to leave restores the pool as it was before the first: a limit each block
set and restored on its own could leave the pool limited for the rest of the process.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Iterator
from typing import Any
from contextlib import contextmanager
from threadpoolctl import ThreadpoolController

__all__ = ["blas_threads"]

_CONTROLLER = None
_CONTROLLER_MODULES = -1  # len(sys.modules) when _CONTROLLER scanned the loaded libraries
_LIMIT_LOCK = threading.Lock()
_LIMIT: list = [0, None]  # blocks inside `blas_threads` now, and the threadpoolctl limiter they share


@contextmanager
def blas_threads(limit: int | None) -> Iterator[None]:
    """The BLAS thread pool limited to `limit` threads inside the block (None: as it is)."""
    if limit is None:
        yield
        return
    with _LIMIT_LOCK:
        if _LIMIT[0] == 0:
            _LIMIT[1] = _limiter(limit)
        _LIMIT[0] += 1
    try:
        yield
    finally:
        with _LIMIT_LOCK:
            _LIMIT[0] -= 1
            if _LIMIT[0] == 0:
                limiter, _LIMIT[1] = _LIMIT[1], None
                limiter.restore_original_limits()


class _AsItIs:
    """The limiter of a block whose limit every BLAS pool already has: nothing to restore."""

    @staticmethod
    def restore_original_limits() -> None:
        return None


def _limiter(limit: int) -> Any:
    """A threadpoolctl limiter of the BLAS pools at `limit` threads, or `_AsItIs` when every
    one of them has that many already (asking costs ~1 us; limiting and restoring ~75)."""
    controller = _controller()
    pools = [lib for lib in controller.lib_controllers if lib.user_api == "blas"]
    if all(lib.get_num_threads() == limit for lib in pools):
        return _AsItIs()
    return controller.limit(limits=limit, user_api="blas")


def _controller() -> ThreadpoolController:
    """The BLAS libraries loaded now. A library loaded after the last scan (an extension module
    imported since, bringing its own BLAS) would escape the limit, so the scan (about 2 ms) is
    made again whenever the process has imported a module since."""
    global _CONTROLLER, _CONTROLLER_MODULES
    if _CONTROLLER is None or _CONTROLLER_MODULES != len(sys.modules):
        _CONTROLLER, _CONTROLLER_MODULES = ThreadpoolController(), len(sys.modules)
    return _CONTROLLER
