"""Hypothesis strategies that generate kernels as Python SOURCE TEXT (issue 7, item 3).

`kernels()` draws the parameters of one kernel and renders it as a self-contained module
(`Generated.source`, kernel `dk`), to be loaded with `driver.discover` (harness.py).

Contraction family (most kernels), the chain

    [to_hbm] to_dm [to_dm] -> main begin, fetch, [fetch_table_lookup], [fetch_cast],
         [fetch_zero_point_sub], collect, contract_outer, contract_packet, contract_time,
         contract_lane, [cast], commit_trim, [commit_cast | commit_cast_relu], commit
         -> to_hbm [to_hbm]          (once, or twice from the same TRF: a tuple result)
    to_dm -> sub|main begin, fetch, [fetch_table_lookup], [fetch_cast], collect, to_trf

computing  y[I, J, C] = sum_K x[I, C, K] * w[(I,) J, (C,) K]. The stage mappings come
from one model that generalises examples/'s worked kernels: dot product (no I, J),
GEMV (I on slices, lane `1`), GEMM (J on lanes + a TRF time factor), row sum (K outer in
time, sequential lane fold) and docs/machine/contraction.md's packet example (kept columns C):

- `K` is contracted: `Kp` innermost digits in the packet (adder tree of depth
  log2(Kp), 0..6), the rest in time (reduced by `contract_time`) placed outermost,
  innermost or between the kept factors (inner time IT > 1); the fetch packet may hold
  more K digits than one outer packet; a short K is padded to one flit (`K # 16`).
- `I` (stream rows) goes to slices (slice-outer or slice-inner digits; ragged sizes
  padded alone, `I # 64`; optionally its top digit on the Cluster) and/or time
  (optionally padded, `I # 8`); weights may be per slice (`w[I, J, K]`, I on slices).
- `J` (TRF rows) is split into lanes (1, 2, 4, 8), a time factor (re-read by the fetch
  as a broadcast, or a TRF-only broadcast innermost in `contract_outer`, tiling > 1)
  and slices, in any digit order.
- `C` is a kept packet axis: accumulator columns (1..32, optionally padded `C # 2C`),
  carried by the weights or broadcast from them; `Kp = 1` means no tree at all.
- operands bf16, i8, i4, f8e4m3, f8e5m2 (x also f8 -> bf16 or f4e2m1 -> f8 through the
  table lookup; i8 -> i9 / i4 -> i5 zero points); pack 1 or 2 flits; both lane modes;
  Cast Engine to bf16/f8/i8/i16/i4, commit_cast(_relu) to bf16; trims of 8..32 bytes;
  explicit or default to_trf / commit / to_hbm mappings; transposed commits; Slice of
  64/128/256 with different padding layouts; Cluster `1`, `1 # 2` or a digit.
- data movement variants: the input given transposed and fixed by an HBM -> HBM DMA, a
  DM -> DM relayout (other element order, other slices of the same count) before the
  final layout, and an HBM -> HBM transposition of the result.

In-place outputs (`INPLACE_RATE`%): the first result is written by its final DMA into
an in-out parameter `out: Mut[...]` of the result's type instead of being returned.

Copy family (`copy_rate`%): x[I, K] -> fetch -> widening / narrowing fetch_cast, table
lookup -> collect (padded flits) -> [cast] -> commit_trim -> [commit_cast] -> commit, in
the main or sub context, with f32 / i32 / i16 inputs the contractions never see.

`illegal_rate`% of the kernels get one deliberate fault (`Generated.mutation`: reordered
kept time, 4-byte trim, half-flit collect, unread fetch digits, illegal casts, mixed
operand families, wrong lane mode, contraction in the sub context, 3 lanes, a transposing
DMA into DM, bad column counts, an out-of-range zero point), so refusals are exercised;
`mutation` is None when the drawn fault did not apply. Sizes are small (a few live
slices of 64, at most a few dozen time steps): one kernel runs in ~0.05 s.

`make_inputs(kernel, seed)` builds host arrays for a loaded kernel from its checked
signature: ordinary values mixed with zeros, subnormals, extremes, NaN and infinities,
or raw bit patterns; integers mixed with their extremes.
"""

from __future__ import annotations

import math
import zlib
from dataclasses import dataclass, field

import numpy as np
from hypothesis import strategies as st

from ir.resident import Device, DmBuffer
from ir.topology import chip_broadcast_dims, host_array_shape
from tests.differential.vector_chains import vector_pass, vector_way

__all__ = ["Generated", "Piece", "kernels", "make_inputs", "MUTATIONS"]

BITS = {"bf16": 16, "i8": 8, "i9": 8, "f8e4m3": 8, "f8e5m2": 8, "i4": 4, "i5": 4,
        "f4e2m1": 4, "i16": 16, "i32": 32, "f32": 32}
FLOATS = {"bf16", "f8e4m3", "f8e5m2", "f32", "f4e2m1"}
OPERANDS = ["bf16", "i8", "i4", "f8e4m3", "f8e5m2"]

MUTATIONS = ("time_order", "trim_narrow", "half_flit", "drop_fetch", "bad_cast", "mixed_operands",
             "lane_mode", "sub_contract", "three_lanes", "dma_transpose", "packet_cols", "zp_range",
             "bad_fetch_cast", "commit_drop")


# ---------------------------------------------------------------------------------------
# mapping text


@dataclass(frozen=True)
class Piece:
    """One item of a mapping: digits `[step, step * extent)` of `axis` (size `total`),
    optionally padded to `pad` cells (`X / s % e # pad`); `axis=None` is `1` (# pad)."""

    axis: str | None
    total: int = 1
    step: int = 1
    extent: int = 1
    pad: int | None = None

    @property
    def size(self) -> int:
        return self.pad if self.pad is not None else self.extent

    @property
    def live(self) -> int:
        return self.extent

    def core(self) -> str:
        a, n, s, e = self.axis, self.total, self.step, self.extent
        if a is None or e == 1:
            return "1"
        if s == 1 and e == n:
            return a
        if s == 1:
            return f"{a} % {e}"
        if s * e == n:
            return f"{a} / {s}"
        return f"{a} / {s} % {e}"

    def text(self) -> str:
        c = self.core()
        return c if self.pad is None or self.pad == self.extent else f"{c} # {self.pad}"

    def padded(self, n: int | None) -> Piece:
        return Piece(self.axis, self.total, self.step, self.extent, None if n == self.extent else n)


def dig(axis: str, total: int, step: int, extent: int, pad: int | None = None) -> Piece:
    assert total % (step * extent) == 0, (axis, total, step, extent)
    return Piece(axis, total, step, extent, pad)


def pad1(n: int) -> Piece:
    return Piece(None, 1, 1, 1, n)


def live(pieces) -> list[Piece]:
    return [p for p in pieces if p is not None and p.size > 1]


def mt(pieces) -> str:
    items = [p.text() for p in live(pieces)]
    return ", ".join(items) or "1"


def msize(pieces) -> int:
    return math.prod(p.size for p in live(pieces))


def q(pieces) -> str:
    return f'm("{mt(pieces)}")'


# ---------------------------------------------------------------------------------------
# the generated kernel


@dataclass
class Generated:
    """A generated kernel: its module source, kernel name and what it exercises."""

    source: str
    name: str
    features: frozenset[str] = field(default_factory=frozenset)
    mutation: str | None = None

    def __repr__(self) -> str:  # hypothesis prints this on failure: show the source itself
        return f"Generated(mutation={self.mutation!r}, source=\n{self.source})"


def _w(draw, percent: int) -> bool:
    """A weighted coin: True with `percent`% probability (shrinks towards False)."""
    return draw(st.integers(0, 99)) >= 100 - percent


def _pick(draw, items):
    return draw(st.sampled_from(list(items)))


def _perm(draw, items):
    items = list(items)
    return list(draw(st.permutations(items))) if len(items) > 1 else items


def _next_pow2(n: int) -> int:
    return 1 << (n - 1).bit_length()


class _G:
    """Drawing state shared by the pieces of one kernel: draw, features, the mutation."""

    def __init__(self, draw, mutation: str | None, known_bugs: bool = True) -> None:
        self.draw, self.mutation, self.feats, self.applied = draw, mutation, set(), set()
        self.known_bugs = known_bugs
        self.vector_rate = 0

    def mut(self, name: str, applies: bool = True) -> bool:
        """Is `name` the drawn mutation and can it be applied here? Records it if so."""
        if self.mutation == name and applies:
            self.applied.add(name)
            return True
        return False

    def final_mutation(self) -> str | None:
        return self.mutation if self.mutation in self.applied else None


@dataclass
class _Tail:
    lines: list[str]
    out_dtype: str
    ret: str       # the result type (the return annotation)
    to_hbm: str    # the DMA(s) from the committed DM tensor to `ret`


def _tail(g: _G, acc: str, lpk: Piece, lt: list[Piece], spatial: list[Piece], out_axes: list[str],
          main: bool, out_elems: int) -> _Tail:
    """`[cast] .commit_trim [.commit_cast(_relu)] .commit` and the result type for a 32-bit
    (or narrower, `acc`) stream with packet `lpk` (live cells first) and time `lt`; the
    result has `out_elems` elements."""
    draw, feats = g.draw, g.feats
    lpk_live = lpk.live if lpk.axis else 1
    post = "none"
    r = draw(st.integers(0, 99))
    if r < 30 and acc in ("f32", "i32"):
        post = "cast"
    elif r < 45 and acc == "f32" and main:
        post = "commit_cast"
    elif r < 55 and acc == "f32" and main:
        post = "commit_cast_relu"
    lines: list[str] = []
    out_dtype = acc
    base = Piece(lpk.axis, lpk.total, lpk.step, lpk.extent) if lpk.axis else Piece(None)

    def with_pad(n: int) -> Piece:
        if base.axis and n < base.live:  # a prefix that drops live cells (mutations only)
            return Piece(base.axis, base.total, base.step, n)
        return base.padded(n) if base.axis else pad1(n)

    if g.vector_rate and acc in ("i32", "f32") and main and _w(draw, g.vector_rate):  # vector_chains.py
        lines += vector_pass(draw, feats, acc, vector_way(lpk, lt))
    if post == "cast":
        targets = ["bf16", "f8e4m3", "f8e5m2"] if acc == "f32" else ["i8", "i16", "i4"]
        if not g.known_bugs:  # a one-byte result: test_regressions.test_one_byte_result_dma
            targets = [t for t in targets if out_elems * BITS[t] > 8]
        d2 = _pick(draw, targets)
        if g.mut("bad_cast"):
            d2 = "bf16" if acc == "i32" else "i8"
        fe2 = 256 // BITS[d2]
        lines.append(f".cast({d2}, {q([with_pad(fe2)])})")
        out_dtype = d2
        feats.add(f"cast:{d2}")
    elif post in ("commit_cast", "commit_cast_relu"):
        feats.add(post)
    ob = BITS[out_dtype]
    if post in ("commit_cast", "commit_cast_relu"):
        widths = [k for k in (4, 8) if k >= lpk_live]
    else:
        widths = [k for k in range(1, 256 // ob + 1) if (k * ob) % 64 == 0 and k * ob <= 256 and k >= lpk_live]
    n = _pick(draw, widths)
    if g.mut("trim_narrow"):
        n = 32 // ob  # 4 bytes: below the 8-byte minimum
    trim = with_pad(n)
    if g.mut("commit_drop", trim.axis is not None and trim.live > 1):
        trim = Piece(trim.axis, trim.total, trim.step, trim.live // 2, None)  # drops live cells
    lines.append(f".commit_trim({q([trim])})")
    if post in ("commit_cast", "commit_cast_relu"):
        lines.append(f".{post}(bf16)")
        out_dtype = "bf16"
    feats.add(f"trim_bytes:{trim.size * BITS[out_dtype] // 8}")

    # commit element: [T, P] (default), or with the time factors transposed
    time_items = live(lt)
    if _w(draw, 30):
        commit_arg = ""
        element = time_items + live([trim])
        feats.add("commit_default")
    else:
        # a padded time factor keeps its place: sequence() matches a padding factor only
        # with the same live digits inner to it (docs/machine/index.md), so only unpadded times move
        movable = all(p.pad is None for p in time_items)
        ti = _perm(draw, time_items) if movable and _w(draw, 40) else time_items
        if ti != time_items:
            feats.add("commit_transposed")
        element = ti + live([trim])
        commit_arg = q(element)
    lines.append(f".commit({commit_arg})")

    # result axes: to_hbm's default (first appearance in Cluster, Slice, Element) or any order
    hbm_default = _w(draw, 20)
    if hbm_default:
        axes_: list[str] = []
        for p in spatial + element:
            if p.axis and p.axis not in axes_:
                axes_.append(p.axis)
        feats.add("to_hbm_default")
    else:
        axes_ = _perm(draw, out_axes)
        if axes_ != out_axes:
            feats.add("hbm_transposed")
    first = f'HbmTensor[{out_dtype}, Chip, m("{", ".join(axes_) or "1"}")]'
    to_hbm = ".to_hbm(ctx.tdma)" if hbm_default else f".to_hbm(ctx.tdma, {first})"
    ret = first
    if len(axes_) > 1 and _w(draw, 15):  # then an HBM -> HBM transposition
        again = _perm(draw, axes_)
        if again != axes_:
            ret = f'HbmTensor[{out_dtype}, Chip, m("{", ".join(again)}")]'
            to_hbm += f".to_hbm(ctx.tdma, {ret})"
            feats.add("hbm_to_hbm_result")
    return _Tail(lines, out_dtype, ret, to_hbm)


@st.composite
def kernels(draw, illegal_rate: int = 12, copy_rate: int = 12, known_bugs: bool = True,
            vector_rate: int = 0) -> Generated:
    """One generated kernel: a contraction (most), or an element-wise copy through the
    fetch adapters and the Cast Engine (`copy_rate`%); `illegal_rate`% get a mutation;
    `vector_rate`% of the 32-bit main-context streams run a Vector Engine pass first (0, the
    default, draws nothing for it, so the other tests' seeded kernels stay as they were).

    `known_bugs=False` steers around the shapes of the three bugs this generator found
    (one-byte results, the `commit_drop` mutation whose result DMA into HBM replicates a
    dropped digit, 4-bit one-nibble bursts), all fixed and pinned in test_regressions.py;
    the default exercises them."""
    names = MUTATIONS if known_bugs else tuple(n for n in MUTATIONS if n != "commit_drop")
    mutation = _pick(draw, names) if _w(draw, illegal_rate) else None
    g = _G(draw, mutation, known_bugs)
    g.vector_rate = vector_rate
    if _w(draw, copy_rate):
        return _copy_kernel(g)
    return _contraction_kernel(g)


def _contraction_kernel(g: _G) -> Generated:  # noqa: C901 - one template, many knobs
    draw, feats, mutation = g.draw, g.feats, g.mutation

    # ---- operand dtypes ------------------------------------------------------------
    op = _pick(draw, OPERANDS)
    b = BITS[op]
    fe = 256 // b
    acc = "f32" if op in FLOATS else "i32"
    pack = _pick(draw, [1, 2])
    OP = fe * pack
    feats |= {f"dtype:{op}", f"pack:{pack}"}

    # ---- the C (kept column) and K (contracted) axes ---------------------------------
    has_c = _w(draw, 25)
    w_has_c = False
    short_k = False
    if has_c:
        SC = _pick(draw, [c for c in (2, 4, 8, 16, 32) if c <= OP])
        Kp = OP // SC
        w_has_c = draw(st.booleans())
        if w_has_c:
            Kt = _pick(draw, [1, 2, 3, 4]) if Kp > 1 else _pick(draw, [2, 3, 4])
        else:  # the TRF holds only K: whole flits of K, walked by time
            unit = max(1, fe // Kp)
            Kt = unit * _pick(draw, [1, 2])
        SK = Kp * Kt
        Kf = Kp
        feats |= {"columns", "w_has_c" if w_has_c else "w_bcast_c", f"tree_depth:{int(math.log2(Kp))}"}
    else:
        SC, Kp = 1, OP
        short_k = pack == 1 and _w(draw, 15)
        if short_k:
            SK = _pick(draw, [fe // 4, fe // 2, 3 * fe // 4])
            Kt, Kf = 1, SK
            feats.add("short_k_padded")
        else:
            Kt = _pick(draw, [1, 2, 3, 4])
            SK = OP * Kt
            Kf = OP * _pick(draw, [d for d in range(1, Kt + 1) if Kt % d == 0])
    if Kt > 1:
        feats.add("k_in_time")

    # ---- the I axis (stream rows) ----------------------------------------------------
    has_i = _w(draw, 75)
    I_s = I_t = I_dm = None
    cluster = pad1(2)
    SI = 1
    if has_i:
        Is = _pick(draw, [1, 1, 2, 4, 8])
        It = _pick(draw, [1, 2, 3, 4])
        if It == 1 and _w(draw, 20):
            Is = _pick(draw, [3, 5, 6])  # a ragged slice piece: I # 64
            feats.add("ragged_slices")
        i_pad = None
        if Is == 1 and _w(draw, 25):
            It = _pick(draw, [3, 5, 6, 7])
            if draw(st.booleans()):
                i_pad = _next_pow2(It)
                feats.add("time_padding")
        if Is * It == 1:
            It = 2
        SI = Is * It
        if draw(st.booleans()):  # slice-outer
            I_s, I_t = dig("I", SI, It, Is), dig("I", SI, 1, It)
        else:
            I_s, I_t = dig("I", SI, 1, Is), dig("I", SI, Is, It)
            if Is > 1 and It > 1:
                feats.add("slice_inner")
        I_dm = I_t
        if i_pad:
            I_t = I_t.padded(i_pad)
        ckind = _pick(draw, ["pad", "pad", "one", "digit"])
        if ckind == "one":
            cluster = Piece(None)
        elif ckind == "digit" and Is % 2 == 0:
            cluster = dig("I", SI, I_s.step * Is // 2, 2)
            I_s = dig("I", SI, I_s.step, Is // 2)
            feats.add("cluster_digit")
    elif _w(draw, 30):
        cluster = Piece(None)

    # ---- the J axis (TRF rows) ------------------------------------------------------
    has_j = _w(draw, 70)
    J_l = J_t = J_s = None
    SJ, L, Jt = 1, 1, 1
    jt_where = "fetch"
    if has_j:
        L = _pick(draw, [1, 2, 4, 8])
        Jt = _pick(draw, [1, 1, 2, 4, 3])
        Js = _pick(draw, [1, 1, 2, 4])
        if L * Jt * Js == 1:
            L = 2
        SJ = L * Jt * Js
        order = _perm(draw, ["slice", "time", "lane"])
        sizes = {"slice": Js, "time": Jt, "lane": L}
        pieces = {}
        step = 1
        for name in reversed(order):
            pieces[name] = dig("J", SJ, step, sizes[name])
            step *= sizes[name]
        J_l, J_t, J_s = (pieces[n] if sizes[n] > 1 else None for n in ("lane", "time", "slice"))
        jt_where = _pick(draw, ["fetch", "outer"]) if J_t is not None else "fetch"
        feats.add(f"lanes:{L}")
        if J_t is not None:
            feats.add(f"j_time_{jt_where}")
    else:
        feats.add("lanes:1")

    w_has_i = has_i and I_t.size == 1 and _w(draw, 25)
    if w_has_i:
        feats.add("batched_weights")

    # ---- slices ---------------------------------------------------------------------
    NS = _pick(draw, [64, 64, 64, 128, 256])
    sl = _slice_order(_perm(draw, live([I_s, J_s])))
    slive = msize(sl)
    bracket = draw(st.booleans())
    slice_text = _slice_text(sl, NS, bracket)
    if len(sl) > 1 and not slice_text.startswith("["):
        feats.add("slice_inner_padding")
    assert slive <= NS

    # ---- stream (x) pieces ----------------------------------------------------------
    C_all = dig("C", SC, 1, SC) if has_c else None
    Kfetch = dig("K", SK, 1, Kf)
    Ko = dig("K", SK, Kf, SK // Kf) if SK // Kf > 1 else None
    x_src = op
    x_adapters: list[str] = []
    if op == "bf16" and (SK * SC * 8) % 64 == 0 and _w(draw, 25):
        x_src = _pick(draw, ["f8e4m3", "f8e5m2"])
        x_adapters.append("fetch_table_lookup(bf16)")
        feats.add("lut")
    elif op in ("f8e4m3", "f8e5m2") and (SK * SC * 4) % 64 == 0 and _w(draw, 25):
        x_src = "f4e2m1"
        x_adapters.append(f"fetch_table_lookup({op})")
        feats.add("lut")
    if _w(draw, 25):
        x_adapters.append(f"fetch_cast({op})")
        feats.add("fetch_cast_identity")
    stream_dtype = op
    zp = None
    if op in ("i8", "i4") and _w(draw, 30):
        stream_dtype = "i9" if op == "i8" else "i5"
        lo, hi = (-128, 127) if op == "i8" else (-8, 7)
        zp = draw(st.integers(lo, hi))
        if g.mut("zp_range"):
            zp = hi + 1 + draw(st.integers(0, 5))
        x_adapters.append(f"fetch_zero_point_sub({stream_dtype}, {zp})")
        feats.add("zero_point")

    # x HBM / DM element layouts. DMA-5: the burst into DM (the run both elements share
    # innermost) is a multiple of 8 bytes; FETCH-10: a 4-bit packet is read contiguously.
    src_bits = BITS[x_src]
    K_all = dig("K", SK, 1, SK)
    kc = has_c and Kp == 1 and (src_bits == 4 or draw(st.booleans()))  # x HBM [I, K, C]
    layouts = []
    if kc:
        layouts.append("natural")
    else:
        if not (has_c and src_bits == 4 and Kp % 2):
            layouts.append("natural")
        if not short_k and ((not has_c) or (Kp * src_bits) % 64 == 0):
            layouts.append("blocked")
    x_layout = _pick(draw, layouts)
    if kc:
        x_dm = live([I_dm, K_all, C_all])
        feats.add("x_hbm_kc")
    elif x_layout == "natural":
        x_dm = live([I_dm, C_all, K_all])
    else:
        x_dm = _perm(draw, live([I_dm, Ko])) + live([C_all, Kfetch])
        feats.add("x_blocked")
    if g.mut("dma_transpose", I_dm is not None and I_dm.size > 1):
        x_dm = live([dig("K", SK, 1, SK), C_all, I_dm])

    # fetch time: I_t, J_t (if re-read), Ko in any order
    ft_items = live([I_t, J_t if jt_where == "fetch" else None, Ko])
    ft = _perm(draw, ft_items)
    fp = live([C_all, Kfetch])
    if short_k:
        fp = [dig("K", SK, 1, SK)]

    # collect
    if short_k:
        pouter, pflit = [], [dig("K", SK, 1, SK, pad=fe)]
    elif has_c:
        if pack == 2:
            pouter = [dig("C", SC, SC // 2, 2)]
            pflit = live([dig("C", SC, 1, SC // 2), Kfetch])
        else:
            pouter, pflit = [], live([C_all, Kfetch])
    else:
        pouter = live([dig("K", SK, fe, Kf // fe)])
        pflit = [dig("K", SK, 1, fe)]

    # contract_outer
    if short_k:
        ot_stream, opk = list(ft), [dig("K", SK, 1, SK, pad=fe)]
    elif has_c:
        ot_stream, opk = list(ft), live([C_all, Kfetch])
    else:
        ot_stream = ft + live([dig("K", SK, OP, Kf // OP)])
        opk = [dig("K", SK, 1, OP)]
    ot_bcast = [J_t] if (J_t is not None and jt_where == "outer") else []
    out_time = ot_stream + ot_bcast

    # contract_packet: C columns (maybe padded), or 1 (maybe padded)
    cp_pad = None
    if has_c:
        cp = C_all
        if 2 * SC <= 32 and _w(draw, 20):
            cp_pad = 2 * SC
    else:
        cp = Piece(None)
        if _w(draw, 10):
            cp_pad = _pick(draw, [2, 4])
    if cp_pad:
        cp = cp.padded(cp_pad) if cp.axis else pad1(cp_pad)
        feats.add("padded_columns")
    cols = cp.size

    kept = [p for p in out_time if p.axis != "K"]

    def inner_time(order: list[Piece]) -> int:
        red = [i for i, p in enumerate(order) if p.axis == "K"]
        return math.prod(p.size for p in order[red[0] + 1:] if p.axis != "K") if red else 1

    mode = _pick(draw, ["INTERLEAVED", "SEQUENTIAL"])

    def fits(order: list[Piece]) -> bool:
        it = inner_time(order)
        if mode == "INTERLEAVED":
            return 8 * it * cols <= 1024
        return L * it * 32 * math.ceil(cols / 32) <= 1024

    if not fits(out_time):  # LANE-6: move the reduced K inward
        if Ko is not None:
            ft = [p for p in ft if p is not Ko] + [Ko]
        if not short_k and not has_c:
            ot_stream = ft + live([dig("K", SK, OP, Kf // OP)])
        else:
            ot_stream = list(ft)
        if not fits(ot_stream + ot_bcast) and ot_bcast:
            jt_where, ot_bcast = "fetch", []
            ft = live([J_t]) + ft
            ot_stream = ([J_t] + ot_stream) if J_t is not None else ot_stream
        out_time = ot_stream + ot_bcast
        kept = [p for p in out_time if p.axis != "K"]
    if inner_time(out_time) > 1:
        feats.add("inner_time_gt1")
    feats.add(f"lane_mode:{mode}")

    # contract_lane
    lane_piece = J_l
    if mode == "INTERLEAVED":
        lt = kept + live([cp])
        lpk = lane_piece.padded(8) if lane_piece is not None else pad1(8)
    else:
        p_hi = None
        if cols <= 8:
            lpk = C_all.padded(8) if has_c else pad1(8)
        elif cols == 16 and cp_pad:  # C # 16 with SC = 8
            p_hi, lpk = pad1(2), dig("C", SC, 1, 8)
        elif cols == 32 and cp_pad:  # C # 32 with SC = 16
            p_hi, lpk = Piece("C", SC, 8, 2, 4), dig("C", SC, 1, 8)
        else:  # C with 16 or 32 columns
            p_hi, lpk = dig("C", SC, 8, SC // 8), dig("C", SC, 1, 8)
        lt = kept + live([lane_piece, p_hi])

    # ---- after the lane fold: cast / trim / commit conversion, commit, to_hbm ----------
    out_axes_all = [a for a, ok in (("I", has_i), ("J", has_j), ("C", has_c)) if ok]
    spatial = live([cluster]) + live(sl)
    out_elems = SI * SJ * SC
    tails = [_tail(g, acc, lpk, lt, spatial, out_axes_all, main=True, out_elems=out_elems)]
    if mutation is None and _w(draw, 15):
        tails.append(_tail(g, acc, lpk, lt, spatial, out_axes_all, main=True, out_elems=out_elems))
        feats.add("two_results")

    # ---- the TRF operand (w) --------------------------------------------------------
    w_op = op
    if g.mut("mixed_operands", op in ("i8", "f8e4m3", "f8e5m2")):
        w_op = {"i8": "f8e4m3", "f8e4m3": "f8e5m2", "f8e5m2": "i8"}[op]
    w_ctx = "main" if _w(draw, 20) else "sub"
    if w_has_c and (Kp * b) % 64 != 0:
        w_ctx = "main"  # the sub context reads 8 bytes: a short K % Kp run needs main
    w_src = w_op
    w_adapters: list[str] = []
    if w_ctx == "main" and w_op == "bf16" and (SK * 8) % 64 == 0 and _w(draw, 30):
        w_src = _pick(draw, ["f8e4m3", "f8e5m2"])
        w_adapters.append("fetch_table_lookup(bf16)")
        feats.add("lut_weights")
    elif w_ctx == "main" and w_op in ("f8e4m3", "f8e5m2") and (SK * 4) % 64 == 0 and _w(draw, 30):
        w_src = "f4e2m1"
        w_adapters.append(f"fetch_table_lookup({w_op})")
        feats.add("lut_weights")
    if _w(draw, 25):
        w_adapters.append(f"fetch_cast({w_op})")
    feats.add(f"trf_ctx:{w_ctx}")

    w_i = dig("I", SI, 1, SI) if w_has_i else None
    w_hbm = live([w_i, dig("J", SJ, 1, SJ) if has_j else None, C_all if w_has_c else None,
                  dig("K", SK, 1, SK)])
    j_dm = _perm(draw, live([J_l, J_t]))
    if w_has_c:
        wk_blocked = (Kp * BITS[w_src]) % 64 == 0 and (w_ctx == "sub" or draw(st.booleans()))
        if wk_blocked:
            w_kpart = live([dig("K", SK, Kp, Kt), C_all, Kfetch])
        else:
            w_kpart = live([C_all, dig("K", SK, 1, SK)])
        w_ft = live([J_l, J_t, dig("K", SK, Kp, Kt)])
        w_fp = live([C_all, Kfetch])
        if pack == 2:
            w_pouter, w_pflit = [dig("C", SC, SC // 2, 2)], live([dig("C", SC, 1, SC // 2), Kfetch])
        else:
            w_pouter, w_pflit = [], live([C_all, Kfetch])
        w_el = live([J_t, dig("K", SK, Kp, Kt), C_all, Kfetch])
    else:
        w_kpart = [dig("K", SK, 1, SK)]
        if short_k:
            w_ft, w_fp = live([J_l, J_t]), [dig("K", SK, 1, SK)]
            w_pouter, w_pflit = [], [dig("K", SK, 1, SK, pad=fe)]
            w_el = live([J_t, dig("K", SK, 1, SK, pad=fe)])
        else:
            kfw = _pick(draw, sorted({SK, fe}))
            w_ft = live([J_l, J_t, dig("K", SK, kfw, SK // kfw)])
            w_fp = [dig("K", SK, 1, kfw)]
            w_pouter, w_pflit = live([dig("K", SK, fe, kfw // fe)]), [dig("K", SK, 1, fe)]
            w_el = live([J_t, dig("K", SK, 1, SK)])
    w_dm = j_dm + w_kpart
    lane_text = q([J_l])
    if g.mut("three_lanes"):
        lane_text = 'm("1 # 3")'
    # to_trf() infers the lane as the longest prefix of the collect time sharing no axis
    # with the packet: the default is ours when every other time factor is a packet axis
    p_axes = {p.axis for p in w_pflit}
    if mutation is None and all(p.axis in p_axes for p in live(w_ft + w_pouter) if p is not J_l) \
            and _w(draw, 30):
        trf_args = ""
        feats.add("to_trf_default")
    else:
        trf_args = f"{lane_text}, {q(w_el)}"

    # ---- main-chain mutations applied to the texts -----------------------------------
    main_ctx = "sub" if g.mut("sub_contract") else "main"
    if g.mut("bad_fetch_cast"):
        x_adapters = [a for a in x_adapters if not a.startswith("fetch_zero")]
        x_adapters.append("fetch_cast(bf16)" if op != "bf16" else "fetch_cast(i8)")
    collect_t, collect_p = ft + pouter, pflit
    if g.mut("half_flit", not short_k and not has_c):
        collect_t = ft + live([dig("K", SK, fe // 2, Kf // (fe // 2))])
        collect_p = [dig("K", SK, 1, fe // 2)]
    fetch_t = ft
    if g.mut("drop_fetch", bool(ft)):
        fetch_t = ft[1:]
        collect_t = fetch_t + pouter
    ct_kept = kept
    if g.mut("time_order"):
        ct_kept = list(reversed(kept)) if len(kept) > 1 else kept + [dig("K", SK, 1, SK)]
    packet_text = q([cp])
    if g.mut("packet_cols"):
        packet_text = 'm("1 # 3")' if cols <= 8 else 'm("1 # 64")'
    lane_mode = mode
    if g.mut("lane_mode", lane_piece is not None or cols > 1):  # with 1 lane and 1 column both agree
        lane_mode = "SEQUENTIAL" if mode == "INTERLEAVED" else "INTERLEAVED"

    # ---- render ----------------------------------------------------------------------
    ax = [f"{a}={s}" for a, s, ok in (("I", SI, has_i), ("J", SJ, has_j), ("C", SC, has_c), ("K", SK, True))
          if ok]
    x_hbm = live([dig("I", SI, 1, SI) if has_i else None] + ([K_all, C_all] if kc else [C_all, K_all]))
    x_param, x_moves = _x_moves(g, x_src, x_hbm, x_dm, sl, NS)
    header = _header(ax, mt([cluster]) if cluster.size > 1 else "1", slice_text,
                     [("x", x_src, x_param), ("w", w_src, q(w_hbm))], tails)
    body = [
        *x_moves,
        f"    x = x.to_dm(ctx.tdma, DmTensor[{x_src}, Chip, Cluster, Slice, {q(x_dm)}])",
        f"    w = w.to_dm(ctx.tdma, DmTensor[{w_src}, Chip, Cluster, Slice, {q(w_dm)}])",
        f"    w_trf = (ctx.{w_ctx}.begin(w.view())",
        f"             .fetch({q(w_ft)}, {q(w_fp)})",
        *[f"             .{a}" for a in w_adapters],
        f"             .collect({q(w_ft + w_pouter)}, {q(w_pflit)})",
        f"             .to_trf({trf_args}))",
    ]
    for k, tail in enumerate(tails):
        body += [
            f"    y{k} = (ctx.{main_ctx}.begin(x.view())",
            f"          .fetch({q(fetch_t)}, {q(fp)})",
            *[f"          .{a}" for a in x_adapters],
            f"          .collect({q(collect_t)}, {q(collect_p)})",
            f"          .contract_outer(w_trf, {q(out_time)}, {q(opk)})",
            f"          .contract_packet({packet_text})",
            f"          .contract_time({q(ct_kept)})",
            f"          .contract_lane({q(lt)}, {q([lpk])}, LaneMode.{lane_mode})",
            *[f"          {t}" for t in tail.lines[:-1]],
            f"          {tail.lines[-1]})",
        ]
    return _finish(g, header, body, tails, "contraction")


# element-wise chains: (source dtype, adapters, dtype after the adapters, main only)
_COPY_CHAINS = [
    ("i8", ["fetch_cast(i32)"], "i32", False), ("i4", ["fetch_cast(i32)"], "i32", True),
    ("i16", ["fetch_cast(i32)"], "i32", False), ("f8e4m3", ["fetch_cast(f32)"], "f32", False),
    ("f8e5m2", ["fetch_cast(f32)"], "f32", False), ("bf16", ["fetch_cast(f32)"], "f32", False),
    ("f32", ["fetch_cast(bf16)"], "bf16", False), ("f32", [], "f32", False), ("i32", [], "i32", False),
    ("f32", ["fetch_cast(f32)"], "f32", False), ("bf16", [], "bf16", False), ("i8", [], "i8", False),
    ("i4", ["fetch_cast(i4)"], "i4", False), ("f8e5m2", [], "f8e5m2", False),
    ("f8e4m3", ["fetch_table_lookup(bf16)"], "bf16", True),
    ("f8e5m2", ["fetch_table_lookup(bf16)", "fetch_cast(bf16)"], "bf16", True),
    ("f4e2m1", ["fetch_table_lookup(f8e4m3)"], "f8e4m3", True),
    ("f4e2m1", ["fetch_table_lookup(f8e5m2)"], "f8e5m2", True),
]


def _copy_kernel(g: _G) -> Generated:
    """x[I, K] -> fetch -> adapters -> collect -> [cast] -> commit: the widening, narrowing
    and table-lookup conversions and the Cast Engine on f32 / i32 inputs (examples/widening_copy.py)."""
    draw, feats = g.draw, g.feats
    src, adapters, d2, main_only = _pick(draw, _COPY_CHAINS)
    ctx = "main" if main_only or _w(draw, 70) else "sub"
    if ctx == "sub" and BITS[d2] > 4 * BITS[src]:
        ctx = "main"  # FETCH-9
    feats |= {f"copy:{src}->{d2}", f"copy_ctx:{ctx}"}
    bs, b2 = BITS[src], BITS[d2]
    fe2 = 256 // b2
    kfs = [k for k in (8, 16, 32, 64) if (k * bs) % 64 == 0 and (k * b2) % 64 == 0]
    Kf = _pick(draw, kfs)
    nk = _pick(draw, [1, 2, 3, 4])
    SK = Kf * nk
    Ko = dig("K", SK, Kf, nk) if nk > 1 else None
    Kfet = dig("K", SK, 1, Kf)
    if Kf >= fe2:
        pouter, flit = live([dig("K", SK, fe2, Kf // fe2)]), dig("K", SK, 1, fe2)
    else:
        pouter, flit = [], dig("K", SK, 1, Kf, pad=fe2)
        feats.add("copy_padded_flit")

    Is = _pick(draw, [1, 2, 4])
    It = _pick(draw, [1, 2, 3])
    SI = Is * It
    has_i = SI > 1
    I_s = I_t = None
    if has_i:
        if draw(st.booleans()):
            I_s, I_t = dig("I", SI, It, Is), dig("I", SI, 1, It)
        else:
            I_s, I_t = dig("I", SI, 1, Is), dig("I", SI, Is, It)
    I_dm = I_t
    if I_t is not None and Is == 1 and It == 3 and _w(draw, 30):
        I_t = I_t.padded(4)
        feats.add("time_padding")
    NS = _pick(draw, [64, 64, 128])
    sl = live([I_s])
    slice_text = f"{sl[0].text()} # {NS}" if sl else f"1 # {NS}"
    cluster = "1" if _w(draw, 30) else "1 # 2"

    x_dm = live([I_dm, dig("K", SK, 1, SK)])
    if g.mut("dma_transpose", I_dm is not None and I_dm.size > 1):
        x_dm = live([dig("K", SK, 1, SK), I_dm])
    ft = _perm(draw, live([I_t, Ko]))
    fetch_t = ft
    if g.mut("drop_fetch", bool(ft)):
        fetch_t = ft[1:]
    if g.mut("bad_fetch_cast"):
        adapters = adapters + [f"fetch_cast({'bf16' if src in ('i8', 'i4', 'i16', 'i32') else 'i8'})"]
    collect_t, collect_p = fetch_t + pouter, [flit]
    if g.mut("half_flit", Kf >= fe2 and fe2 >= 2):
        collect_t, collect_p = fetch_t + live([dig("K", SK, fe2 // 2, Kf // (fe2 // 2))]), [dig("K", SK, 1, fe2 // 2)]
    tail = _tail(g, d2, flit, ft + pouter, sl, ["I", "K"] if has_i else ["K"], main=ctx == "main",
                 out_elems=SI * SK)
    ax = ([f"I={SI}"] if has_i else []) + [f"K={SK}"]
    x_hbm = live([dig("I", SI, 1, SI) if has_i else None, dig("K", SK, 1, SK)])
    x_param, x_moves = _x_moves(g, src, x_hbm, x_dm, sl, NS)
    header = _header(ax, cluster, slice_text, [("x", src, x_param)], [tail])
    body = [
        *x_moves,
        f"    x = x.to_dm(ctx.tdma, DmTensor[{src}, Chip, Cluster, Slice, {q(x_dm)}])",
        f"    y0 = (ctx.{ctx}.begin(x.view())",
        f"          .fetch({q(fetch_t)}, {q([Kfet])})",
        *[f"          .{a}" for a in adapters],
        f"          .collect({q(collect_t)}, {q(collect_p)})",
        *[f"          {t}" for t in tail.lines[:-1]],
        f"          {tail.lines[-1]})",
    ]
    return _finish(g, header, body, [tail], "copy")


def _slice_order(pieces: list[Piece]) -> list[Piece]:
    """A ragged piece (size not a power of two) goes last, to be padded on its own: padding
    a pair that holds it makes one ragged factor over both axes, which no DMA can fill
    (docs/machine/index.md: an Op factor is never refined)."""
    return [p for p in pieces if not _ragged(p)] + [p for p in pieces if _ragged(p)]


def _ragged(p: Piece) -> bool:
    return p.size & (p.size - 1) != 0


def _slice_text(pieces: list[Piece], total: int, bracket: bool) -> str:
    """`pieces` (in order) padded to `total` slices: `[a, b] # n` or `a, b # (n / |a|)`."""
    if not pieces:
        return f"1 # {total}"
    if len(pieces) == 1:
        return f"{pieces[0].text()} # {total}"
    if bracket and not any(_ragged(p) for p in pieces):
        return f"[{mt(pieces)}] # {total}"
    head = pieces[:-1]
    return f"{mt(head)}, {pieces[-1].text()} # {total // msize(head)}"


def _x_moves(g: _G, dtype: str, x_hbm: list[Piece], x_dm: list[Piece], sl: list[Piece], NS: int,
             name: str = "x") -> tuple[str, list[str]]:
    """The parameter's HBM element and the DMAs that bring it to `DmTensor[..., Slice, x_dm]`:
    sometimes through an HBM -> HBM transposition (the host array is transposed) and/or a
    DM -> DM relayout (another element order, other slices of the same count)."""
    draw, feats = g.draw, g.feats
    lines: list[str] = []
    param = q(x_hbm)
    if len(x_hbm) > 1 and _w(draw, 15):
        host = _perm(draw, x_hbm)
        if host != x_hbm:
            param = q(host)
            lines.append(f"    {name} = {name}.to_hbm(ctx.tdma, HbmTensor[{dtype}, Chip, {q(x_hbm)}])")
            feats.add("hbm_to_hbm_input")
    if param == q(x_hbm) and len(x_hbm) > 1 and _w(draw, 15):  # a padded parameter: its host array is unpadded
        outer = x_hbm[0]
        param = q([outer.padded(outer.size + _pick(draw, (1, 3, outer.size)))] + x_hbm[1:])
        feats.add("padded_param")
    inner = x_dm[-1] if x_dm else None
    if inner is not None and (inner.size * BITS[dtype]) % 64 == 0 and _w(draw, 20):
        first = _perm(draw, x_dm[:-1]) + [inner]
        pieces = _slice_order(_perm(draw, sl))
        head = msize(pieces[:-1]) if pieces else 1
        lead = _pick(draw, [a for a in (1, 2, 4) if NS // a // head >= max(msize(pieces[-1:]), 1)])
        body = _slice_text(pieces, NS // lead, draw(st.booleans()))
        slice2 = body if lead == 1 else f"1 # {lead}, {body}"
        dst = f'DmTensor[{dtype}, Chip, Cluster, m("{slice2}"), {q(first)}]'
        lines.append(f"    {name} = {name}.to_dm(ctx.tdma, {dst})")
        feats.add("dm_to_dm")
    return param, lines


def _header(ax: list[str], cluster: str, slice_text: str, params: list[tuple[str, str, str]],
            tails: list[_Tail]) -> list[str]:
    ret = tails[0].ret if len(tails) == 1 else f"tuple[{', '.join(t.ret for t in tails)}]"
    sig = [f"       {n}: HbmTensor[{d}, Chip, {e}]" for n, d, e in params]
    sig[0] = "def dk(ctx: Context,\n" + sig[0]
    return [
        "from npu_opt import *",
        "",
        f"axes({', '.join(ax)})",
        "",
        'Chip = m("1")',
        f'Cluster = m("{cluster}")',
        f'Slice = m("{slice_text}")',
        "",
        "",
        "@device(chip=1)",
        ",\n".join(sig) + f") -> {ret}:",
    ]


INPLACE_RATE = 20  # % of the kernels that write their first result into an in-out parameter


def _in_place(g: _G, header: list[str], tails: list[_Tail]) -> tuple[list[str], list[str]]:
    """(header, closing lines): the results returned, or the first result written into
    `out: Mut[...]` by its final DMA and any others returned. The choice is a hash of the
    kernel drawn so far, not a draw, so the kernels generated for a seed stay the same."""
    results = [f"y{k}{t.to_hbm}" for k, t in enumerate(tails)]
    if zlib.crc32("\n".join(header + [t.to_hbm for t in tails]).encode()) % 100 >= INPLACE_RATE:
        return header, [f"    return {', '.join(results)}"]
    g.feats.add("in_place")
    first, rest = tails[0], tails[1:]
    cut = first.to_hbm.rfind(".to_hbm(ctx.tdma")
    old = tails[0].ret if len(tails) == 1 else f"tuple[{', '.join(t.ret for t in tails)}]"
    new = "None" if not rest else rest[0].ret if len(rest) == 1 else f"tuple[{', '.join(t.ret for t in rest)}]"
    head = header[:-1] + [header[-1].replace(f") -> {old}:", f",\n       out: Mut[{first.ret}]) -> {new}:")]
    closing = [f"    y0{first.to_hbm[:cut]}.to_hbm(ctx.tdma, out)"]
    return head, closing + ([f"    return {', '.join(results[1:])}"] if rest else [])


def _finish(g: _G, header: list[str], body: list[str], tails: list[_Tail], family: str) -> Generated:
    header, closing = _in_place(g, header, tails)
    lines = header + body + closing + [""]
    mutation = g.final_mutation()
    g.feats.add(f"family:{family}")
    if mutation:
        g.feats.add(f"mutation:{mutation}")
    return Generated("\n".join(lines), "dk", frozenset(g.feats), mutation)


# ---------------------------------------------------------------------------------------
# inputs

# special values: (finite: zeros, subnormals, smallest normals, extremes, ones; non-finite)
BF16_FINITE = np.array([0x0000, 0x8000, 0x0001, 0x007F, 0x8001, 0x0080, 0x8080, 0x7F7F, 0xFF7F,
                        0x3F80, 0xBF80, 0x2000, 0x1F80, 0x5F80], np.uint16)
BF16_NONFINITE = np.array([0x7F80, 0xFF80, 0x7FC0, 0x7F81, 0xFFC1], np.uint16)
E4M3_FINITE = np.array([0x00, 0x80, 0x01, 0x07, 0x87, 0x08, 0x7E, 0xFE, 0x38, 0xB8], np.uint8)
E4M3_NONFINITE = np.array([0x7F, 0xFF], np.uint8)  # no infinities in e4m3
E5M2_FINITE = np.array([0x00, 0x80, 0x01, 0x03, 0x83, 0x04, 0x7B, 0xFB, 0x3C, 0xBC], np.uint8)
E5M2_NONFINITE = np.array([0x7C, 0xFC, 0x7D, 0x7E, 0x7F, 0xFF], np.uint8)
F32_FINITE = np.array([0, 0x80000000, 1, 0x007FFFFF, 0x00800000, 0x7F7FFFFF, 0xFF7FFFFF, 0x3F800000,
                       0x33800000, 0x477FE000, 0x477FF000], np.uint32)  # incl. bf16 rounding ties
F32_NONFINITE = np.array([0x7F800000, 0xFF800000, 0x7FC00000, 0x7F800001, 0xFFFFFFFF], np.uint32)
INT_EXTREME = {"i8": [-128, -127, -1, 0, 1, 126, 127], "i4": [-8, -7, -1, 0, 1, 6, 7],
               "i16": [-32768, -32767, -1, 0, 1, 32767], "i32": [-2**31, -2**31 + 1, -1, 0, 1, 2**31 - 1]}
INT_RANGE = {"i8": (-128, 127), "i4": (-8, 7), "i16": (-32768, 32767), "i32": (-2**31, 2**31 - 1)}


def _values(rng: np.random.Generator, dtype: str, shape: tuple[int, ...]) -> np.ndarray:
    """Host array of `dtype` (bit patterns for the small floats): ordinary values with
    special ones mixed in at a random density: zeros, subnormals, extremes and, less
    often (a single NaN poisons a whole sum), NaN and infinities; sometimes raw bits."""
    import ml_dtypes

    n = int(np.prod(shape))
    if dtype in INT_RANGE:
        lo, hi = INT_RANGE[dtype]
        host = {"i8": np.int8, "i4": np.int8, "i16": np.int16, "i32": np.int32}[dtype]
        out = rng.integers(lo, hi + 1, n, dtype=np.int64)
        mask = rng.random(n) < rng.choice([0.0, 0.1, 0.3, 0.8])
        out[mask] = rng.choice(np.array(INT_EXTREME[dtype], np.int64), int(mask.sum()))
        return out.astype(host).reshape(shape)
    if dtype == "bf16":
        nice = (rng.uniform(-1, 1, n).astype(np.float32).view(np.uint32) >> 16).astype(np.uint16)
        finite, nonfinite, nbits = BF16_FINITE, BF16_NONFINITE, 16
    elif dtype in ("f8e4m3", "f8e5m2"):
        t = ml_dtypes.float8_e4m3fn if dtype == "f8e4m3" else ml_dtypes.float8_e5m2
        nice = rng.uniform(-2, 2, n).astype(np.float32).astype(t).view(np.uint8)
        finite, nonfinite, nbits = ((E4M3_FINITE, E4M3_NONFINITE) if dtype == "f8e4m3"
                                    else (E5M2_FINITE, E5M2_NONFINITE)) + (8,)
    elif dtype == "f4e2m1":
        return rng.integers(0, 16, n).astype(np.uint8).reshape(shape)  # every code is finite
    elif dtype == "f32":
        nice = rng.uniform(-4, 4, n).astype(np.float32).view(np.uint32)
        finite, nonfinite, nbits = F32_FINITE, F32_NONFINITE, 32
    else:
        raise ValueError(f"no input generator for {dtype}")
    mode = rng.choice(["nice", "finite", "nonfinite", "bits"], p=[0.35, 0.45, 0.15, 0.05])
    if mode == "bits":
        return rng.integers(0, 1 << nbits, n, dtype=np.uint64).astype(nice.dtype).reshape(shape)
    out = nice.copy()
    mask = rng.random(n) < (0.0 if mode == "nice" else rng.choice([0.05, 0.2, 0.5]))
    out[mask] = rng.choice(finite, int(mask.sum()))
    if mode == "nonfinite":
        mask = rng.random(n) < rng.choice([0.001, 0.005, 0.02])
        out[mask] = rng.choice(nonfinite, int(mask.sum()))
    return out.reshape(shape)


def equal_chip_copies(array: np.ndarray, chip: object) -> np.ndarray:
    """`array` (a host array of an HBM tensor on `chip`) with every broadcast Chip dimension
    holding copies of its first row: a valid input (tests that draw random inputs use it)."""
    for d in chip_broadcast_dims(chip):
        array = np.ascontiguousarray(np.broadcast_to(array.take([0], axis=d), array.shape))
    return array


def make_inputs(kernel, seed: int) -> list[np.ndarray]:
    """One host array per parameter of a loaded kernel, from its checked signature."""
    rng = np.random.default_rng(seed)
    arrays = []
    for t in (op.result.type for op in kernel.trace().kernel.params):
        if t.kind == "dm":  # a resident DM parameter: a buffer holding random values
            buf = DmBuffer(t, str(t), Device("rngd"))
            buf.write(_values(rng, str(t.dtype), buf.shape))
            arrays.append(buf)
            continue
        arrays.append(equal_chip_copies(_values(rng, str(t.dtype), host_array_shape(t)), t.chip))
    return arrays
