"""Generated reduces over a padded axis for the differential tests: `vector_intra_slice_reduce`
of `R` (live size r, padded to P) laid out across Slice, Time and Packet, which the Valid
Count Generator must count out (docs/machine/valid-count.md).

The input is a plain (S = 256, E) DM tensor relabelled by `reshape` into the drawn layout,
so DM cell (s, e) is x[s, e] and the oracle (`fold`) finds R's index of every cell by the
layout's own digits, sharing no code with the compiler. Layouts:

- `time`: R only in Time (`R # P`, maybe with a kept axis A before or after it);
- `slice_major`: `R # P / k` (a power-of-2 number of groups) outermost in Slice, `R # P % k`
  in Time (k a power of 2 or not); split in two Slice parts written minor first, VCG-6;
- `time_major`: `R # P % c` innermost in Slice (c a power of 2), `R # P / c` in Time, padded
  by at most c (else VCG-9 is expected);
- `slice_packet`: `R # P / 8` in Slice, `R # P / 4 % 2` in Time and `R # P % 4` in the packet,
  reduced to one cell (r a multiple of 4: every packet full or empty; else VCG-10);
- `interleaved`: a Slice part between two Time parts (VCG-8 expected).

A `paired` case reads two such tensors x and w with `begin_interleaved` (the group axis I
innermost in time), unzips them and zips the groups before the reduce: since v0.7 (as the
reference) a pair pass offers no intra-slice reduce, so every paired case is refused with
PAIR-REDUCE-1 at the reduce, whatever its layout.
"""

from __future__ import annotations

import attrs
import numpy as np
from hypothesis import strategies as st

__all__ = ["ReduceCase", "reduce_cases", "fold"]

_SRC = '''
from npu_opt import *
axes(S=256, E={e}, F={f}, R={r}, X={x}, A={a}, B=4)
@device(chip=1)
def k(ctx: Context, x: HbmTensor[{dt}, m("1"), m("S, E")]) -> HbmTensor[{dt}, m("1"), m("S, F")]:
    x = x.to_dm(ctx.tdma, DmTensor[{dt}, m("1"), m("1 # 2"), m("S"), m("E")])
    v = x.reshape(m("1"), m("1 # 2"), m("{slice}"), m("{elem}"))
    y = (ctx.main.begin(v).fetch(m("{time}"), m("{packet}"))
         .collect(m("{time}"), m("{packet} # 8")).vector_init()
         .vector_intra_slice_tag(TagMode.ZERO).vector_narrow_trim(m("{packet}"))
         .vector_intra_slice_reduce(m("R"), m("{out_time}"), m("{out_packet}"), {op})
         .vector_widen_pad(m("{widen}")).vector_final()
         .commit_trim(m("{trim}")).commit(m("{commit}")))
    return y.reshape(m("1"), m("1 # 2"), m("S"), m("F")).to_hbm(ctx.tdma)
'''
_PAIR_SRC = _SRC.replace('x: HbmTensor[{dt}, m("1"), m("S, E")])', 'x: HbmTensor[{dt}, m("1"), m("S, E")], '
                         'w: HbmTensor[{dt}, m("1"), m("S, E")])').replace(
    '    v = x.reshape(', '    w = w.to_dm(ctx.tdma, DmTensor[{dt}, m("1"), m("1 # 2"), m("S"), m("E")])\n'
    '    u = w.reshape(m("1"), m("1 # 2"), m("{slice}"), m("{elem}"))\n    v = x.reshape(').replace(
    '(ctx.main.begin(v).fetch(m("{time}"), m("{packet}"))\n         .collect(m("{time}"), m("{packet} # 8")).vector_init()\n'
    '         .vector_intra_slice_tag(TagMode.ZERO)',
    '(ctx.main.begin_interleaved(v, u, m("I")).fetch(m("{time}, I"), m("{packet}"))\n'
    '         .collect(m("{time}, I"), m("{packet} # 8")).vector_init()\n'
    '         .vector_intra_slice_unzip(m("I"), m("{time}, 1 # 2"), m("{time}")){zip}').replace(
    'axes(S=256,', 'axes(I=2, S=256,')
_ZIPS = {"i32": ".vector_fxp_zip(FxpBinaryOp.SUB_FXP_SAT)",
         "f32": ".vector_logic_zip_with_mode(LogicBinaryOpF32.BIT_OR, BinaryArgMode.MODE11)"}


@attrs.frozen
class ReduceCase:
    """One drawn kernel: `slice_items` / `time_items` are (name, stride, size) major to minor
    (name "R" with R's stride, else a kept axis with stride 0), the packet is B (kept) or R's
    `% 4` (reduced to one cell); `refusal` the rule the compiler must raise, if any."""

    layout: str
    r: int
    padded: int
    slice_items: tuple
    time_items: tuple
    packet_r: bool
    dtype: str
    op: str
    refusal: str | None = None
    paired: bool = False

    def text(self, item) -> str:
        name, stride, size = item
        if name != "R":
            return name
        if stride * size == self.padded:
            return f"R # {self.padded} / {stride}" if stride > 1 else f"R # {self.padded}"
        return f"R # {self.padded} / {stride} % {size}" if stride > 1 else f"R # {self.padded} % {size}"

    def mapping(self, items) -> str:
        return ", ".join(self.text(i) for i in items) or "1"

    @property
    def kept(self) -> list:
        return [i for i in self.time_items if i[0] != "R"]

    def source(self) -> str:
        time = self.mapping(self.time_items)
        packet = f"R # {self.padded} % 4" if self.packet_r else "B"
        out_time = self.mapping(self.kept)
        kept_size = int(np.prod([i[2] for i in self.kept]))
        x = next((i[2] for i in self.slice_items if i[0] == "X"), 1)
        elem_size = int(np.prod([i[2] for i in self.time_items])) * 4
        if self.packet_r:
            out_packet, widen, trim, f = "1 # 4", "1 # 8", "1 # 2", kept_size * 2
        else:
            out_packet, widen, trim, f = "B", "B # 8", "B", kept_size * 4
        commit = ", ".join(t for t in (out_time, trim) if t != "1")
        a = next((i[2] for i in self.time_items if i[0] == "A"), 2)
        src = _PAIR_SRC if self.paired else _SRC
        return src.format(zip=_ZIPS[self.dtype], e=elem_size, f=f, r=self.r, x=x, a=a, dt=self.dtype, slice=self.mapping(self.slice_items),
                           elem=f"{time}, {packet}", time=time, packet=packet, out_time=out_time,
                           out_packet=out_packet, op=self.op, widen=widen, trim=trim, commit=commit)



def _digits(n: int, items) -> list[np.ndarray]:
    """The digit of every item at the positions 0..n-1 of a mixed radix, major to minor."""
    pos, out = np.arange(n), []
    for _, _, size in reversed(items):
        out.append(pos % size)
        pos = pos // size
    return out[::-1]


def fold(case: ReduceCase, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(want, live): the reduce of every output cell over the live R cells of its slice, and
    which output cells hold data. x is the (256, E) input; the result is (256, F)."""
    packet = (("R", 1, 4),) if case.packet_r else (("B", 0, 4),)
    cells = case.time_items + packet
    s_digits, e_digits = _digits(256, case.slice_items), _digits(x.shape[1], cells)
    r_slice = sum((d * st for (n, st, _), d in zip(case.slice_items, s_digits) if n == "R"), np.zeros(256, int))
    r_elem = sum((d * st for (n, st, _), d in zip(cells, e_digits) if n == "R"), np.zeros(x.shape[1], int))
    kept = [d for (n, _, _), d in zip(cells, e_digits) if n not in ("R",)]
    sizes = [sz for (n, _, sz) in cells if n not in ("R",)]
    out_pos = np.zeros(x.shape[1], int)
    for d, sz in zip(kept, sizes):
        out_pos = out_pos * sz + d
    if case.packet_r:  # one cell, then the `1 # 2` padding
        out_pos = out_pos * 2
    width = int(np.prod(sizes)) * (2 if case.packet_r else 1)
    r = r_slice[:, None] + r_elem[None, :]
    live_in = r < case.r
    ident = {"MIN": np.inf, "MAX": -np.inf, "ADD": 0.0, "ADD_SAT": 0.0}[case.op.rsplit(".", 1)[1]]
    acc = np.full((256, width), ident)
    values = np.where(live_in, x.astype(np.float64), ident)
    name = case.op.rsplit(".", 1)[1]
    for e in range(x.shape[1]):
        col = out_pos[e]
        if name == "MIN":
            acc[:, col] = np.minimum(acc[:, col], values[:, e])
        elif name == "MAX":
            acc[:, col] = np.maximum(acc[:, col], values[:, e])
        else:
            acc[:, col] = acc[:, col] + values[:, e]
    live = np.zeros((256, width), bool)
    for e in range(x.shape[1]):
        live[:, out_pos[e]] |= live_in[:, e]
    return acc, live


def _pow2(draw, lo: int, hi: int) -> int:
    return 1 << draw(st.integers(lo, hi))


@st.composite
def reduce_cases(draw, refusal_rate: int = 15, paired: bool = False) -> ReduceCase:
    """A padded-axis reduce (of a pair's merged stream when `paired`); about `refusal_rate`
    percent are placements the VCG refuses."""
    case = draw(_cases(refusal_rate))
    return attrs.evolve(case, paired=True, refusal="PAIR-REDUCE-1") if paired else case


@st.composite
def _cases(draw, refusal_rate: int) -> ReduceCase:
    layout = draw(st.sampled_from(["time", "slice_major", "slice_major", "time_major", "time_major", "slice_packet",
                                   "slice_packet", "interleaved"]))
    dtype = draw(st.sampled_from(["i32", "f32"]))
    op = draw(st.sampled_from(["IntraSliceReduceOpI32.MIN", "IntraSliceReduceOpI32.MAX",
                               "IntraSliceReduceOpI32.ADD_SAT"] if dtype == "i32" else
                              ["IntraSliceReduceOpF32.ADD", "IntraSliceReduceOpF32.MIN", "IntraSliceReduceOpF32.MAX"]))
    a_item = ("A", 0, draw(st.integers(2, 3)))
    with_a = draw(st.integers(0, 2))  # 0: no A, 1: A before R, 2: A after R
    refuse = draw(st.integers(0, 99)) < refusal_rate

    def time_with_a(r_items):
        return tuple(r_items) if not with_a else ((a_item,) + tuple(r_items) if with_a == 1 else tuple(r_items) + (a_item,))

    if layout == "time":
        p = draw(st.integers(2, 16))
        r = draw(st.integers(1, p - 1))
        return ReduceCase(layout, r, p, (("X", 0, 256),), time_with_a([("R", 1, p)]), False, dtype, op)
    if layout == "slice_major":
        g, k = _pow2(draw, 2 if refuse else 1, 3), draw(st.sampled_from([2, 3, 4, 5, 6, 8]))  # any stride k
        p = g * k
        r = draw(st.integers(1, p - 1))
        if refuse:  # R's Slice part split in two and written minor first
            return ReduceCase(layout, r, p, (("R", k, 2), ("X", 0, 256 // g), ("R", 2 * k, g // 2)),
                              time_with_a([("R", 1, k)]), False, dtype, op, "VCG-6")
        return ReduceCase(layout, r, p, (("R", k, g), ("X", 0, 256 // g)), time_with_a([("R", 1, k)]), False,
                          dtype, op)
    if layout == "time_major":
        c, t = _pow2(draw, 1, 3), draw(st.integers(2, 6))
        p = c * t
        over = draw(st.integers(c + 1, p - 1)) if refuse and p - 1 > c else draw(st.integers(1, c))
        refusal = "VCG-9" if over > c else None
        return ReduceCase(layout, p - over, p, (("X", 0, 256 // c), ("R", 1, c)), time_with_a([("R", c, t)]),
                          False, dtype, op, refusal)
    if layout == "slice_packet":
        p = 64
        r = draw(st.integers(1, 15)) * 4 - (draw(st.integers(1, 3)) if refuse else 0)
        return ReduceCase(layout, r, p, (("R", 8, 8), ("X", 0, 32)), time_with_a([("R", 4, 2)]), True, dtype, op,
                          "VCG-10" if r % 4 else None)
    p = 16
    r = draw(st.integers(1, 15))
    return ReduceCase(layout, r, p, (("X", 0, 64), ("R", 2, 4)), time_with_a([("R", 8, 2), ("R", 1, 2)]), False,
                      dtype, op, "VCG-8")
