"""Generated pair-mode and tagged (branched) Vector Engine kernels for the differential test
(test_pair_branch_differential.py): whole kernel sources, cpu against the VISA interpreter.

A pair kernel reads x[I, A, E] (I = 2 innermost in time), unzips it, runs paired ops on the
two groups (a constant per group or None, about a third in their `_with_mode` form), merges
them with a zip (`vector_logic_zip`, `vector_fxp_zip` or `vector_clip_zip`, maybe with a mode;
an f32 pair may take the 4-way path: a paired FMA_F, `vector_fp_zip`)
and runs a few ops on the merged stream. A tagged kernel reads x[A, E], tags it with four
random comparisons (`TagMode.COMPARISON`) and runs ops whose operands are constants or
`Branched.imm(...)` layouts of one to three guarded slots, maybe ending in the rf slot of a
VRF tensor (`.rf(guard, b_vrf)`, b[E] stored with `to_vrf`), maybe around a `vector_stash`
read by one later op (the whole operand, under a mode, or a layout's `.rf(guard, Stash)`);
its f32 form runs the float ops 4-way, maybe with an FMA_F whose first operand may be the
stash (`(Stash, c)`, maybe under a TernaryArgMode), or a layout of `(a, c)` pairs maybe
ending in `.rf(guard, (Stash, c))`. Each op takes a free ALU, so most kernels are accepted;
the rest must be refused alike by every backend.
"""

from __future__ import annotations

from hypothesis import strategies as st

__all__ = ["pair_source", "tagged_source"]

_HEAD = '''from npu_opt import *

axes(I=2, A={a}, E={e})
Chip, Cluster, Slice = m("1"), m("1 # 2"), m("1 # 256")
'''
_I32S = [0, 1, -1, 3, 7, -777, 12345, 2**30, -(2**31), 2**31 - 1]
_F32S = ["0.0", "-0.0", "0.5", "-1.25", "3.0", "1e-30", "65504.0", "-2.5e20"]
# method -> {op name: ALU}
_LOGIC = {"BIT_AND": "AND", "BIT_OR": "OR", "BIT_XOR": "XOR", "LEFT_SHIFT": "LSH", "ARITH_RIGHT_SHIFT": "RSH"}
_FXP = {"ADD_FXP": "ADD", "SUB_FXP_SAT": "ADD", "MUL_INT": "MUL", "MUL_FXP": "MUL", "ARITH_RIGHT_SHIFT": "RSH"}
_CLIP_I32 = {"MIN": "MIN", "MAX": "MAX", "ABS_MAX": "MAX", "ADD_FXP": "ADD", "ADD_FXP_SAT": "ADD"}
_CLIP_F32 = {"MIN": "MIN", "MAX": "MAX", "ADD": "ADD"}
_FP = {"ADD_F": "FMA", "SUB_F": "FMA", "MUL_F(FpMulAlu.MUL0)": "MUL0", "MUL_F(FpMulAlu.MUL1)": "MUL1"}
_ENUMS = {"logic_i32": "LogicBinaryOpI32", "logic_f32": "LogicBinaryOpF32", "fxp": "FxpBinaryOp",
          "clip_i32": "ClipBinaryOpI32", "clip_f32": "ClipBinaryOpF32", "fp": "FpBinaryOp"}
_MODES = ["MODE00", "MODE01", "MODE10", "MODE11"]


class _Draw:
    def __init__(self, draw, feats: set, stashy: bool = False) -> None:
        self.draw, self.feats, self.alus = draw, feats, set()
        self.stashy = stashy  # a tagged kernel that stashes first and reads the stash soon

    def pick(self, items):
        items = list(items)
        return items[self.draw(st.integers(0, len(items) - 1))]

    def chance(self, percent: int) -> bool:
        return self.draw(st.integers(0, 99)) < percent

    def const(self, scalar: str, name: str) -> str:
        if "SHIFT" in name:
            return str(self.draw(st.integers(0, 31)))
        return str(self.pick(_I32S)) if scalar == "i32" else self.pick(_F32S)

    def take(self, cluster: str, table: dict) -> str | None:
        """An op name of `table` whose ALU is free (claimed), or None."""
        name = self.pick(sorted(table))
        if (cluster, table[name]) in self.alus:
            return None
        self.alus.add((cluster, table[name]))
        return name


def _paired(d: _Draw, method: str, cluster: str, table: dict, scalar: str) -> list[str]:
    lines = []
    for _ in range(d.draw(st.integers(0, 2))):
        name = d.take(cluster, table)
        if name is None:
            continue
        c0, c1 = [d.const(scalar, name) if d.chance(70) else "None" for _ in range(2)]
        if c0 == c1 == "None":
            c0 = d.const(scalar, name)
        enum = _ENUMS[cluster if cluster in _ENUMS else f"{cluster}_{scalar}"]
        if d.chance(35):
            mode = d.pick(_MODES)
            lines.append(f".{method}_with_mode({enum}.{name}, BinaryArgMode.{mode}, {c0}, {c1})")
            d.feats.add(f"pair_mode:{mode}")
        else:
            lines.append(f".{method}({enum}.{name}, {c0}, {c1})")
        d.feats.add(f"pair:{method}")
    return lines


def _zip(d: _Draw, method: str, cluster: str, table: dict, enum: str) -> list[str]:
    name = d.take(cluster, table)
    if name is None:  # the zip's ALU is taken: the kernel must be refused (VE-ALU-1)
        name = d.pick(sorted(table))
        d.feats.add("pair:alu_clash")
    d.feats.add(f"pair_zip:{method}")
    if d.chance(35):
        return [f".{method}_with_mode({enum}.{name}, BinaryArgMode.{d.pick(_MODES)})"]
    return [f".{method}({enum}.{name})"]


def _merged(d: _Draw, method: str, cluster: str, table: dict, enum: str, scalar: str) -> list[str]:
    name = d.take(cluster, table) if d.chance(60) else None
    if name is None:
        return []
    d.feats.add(f"pair_merged:{method}")
    if d.chance(35):
        return [f".{method}_with_mode({enum}.{name}, BinaryArgMode.{d.pick(_MODES)}, {d.const(scalar, name)})"]
    return [f".{method}({enum}.{name}, {d.const(scalar, name)})"]


_TERNARY_MODES = ["MODE012", "MODE002", "MODE102", "MODE112", "MODE020", "MODE021", "MODE120"]


def _float_pair(d: _Draw) -> list[str]:
    """The 4-way float path of an f32 pair: split, maybe an FMA_F pair per group (maybe under a
    TernaryArgMode), the `vector_fp_zip`, concat."""
    lines = ['.vector_narrow_split(m("A, E / 8, E / 4 % 2"), m("E % 4"))']
    if d.chance(80):
        d.alus.add(("fp", "FMA"))
        pairs = [f"({d.const('f32', '')}, {d.const('f32', '')})" if d.chance(75) else "None" for _ in range(2)]
        pairs[0] = "(2.0, -0.5)" if pairs == ["None", "None"] else pairs[0]
        if d.chance(35):
            mode = d.pick(_TERNARY_MODES)
            lines.append(f".vector_fp_ternary_with_mode(FpTernaryOp.FMA_F, TernaryArgMode.{mode}, {', '.join(pairs)})")
            d.feats.add("pair_fma_mode")
        else:
            lines.append(f".vector_fp_ternary(FpTernaryOp.FMA_F, {', '.join(pairs)})")
        d.feats.add("pair:vector_fp_ternary")
    lines += _zip(d, "vector_fp_zip", "fp", _FP, "FpBinaryOp")
    lines.append('.vector_widen_concat(m("A, E / 8"), m("E % 8"))')
    return lines


@st.composite
def pair_source(draw) -> tuple[str, set]:
    """(kernel source, features) of one pair-mode kernel."""
    feats: set = set()
    d = _Draw(draw, feats)
    a, e = d.pick([1, 2, 3]), d.pick([8, 16, 32])
    dtype = d.pick(["i32", "f32"])
    lines = [".vector_init()", '.vector_intra_slice_unzip(m("I"), m("A, E / 8, 1 # 2"), m("A, E / 8"))']
    scalar = dtype
    zip_at = d.pick(["logic", "fxp", "clip"] if dtype == "i32" else ["logic", "clip", "fp"])
    lines += _paired(d, "vector_logic", "logic", _LOGIC if scalar == "i32" else _LOGIC_F32, scalar)
    if zip_at == "logic":
        lines += _zip(d, "vector_logic_zip", "logic", _LOGIC if scalar == "i32" else _LOGIC_F32,
                      _ENUMS[f"logic_{scalar}"])
    if scalar == "i32" and zip_at != "logic":
        lines += _paired(d, "vector_fxp", "fxp", _FXP, "i32")
    if zip_at == "fxp":
        lines += _zip(d, "vector_fxp_zip", "fxp", _FXP, "FxpBinaryOp")
    elif zip_at == "fp":
        lines += _float_pair(d)
    elif zip_at == "clip":
        if scalar == "i32" and d.chance(30):
            lines.append(f".vector_fxp_to_fp({d.draw(st.integers(0, 31))})")
            scalar = "f32"
            feats.add("pair:conversion")
        clips = _CLIP_I32 if scalar == "i32" else _CLIP_F32
        lines += _paired(d, "vector_clip", "clip", clips, scalar)
        lines += _zip(d, "vector_clip_zip", "clip", clips, _ENUMS[f"clip_{scalar}"])
    if zip_at in ("logic", "fxp") and scalar == "i32":
        lines += _merged(d, "vector_fxp", "fxp", _FXP, "FxpBinaryOp", "i32")
    clips = _CLIP_I32 if scalar == "i32" else _CLIP_F32
    lines += _merged(d, "vector_clip", "clip", clips, _ENUMS[f"clip_{scalar}"], scalar)
    feats.add(f"pair_pass:{dtype}")
    body = "\n         ".join(lines)
    src = _HEAD.format(a=a, e=e) + f'''

@device(chip=1)
def pair_k(ctx: Context, x: HbmTensor[{dtype}, Chip, m("I, A, E")]) -> HbmTensor[{scalar}, Chip, m("A, E")]:
    x = x.to_dm(ctx.tdma, DmTensor[{dtype}, Chip, Cluster, Slice, m("I, A, E")])
    y = (ctx.main.begin(x.view()).fetch(m("A, E / 8, I"), m("E % 8")).collect(m("A, E / 8, I"), m("E % 8"))
         {body}
         .vector_final().commit_trim(m("E % 8")).commit())
    return y.to_hbm(ctx.tdma)
'''
    return src, feats


_LOGIC_F32 = {"BIT_AND": "AND", "BIT_OR": "OR", "BIT_XOR": "XOR"}
_CMPS = ["EQUAL", "LESS", "GREATER", "LESS_UNSIGNED", "GREATER_UNSIGNED"]
_BITS = ["BitReq.ONE", "BitReq.ZERO", "BitReq.IGNORE"]


def _cmp(d: _Draw, scalar: str) -> str:
    if d.chance(25):
        return d.pick(["Cmp.TRUE", "Cmp.FALSE"])
    name = d.pick(_CMPS if scalar == "i32" else _CMPS[:3])
    bound = d.pick([0, -1, 5, 1000, -(2**31)]) if scalar == "i32" else d.pick(["0.0", "-1.5", "2.0", "-0.0", "1e-30"])
    return f"Cmp.{name}({bound})"


def _guard(d: _Draw) -> str:
    kind = d.pick(["all", "group", "matches", "matches", "not_matches"])
    if kind == "all":
        return "TagGuard.all()"
    if kind == "group":
        return f"TagGuard.group(GroupId.{d.pick(['ZERO', 'ONE'])})"
    return f"TagGuard.{kind}([{', '.join(d.pick(_BITS) for _ in range(4))}])"


def _operand(d: _Draw, scalar: str, name: str, vrf: bool) -> str:
    """A constant (a third of the ops), the VRF tensor `b_vrf`, or a layout of one to three
    guarded immediates, maybe ending in the rf slot (`b_vrf`)."""
    if d.chance(33):
        return d.const(scalar, name)
    if vrf and d.chance(20):
        d.feats.add("branched:plain_vrf")
        return "b_vrf"
    slots = [f"imm({_guard(d)}, {d.const(scalar, name)})" for _ in range(d.draw(st.integers(0 if vrf else 1, 3)))]
    if vrf and (not slots or d.chance(40)):
        slots.append(f"rf({_guard(d)}, b_vrf)")
        d.feats.add("branched:rf_slot")
    d.feats.add(f"branched:{len(slots)}")
    return "Branched." + ".".join(slots)


def _stash_read(d: _Draw, method: str, op: str, scalar: str, name: str) -> str:
    """`method` reading the stash: the whole operand (maybe under a mode), or the rf slot of
    a layout (a guard on the group bit alone is refused alike, VE-SLOT-6)."""
    form = d.pick(["bare", "mode", "slot"])
    d.feats.add("branched:stash")
    d.feats.add(f"stash:{form}")
    if form == "mode":
        return f".{method}_with_mode({op}, BinaryArgMode.{d.pick(_MODES)}, Stash)"
    if form == "slot":
        imms = [f"imm({_guard(d)}, {d.const(scalar, name)})" for _ in range(d.draw(st.integers(0, 2)))]
        return f".{method}({op}, Branched.{'.'.join([*imms, f'rf({_guard(d)}, Stash)'])})"
    return f".{method}({op}, Stash)"


def _fma(d: _Draw, stash: list) -> list[str]:
    """Maybe one FMA_F on the 4-way path (its ALU free): `(rhs, c)` with rhs a constant or the
    stash, maybe under a TernaryArgMode."""
    if not d.chance(80 if d.stashy else 40) or ("fp", "FMA") in d.alus:
        return []
    d.alus.add(("fp", "FMA"))
    rhs = d.const("f32", "FMA_F")
    if stash and stash[0] == "written" and d.chance(70):
        rhs, stash[0] = "Stash", "read"
        d.feats.add("stash:fma")
    d.feats.add("fma")
    operand = f"({rhs}, {d.const('f32', '')})"
    if d.chance(40):  # a layout: a pair per slot, the stash maybe in the rf slot
        slots = [f"imm({_guard(d)}, ({d.const('f32', '')}, {d.const('f32', '')}))"
                 for _ in range(d.draw(st.integers(0 if rhs == "Stash" else 1, 2)))]
        if rhs == "Stash":
            slots.append(f"rf({_guard(d)}, (Stash, {d.const('f32', '')}))")
        operand = "Branched." + ".".join(slots)
        d.feats.add("fma:branched")
    if d.chance(50):
        mode = d.pick(_TERNARY_MODES)
        d.feats.add(f"fma_mode:{mode}")
        return [f".vector_fp_ternary_with_mode(FpTernaryOp.FMA_F, TernaryArgMode.{mode}, {operand})"]
    return [f".vector_fp_ternary(FpTernaryOp.FMA_F, {operand})"]


_TERNARY_MODES = ["MODE012", "MODE002", "MODE102", "MODE112", "MODE020", "MODE021", "MODE120"]


def _tagged_ops(d: _Draw, method: str, cluster: str, table: dict, enum: str, scalar: str, stash: list,
                vrf: bool = False, way: int = 8) -> list[str]:
    lines = []
    for _ in range(d.draw(st.integers(0, 2))):
        name = d.take(cluster, table)
        if name is None:
            continue
        if stash and stash[0] == "written" and (not d.stashy or stash[1:] == [way]) and d.chance(90 if d.stashy else 50):
            stash[0] = "read"
            lines.append(_stash_read(d, method, f"{enum}.{name}", scalar, name))
        else:
            moded = d.chance(25)  # a `_with_mode` form: every slot reads the mode; no VRF read (VRF-7)
            readable = vrf and not moded and method != "vector_logic" and "SHIFT" not in name
            operand = _operand(d, scalar, name, readable)
            if moded:
                d.feats.add("branched:mode")
                lines.append(f".{method}_with_mode({enum}.{name}, BinaryArgMode.{d.pick(_MODES)}, {operand})")
            else:
                lines.append(f".{method}({enum}.{name}, {operand})")
        d.feats.add(f"branched_op:{method}")
    if not stash and d.chance(25):
        lines.append(".vector_stash()")
        stash += ["written", way]
    return lines


@st.composite
def tagged_source(draw, stashy: bool = False) -> tuple[str, set]:
    """(kernel source, features) of one kernel with a comparison-tagged pass (`stashy`: the
    stream is stashed where the pass starts, and most likely read by its first op)."""
    feats: set = set()
    d = _Draw(draw, feats, stashy)
    a, e = d.pick([1, 2, 4]), d.pick([8, 16, 32])
    scalar = d.pick(["i32", "f32"])
    tag = f"TagMode.COMPARISON([{', '.join(_cmp(d, scalar) for _ in range(4))}])"
    lines, stash = [".vector_init()", f".vector_intra_slice_tag({tag})"], []
    vrf = d.chance(40)  # a per-column operand b[E] in the VRF, for a plain VRF operand or an rf slot
    if stashy and scalar == "i32":
        lines.append(".vector_stash()")
        stash += ["written", 8]
    if scalar == "i32":
        if d.chance(30):
            lines += _tagged_ops(d, "vector_logic", "logic", _LOGIC, "LogicBinaryOpI32", "i32", stash)
        lines += _tagged_ops(d, "vector_fxp", "fxp", _FXP, "FxpBinaryOp", "i32", stash, vrf)
        lines += _tagged_ops(d, "vector_clip", "clip", _CLIP_I32, "ClipBinaryOpI32", "i32", stash, vrf)
        fetch, packet, trim = 'm("A, E / 8"), m("E % 8")', 'm("E % 8")', 'm("E % 8")'
    else:
        lines.append('.vector_narrow_trim(m("E % 4"))')
        if not stash and (stashy or d.chance(40)):
            lines.append(".vector_stash()")
            stash += ["written", 4]
        lines += _tagged_ops(d, "vector_fp_binary", "fp", _FP, "FpBinaryOp", "f32", stash, vrf, 4)
        lines += _fma(d, stash)
        lines.append('.vector_widen_pad(m("E % 4 # 8"))')
        lines += _tagged_ops(d, "vector_clip", "clip", _CLIP_F32, "ClipBinaryOpF32", "f32", stash, vrf)
        fetch, packet, trim = 'm("A, E / 4"), m("E % 4")', 'm("E % 4 # 8")', 'm("E % 4")'
    feats.add(f"tagged_pass:{scalar}")
    body = "\n         ".join(lines)
    collect = fetch.split(", m(")[0] + ", " + packet
    used = any("b_vrf" in line for line in lines)
    param = f", b: HbmTensor[{scalar}, Chip, m(\"E\")]" if used else ""
    load = (f'''
    b = b.to_dm(ctx.tdma, DmTensor[{scalar}, Chip, Cluster, Slice, m("E")])
    b_vrf = ctx.sub.begin(b.view()).fetch(m("E / 8"), m("E % 8")).collect(m("E / 8"), m("E % 8")).to_vrf(m("E"))'''
            if used else "")
    src = _HEAD.format(a=a, e=e) + f'''

@device(chip=1)
def tagged_k(ctx: Context, x: HbmTensor[{scalar}, Chip, m("A, E")]{param}) -> HbmTensor[{scalar}, Chip, m("A, E")]:{load}
    x = x.to_dm(ctx.tdma, DmTensor[{scalar}, Chip, Cluster, Slice, m("A, E")])
    y = (ctx.main.begin(x.view()).fetch({fetch}).collect({collect})
         {body}
         .vector_final().commit_trim({trim}).commit())
    return y.to_hbm(ctx.tdma)
'''
    return src, feats
