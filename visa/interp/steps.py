"""How the walker finds what runs a TU program record: a table keyed by mnemonic, filled by declaration.

Each executing module declares, next to its handler, `@executes("mnemonic")` on a step
`(ops, i, state) -> int` that runs the record `ops[i]` (and any records it runs together
with it) on the program's `ProgramState` and returns how many records it ran. The walker,
which reads the table, imports every module that declares a step, so a new engine adds one
declaration in its own module and one import in visa/interp/walker.py.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import attrs

from ir.declare import Table
from ir.stage_spec import spec_named
from visa.interp.errors import check
from visa.interp.memory import Memory
from visa.interp.rows import Rows
from visa.interp.shortcuts import Held

__all__ = ["ProgramState", "Step", "STEPS", "executes", "runs"]


@attrs.define
class ProgramState:
    """One TU program as it runs: its live slices, the memory, the kernel's environment
    (HBM, DM and TRF tensors by value id) and the program's own streams by value id."""

    rows: Rows
    mem: Memory
    env: dict[int, Any]
    local: dict[int, Any] = attrs.field(factory=dict)

    def input(self, ref: Any, op: Any, repeated: bool = False, front: bool = False, strided: bool = False) -> Any:
        """The stream `ref` of this program that `op` reads; one a shortcut holds (`Held`:
        visa/interp/fast/repeated.py's `Repeated`, visa/interp/fast/lanes.py's `Front`,
        visa/interp/fast/lane_view.py's `LaneView`) as it is held when the reader takes that
        form (`repeated`, `front`, `strided`), else written out (once)."""
        value = self.local.get(ref.id)
        if value is None:
            check(False, f"input {ref} is not a stream of this program", op)
        if isinstance(value, Held) and value.KIND not in ("repeated" if repeated else "", "front" if front else "",
                                                          "strided" if strided else ""):
            value = self.local[ref.id] = value.materialize()
        return value


Step = Callable[[list[Any], int, ProgramState], int]


def _stage_step(mnemonic: Any) -> tuple[Step, dict[str, Any]] | None:
    """A declared stage's step (ir.stage_spec): its `run` on the stream's live rows."""
    spec = spec_named(mnemonic) if isinstance(mnemonic, str) else None
    if spec is None:
        return None

    def step(ops: list[Any], i: int, state: ProgramState) -> int:
        op = ops[i]
        out, t = spec.run(op, state.input(op.input, op)), op.output_type
        check(out.shape[1:] == (t.time.size, t.packet.size), f"the record produces {out.shape[1:]} steps x "
              f"cells, its output stream is ({t.time.size}, {t.packet.size})", op)
        state.local[op.result.id] = out
        return 1

    return step, {}


# filled by the modules visa.interp.walker imports
STEPS = Table("interpreter step", package="visa.interp", derive=_stage_step)


def executes(mnemonic: str) -> Callable[[Step], Step]:
    """Declare `fn` as the step that runs records of kind `mnemonic`."""
    return STEPS.declare(mnemonic)


def runs(mnemonic: str, env: bool = False) -> Callable[[Callable[[Any, ProgramState], Any]], Step]:
    """Declare `fn(op, state)`, which runs one record of kind `mnemonic` and returns its value,
    as that kind's step: the value is the program's stream `op.result` (`env`: a tensor of the
    kernel's environment, which a program's sink makes)."""

    def declare(fn: Callable[[Any, ProgramState], Any]) -> Step:
        @functools.wraps(fn)
        def step(ops: list[Any], i: int, state: ProgramState) -> int:
            (state.env if env else state.local)[ops[i].result.id] = fn(ops[i], state)
            return 1

        return executes(mnemonic)(step)

    return declare
