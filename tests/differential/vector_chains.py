"""Generated Vector Engine passes for the differential kernels: `vector_init ... vector_final`
on the 32-bit stream a contraction or a collect leaves, inserted before its tail.

A pass keeps the stream's scalar and (time, packet), so the tail that follows stays valid:
an i32 stream runs [reinterpret + f32 logic] -> logic -> fxp -> [fxp_to_fp -> float path ->
fp_to_fxp] -> clip, an f32 stream logic -> [float path] -> clip. The float path enters
4-way by `vector_narrow_trim` (at most four live cells per flit) or `vector_narrow_split`
(a full flit of one axis), runs fp_binary / fp_ternary ops and maybe fp_div, and leaves by
`vector_widen_pad` / `vector_widen_concat`. Each op takes a free ALU; about a third use
their `_with_mode` form. Transcendentals are left out: the naive model has no independent
exact form of them.
"""

from __future__ import annotations

import numpy as np
from hypothesis import strategies as st

__all__ = ["vector_pass", "vector_way"]

_FLOATS = [0.5, -1.25, 3.0, 0.001, -0.0, 65504.0, 1e-30, 7.0, -2.5e20]
_LOGIC_I32 = {"BIT_AND": "LOGIC_AND", "BIT_OR": "LOGIC_OR", "BIT_XOR": "LOGIC_XOR", "LEFT_SHIFT": "LOGIC_LSHIFT",
              "LOGIC_RIGHT_SHIFT": "LOGIC_RSHIFT", "ARITH_RIGHT_SHIFT": "LOGIC_RSHIFT"}
_FXP = {"ADD_FXP": "ADD", "ADD_FXP_SAT": "ADD", "SUB_FXP": "ADD", "SUB_FXP_SAT": "ADD", "LEFT_SHIFT": "LSH",
        "LEFT_SHIFT_SAT": "LSH", "MUL_FXP": "MUL", "MUL_INT": "MUL", "LOGIC_RIGHT_SHIFT": "RSH",
        "ARITH_RIGHT_SHIFT": "RSH", "ARITH_RIGHT_SHIFT_ROUND": "RSH"}
_CLIP_I32 = {"MIN": "MIN", "ABS_MIN": "MIN", "MAX": "MAX", "ABS_MAX": "MAX", "ADD_FXP": "ADD", "ADD_FXP_SAT": "ADD"}
_CLIP_F32 = {"MIN": "MIN", "ABS_MIN": "MIN", "MAX": "MAX", "ABS_MAX": "MAX", "ADD": "ADD"}
_FP = {"ADD_F": "FMA", "SUB_F": "FMA", "DIV_F": "FPU", "MUL_F(FpMulAlu.MUL0)": "MUL0", "MUL_F(FpMulAlu.MUL1)": "MUL1",
       "MUL_F(FpMulAlu.FMA)": "FMA"}
_MODES = ["MODE00", "MODE01", "MODE10", "MODE11"]


class _Pass:
    def __init__(self, draw, feats) -> None:
        self.draw, self.feats, self.lines, self.alus = draw, feats, [], set()

    def pick(self, items):
        return items[self.draw(st.integers(0, len(items) - 1))]

    def chance(self, percent: int) -> bool:
        return self.draw(st.integers(0, 99)) < percent

    def i32(self, shift: bool) -> int:
        if shift:
            return self.draw(st.integers(0, 31))
        return self.pick([0, 1, -1, 3, 2**30, -(2**31), 2**31 - 1, 12345, -777])

    def f32(self) -> str:
        return repr(float(np.float32(self.pick(_FLOATS))))

    def ops(self, method: str, enum: str, table: dict, count: int, const, cluster: str) -> None:
        """Up to `count` ops of one cluster, each on a free ALU; maybe with a mode."""
        for _ in range(self.draw(st.integers(0, count))):
            name = self.pick(sorted(table))
            alu = (cluster, table[name])
            if alu in self.alus:
                continue
            self.alus.add(alu)
            arg = const(name)
            if self.chance(30):
                mode = self.pick(_MODES)
                self.lines.append(f".{method}_with_mode({enum}.{name}, BinaryArgMode.{mode}, {arg})")
                self.feats.add(f"vector_mode:{mode}")
            else:
                self.lines.append(f".{method}({enum}.{name}, {arg})")
            self.feats.add(f"vector:{method}")


def _float_path(p: _Pass, way: tuple[str, str, str, str]) -> None:
    """Enter 4-way, float ops, maybe the divider, leave."""
    down, up, kind = way[0], way[1], way[2]
    p.lines.append(down)
    p.feats.add(f"vector_way:{kind}")
    p.ops("vector_fp_binary", "FpBinaryOp", _FP, 3, lambda name: p.f32(), "fp")
    if ("fp", "FMA") not in p.alus and p.chance(40):
        p.alus.add(("fp", "FMA"))
        if p.chance(30):
            mode = p.pick(["MODE012", "MODE102", "MODE002", "MODE112", "MODE020", "MODE021", "MODE120"])
            p.lines.append(f".vector_fp_ternary_with_mode(FpTernaryOp.FMA_F, TernaryArgMode.{mode}, ({p.f32()}, {p.f32()}))")
        else:
            p.lines.append(f".vector_fp_ternary(FpTernaryOp.FMA_F, ({p.f32()}, {p.f32()}))")
        p.feats.add("vector:vector_fp_ternary")
    if p.chance(30):
        if p.chance(30):
            p.lines.append(f".vector_fp_div_with_mode(BinaryArgMode.{p.pick(_MODES)}, {p.f32()})")
        else:
            p.lines.append(f".vector_fp_div({p.f32()})")
        p.feats.add("vector:vector_fp_div")
    p.lines.append(up)


def vector_pass(draw, feats, acc: str, way: tuple[str, str, str] | None) -> list[str]:
    """The lines of one pass on an `acc` ("i32" / "f32") stream. `way` is (down, up, kind):
    the way-change calls for this stream's shape, or None when neither fits."""
    p = _Pass(draw, feats)
    p.lines += [".vector_init()", ".vector_intra_slice_tag(TagMode.ZERO)"]
    if acc == "i32":
        if p.chance(15):
            p.alus.add(("logic", "LOGIC_XOR"))
            p.lines += [".vector_reinterpret(f32)", f".vector_logic(LogicBinaryOpF32.BIT_XOR, {p.f32()})",
                        ".vector_reinterpret(i32)"]
            p.feats.add("vector:vector_reinterpret")
        p.ops("vector_logic", "LogicBinaryOpI32", _LOGIC_I32, 2, lambda n: p.i32("SHIFT" in n), "logic")
        p.ops("vector_fxp", "FxpBinaryOp", _FXP, 3, lambda n: p.i32("SHIFT" in n), "fxp")
        if p.chance(40):
            p.lines.append(f".vector_fxp_to_fp({p.draw(st.integers(0, 31))})")
            if way is not None and p.chance(60):
                _float_path(p, way)
            p.lines.append(f".vector_fp_to_fxp({p.draw(st.integers(0, 31))})")
            p.feats.add("vector:conversions")
        p.ops("vector_clip", "ClipBinaryOpI32", _CLIP_I32, 2, lambda n: p.i32(False), "clip")
    else:
        p.ops("vector_logic", "LogicBinaryOpF32", {"BIT_AND": "AND", "BIT_OR": "OR", "BIT_XOR": "XOR"}, 1,
              lambda n: p.f32(), "logic")
        if way is not None and p.chance(70):
            _float_path(p, way)
        p.ops("vector_clip", "ClipBinaryOpF32", _CLIP_F32, 2, lambda n: p.f32(), "clip")
    p.lines.append(".vector_final()")
    feats.add(f"vector_pass:{acc}")
    return p.lines


def vector_way(lpk, lt) -> tuple[str, str, str] | None:
    """(down, up, kind) way changes of a 32-bit stream with packet `lpk` and time `lt`
    (`strategies.Piece`s): trim / pad when at most four cells of the flit are live,
    split / concat when one axis fills it, else None."""
    from tests.differential.strategies import Piece, pad1, q  # strategies imports this module

    if lpk.size != 8:
        return None
    if lpk.live <= 4:
        front = lpk.padded(4) if lpk.axis else pad1(4)
        return f".vector_narrow_trim({q([front])})", f".vector_widen_pad({q([lpk])})", "trim"
    if lpk.axis and lpk.live == 8:
        outer, inner = Piece(lpk.axis, lpk.total, lpk.step * 4, 2), Piece(lpk.axis, lpk.total, lpk.step, 4)
        return (f".vector_narrow_split({q(lt + [outer])}, {q([inner])})", f".vector_widen_concat({q(lt)}, {q([lpk])})",
                "split")
    return None
