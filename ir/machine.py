"""The machine a kernel is checked against: a target's constants, and the ones of `rngd`.

`Constants` holds every constant of docs/machine/index.md under its name there (a target
file's `[constants]` table, tu_ops/targets/rngd.toml); `RNGD` holds the built-in `rngd`
target's. A trace rule never holds a machine number of its own: it reads `constants()`,
the constants of the target the kernel is being checked against, which the trace sets for
its duration with `checking_against(...)` (npu_opt.device) and the lowering for its own
(tu_ops.lower.api). Outside both, `constants()` is `RNGD`.
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Iterable, Iterator

import attrs

__all__ = ["Constants", "CONSTANT_NAMES", "SET_CONSTANTS", "RNGD", "constants", "checking_against"]


def _int_set(values: Iterable[int]) -> tuple[int, ...]:
    return tuple(sorted(set(values)))


@attrs.frozen(kw_only=True, cache_hash=True)
class Constants:
    """Every constant of docs/machine/index.md under its name there; sets are sorted tuples."""

    FLIT_BYTES: int
    CLUSTER_SIZES: tuple[int, ...] = attrs.field(converter=_int_set)
    SLICE_SIZES: tuple[int, ...] = attrs.field(converter=_int_set)
    LANES: tuple[int, ...] = attrs.field(converter=_int_set)
    DM_SLICE_BYTES: int
    TRF_BYTES: int
    TRF_LANE_BYTES: int
    TRF_HALF_BYTES: int
    VRF_BYTES: int
    SEQ_MAX_ENTRIES: int
    SEQ_MAX_ITER: int
    SEQ_ACCESS_BYTES: tuple[int, ...] = attrs.field(converter=_int_set)
    SUB_ACCESS_BYTES: int
    PACKET_ALIGN: int
    COMMIT_WIDTHS: tuple[int, ...] = attrs.field(converter=_int_set)
    COMMIT_BASE: int
    OUTER_PACKET_BYTES: tuple[int, ...] = attrs.field(converter=_int_set)
    ACC_COLS: int
    ACC_CELLS: int
    LANE_BUS: int
    TRF_READ_BYTES: int
    DMA_DM_ALIGN: int
    DMA_MAX_PACKET: int
    BANK_RUN_LIMIT: int


CONSTANT_NAMES: tuple[str, ...] = tuple(f.name for f in attrs.fields(Constants))
SET_CONSTANTS = frozenset({"CLUSTER_SIZES", "SLICE_SIZES", "LANES", "SEQ_ACCESS_BYTES",
                           "COMMIT_WIDTHS", "OUTER_PACKET_BYTES"})

# docs/machine/index.md: one RNGD chip (tu_ops/targets/rngd.toml holds the same numbers; a test compares them)
RNGD = Constants(
    FLIT_BYTES=32, CLUSTER_SIZES=(1, 2), SLICE_SIZES=(64, 128, 256), LANES=(1, 2, 4, 8),
    DM_SLICE_BYTES=524_288, TRF_BYTES=65_536, TRF_LANE_BYTES=8_192, TRF_HALF_BYTES=32_768,
    VRF_BYTES=8_192, SEQ_MAX_ENTRIES=8, SEQ_MAX_ITER=65_536, SEQ_ACCESS_BYTES=(1, 2, 4, 8, 16, 32),
    SUB_ACCESS_BYTES=8, PACKET_ALIGN=8, COMMIT_WIDTHS=(8, 16, 24, 32), COMMIT_BASE=8,
    OUTER_PACKET_BYTES=(32, 64), ACC_COLS=32, ACC_CELLS=1_024, LANE_BUS=8, TRF_READ_BYTES=64,
    DMA_DM_ALIGN=8, DMA_MAX_PACKET=4_096, BANK_RUN_LIMIT=64,
)

_ACTIVE: contextvars.ContextVar[Constants] = contextvars.ContextVar("npu_opt_machine", default=RNGD)


def constants() -> Constants:
    """The constants of the target being checked against (`RNGD` outside a trace or lowering)."""
    return _ACTIVE.get()


@contextlib.contextmanager
def checking_against(consts: Constants | None) -> Iterator[Constants]:
    """Rules read `consts` (None: `RNGD`) inside this block, on this thread."""
    token = _ACTIVE.set(consts if consts is not None else RNGD)
    try:
        yield _ACTIVE.get()
    finally:
        _ACTIVE.reset(token)
