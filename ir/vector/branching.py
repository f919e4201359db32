"""Tags and branched operands as data: the encoding the `vector_branch` record prints, and the
step both backends run (so cpu and the interpreter agree bit for bit).

A tag guard is `(mask, want, neg)`: it admits an execution id `e` when
`((e & mask) == want) != neg` (bit i of `mask` set where the pattern's BitReq i is not
IGNORE, of `want` where it is ONE). A comparison is `(name, bound)`, the bound an i32 value
or the bit pattern of an f32. A branched step runs `op(x, value_k)` on an element whose id
the guard of slot k admits first; an element no slot admits keeps its value.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ir.vector.branch import BranchedOperand, TagGuard, comparison_ids
from ir.vector.enums import BitReq, Cmp
from ir.vector.numerics.steps import f32_bits, mode_enum, run_step
from ir.vector.numerics.unit_runs import run_elementwise
from ir.vector.operands import Constant, Stash, TernaryOperand, rf_port
from ir.vector.units import spec_of

__all__ = ["guard_code", "guard_of", "cmp_code", "cmp_of", "admits", "branch_step", "tag_ids", "rf_port",
           "stash_step"]


def guard_code(guard: TagGuard) -> tuple[int, int, int]:
    """(mask, want, neg) of a guard."""
    mask = sum(1 << i for i, b in enumerate(guard.bits) if b != BitReq.IGNORE)
    want = sum(1 << i for i, b in enumerate(guard.bits) if b == BitReq.ONE)
    return mask, want, int(guard.negated)


def guard_of(mask: int, want: int, neg: int) -> TagGuard:
    """The guard of a (mask, want, neg) code (the inverse of `guard_code` for a valid code)."""
    bits = tuple(BitReq.IGNORE if not (mask >> i) & 1 else (BitReq.ONE if (want >> i) & 1 else BitReq.ZERO)
                 for i in range(4))
    return TagGuard(bits, bool(neg))


def admits(mask: int, want: int, neg: int, ids: np.ndarray) -> np.ndarray:
    return ((ids.astype(np.int64) & mask) == want) != bool(neg)


def cmp_code(cmp: Cmp) -> tuple[str, int]:
    """(name, bound) of a comparison; the bound of an f32 comparison is its bit pattern."""
    if not cmp.values:
        return cmp.name, 0
    b = cmp.values[0]
    return cmp.name, f32_bits(b) if isinstance(b, np.float32) else int(b)


def cmp_of(name: str, bound: int, scalar: str) -> Cmp:
    """The comparison of a (name, bound) code on a stream of `scalar`."""
    ctor = getattr(Cmp, name)
    if name in ("TRUE", "FALSE"):
        return ctor
    value = float(np.array(bound, np.uint32).view(np.float32)) if scalar == "f32" else bound
    return ctor(value)


def tag_ids(values: np.ndarray, cmps: tuple[tuple[str, int], ...], scalar: str) -> np.ndarray:
    """Execution ids of stored values (int32, or uint32 bits for f32): 0 without comparisons."""
    if not cmps:
        return np.zeros(values.shape, np.uint8)
    typed = values.view(np.float32) if scalar == "f32" else values
    return comparison_ids(typed, tuple(cmp_of(n, b, scalar) for n, b in cmps))


def branch_step(unit: str, op: str, values: np.ndarray, ids: np.ndarray,
                slots: tuple[tuple[int, int, int, int], ...], port: tuple | None = None,
                mode: str = "DEFAULT", stash: bool = False) -> np.ndarray:
    """The step with branched operands: slot k is (mask, want, neg, value), first match wins;
    `port` is the register-file slot after them, (mask, want, neg, operand) with `operand`
    one stored value per cell: a VRF tensor's (the `_RF` form of the unit runs there), or with
    `stash` the stashed stream's (`stash_step`). `mode` is read by every slot."""
    ids = follow_way(ids, values.shape)
    out = np.array(values, copy=True)
    taken = np.zeros(ids.shape, bool)
    for mask, want, neg, value, *arg1 in slots:  # FMA_F's slots carry their `c` (f32 bits) too
        hit = admits(mask, want, neg, ids) & ~taken
        if hit.any():
            out = np.where(hit, run_step(unit, op, value, values, mode, *arg1), out)
        taken |= hit
    if port is not None:
        hit = admits(*port[:3], ids) & ~taken
        if hit.any():
            read = (stash_step(unit, op, mode, (*port[4:], 0)[0], values, port[3]) if stash else
                    run_step(f"{unit}_RF", op, 0, values, operand=port[3]))
            out = np.where(hit, read, out)
    return out


def stash_step(unit: str, op: str, mode: str, arg1: int, values: np.ndarray, stashed: np.ndarray) -> np.ndarray:
    """The step reading the stash (stored values, shaped like the stream) where a constant
    operand would be: binary `op(stream, stashed)` under `mode` (a BinaryArgMode name, 0 the
    stream and 1 the stash; `DEFAULT` is MODE01), or `FMA_F(stream, stashed, c)` under a
    TernaryArgMode, `c` the f32 bits `arg1` (one rounding)."""
    spec = spec_of(unit)
    operands = (stashed, arg1)[:spec.arity - 1]
    out = run_elementwise(spec.fn(op), spec.arity, spec.scalar_in, values, mode_enum(mode), operands)
    return np.array(np.broadcast_to(out, values.shape))


def follow_way(ids: np.ndarray, shape: tuple) -> np.ndarray:
    """The execution ids (taken on the 8-way stream at the tag, `(..., T, 8)`) of the cells of a
    stream shaped `shape`: a trim keeps each flit's front four cells (`(..., T, 4)` on cpu); a
    split puts the front four, then the back four, on consecutive steps (`(..., 2T, 4)` on cpu,
    `(..., 2T, 8)` with the cells in the front lanes in the interpreter)."""
    shape = tuple(shape)
    if ids.shape == shape:
        return ids
    *lead, t, p = ids.shape
    if p == 8 and shape[-2] == t and shape[-1] == 4:
        return ids[..., :4]
    if p == 8 and shape[-2] == 2 * t:
        halves = ids.reshape(*lead, 2 * t, 4)
        if shape[-1] == 4:
            return halves
        out = np.zeros((*lead, 2 * t, p), ids.dtype)
        out[..., :4] = halves
        return out
    return ids


def layout_text(layout: Any) -> str:
    """`mask:want:neg=value; ...` of a branched operand's slots (the IR text form)."""
    def text(c: Any) -> str:
        if type(c).__name__ == "TernaryOperand":  # FMA_F's (operand, c)
            return f"{text(c.rhs)},{c.operand1.value!r}"
        return repr(c.value) if hasattr(c, "value") else ("stash" if type(c).__name__ == "StashOperand" else "rf")

    return "; ".join(f"{m}:{w}:{n}={text(c)}" for (m, w, n), c in ((guard_code(g), c) for g, c in layout.slots()))


def layout_of(value: Any) -> Any:
    """A BranchedOperand from itself or from its `layout_text`."""
    if not isinstance(value, str):
        return value
    regs, port = [], None
    def read(number: str) -> Any:
        if number in ("rf", "stash"):  # the register-file slot: the op's `rf` tensor, or the stash
            return rf_port() if number == "rf" else Stash
        v = float(number) if any(ch in number for ch in ".eEn") else int(number)
        return Constant(v, "f32" if isinstance(v, float) else "i32")

    for part in filter(None, (p.strip() for p in value.split(";"))):
        code, _, number = part.partition("=")
        m, w, n = (int(x) for x in code.split(":"))
        first, _, c = number.partition(",")
        source = read(first) if not c else TernaryOperand(read(first), Constant(float(c), "f32"))
        if first in ("rf", "stash"):
            port = (guard_of(m, w, n), source)
        else:
            regs.append((guard_of(m, w, n), source))
    return BranchedOperand(tuple(regs), port)


def cmps_text(cmps: Any) -> str:
    return ", ".join(f"{n}:{b}" for n, b in cmps)


def cmps_of(value: Any) -> tuple:
    """Comparison codes from themselves or from their `cmps_text`."""
    if not isinstance(value, str):
        return tuple(tuple(c) for c in value)
    return tuple((n, int(b)) for n, b in (p.strip().split(":") for p in value.split(",") if p.strip()))
