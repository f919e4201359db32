"""Hypothesis strategy generating view and tile kernels as SOURCE TEXT (docs/views.md).

`view_kernels()` draws one kernel `dk` copying tiles of `x[A, B]` into an HBM tensor made by
`new()`, a Python loop over tile starts:

- the tiled digit: the whole of `A` or `B`, or its outer (`/ k`) or inner (`% k`) digit;
- the tile length (1 drops the digit, otherwise a window padded back to the digit) and the
  destination start (the same, or mirrored so tiles land elsewhere);
- the route: HBM window -> HBM window directly (`dma_into`), HBM window -> fresh DM tensor
  (`dma_window`) -> HBM window, or HBM window -> window of a DM tensor made by `new()`
  (a `dma_into` DM) copied out whole at the end;
- the element dtype (i8, bf16, i16, f32) and the order of the output's axes;
- with `extras`: the output an in-place `Mut[...]` parameter instead of a `new()` tensor
  (the cells no tile writes keep the caller's values), and on the DM-write route a
  `memset` of the whole DM tensor first, the loop then writing every other tile.

`illegal_rate`% of kernels get one fault (`Generated.mutation`): a tile past its digit
(VIEW-3), a write tile padded with `#` (VIEW-2), or a write through a read view (VIEW-4).
The expected values are not computed here: the harness compares the backends, and the
naive model (naive_model.py) evaluates the same source.
"""

from __future__ import annotations

from hypothesis import strategies as st

from tests.differential.strategies import Generated

__all__ = ["view_kernels", "VIEW_MUTATIONS"]

VIEW_MUTATIONS = ("past_end", "read_pad_on_write", "write_read_view")
A, B = 16, 32


def _digit(draw, axis: str, size: int) -> tuple[str, int, str, str]:
    """(index text, digit extent, the digit's text in a level, the rest of that axis's text)."""
    kind = draw(st.sampled_from(["inner", "outer", "whole"]))
    if kind == "whole":
        return axis, size, axis, ""
    k = draw(st.sampled_from([2, 4]))
    if kind == "outer":
        return f"{axis} / {size // k}", k, f"{axis} / {size // k}", f"{axis} % {size // k}"
    return f"{axis} % {k}", k, f"{axis} % {k}", f"{axis} / {k}"


def _tile_text(order: list[str], axis: str, digit: str, rest: str, extent: int, length: int, pad: str,
               kind: str) -> str:
    """The level text of a tile: `digit` replaced by its window of `length`."""
    window = f"1 {pad} {extent}" if length == 1 else f"{digit} = {length} {pad} {extent}"
    parts = []
    for a in order:
        if a != axis:
            parts.append(a)
        elif not rest:
            parts.append(window)
        elif kind == "outer":
            parts += [window, rest]
        else:
            parts += [rest, window]
    return ", ".join(parts)


@st.composite
def view_kernels(draw, illegal_rate: int = 10, extras: bool = False) -> Generated:
    feats: set[str] = {"family:views"}
    mutation = draw(st.sampled_from(VIEW_MUTATIONS)) if draw(st.integers(0, 99)) < illegal_rate else None
    dtype = draw(st.sampled_from(["i8", "bf16", "i16", "f32"]))
    axis = draw(st.sampled_from(["A", "B"]))
    index, extent, digit, rest = _digit(draw, axis, A if axis == "A" else B)
    kind = "whole" if not rest else ("outer" if "/" in index else "inner")
    length = draw(st.sampled_from([n for n in (1, 2, 4, 8) if n <= extent and extent % n == 0]))
    starts = list(range(0, extent, length))
    mirror = draw(st.booleans())
    out_order = draw(st.sampled_from([["A", "B"], ["B", "A"]]))
    route = draw(st.sampled_from(["hbm", "dm", "dm_write"]))
    via_dm = route == "dm"
    feats |= {f"dtype:{dtype}", f"digit:{kind}", f"route:{route}", f"len:{min(length, 2)}"}
    src_t = _tile_text(["A", "B"], axis, digit, rest, extent, length, "#", kind)
    wpad = "#" if mutation == "read_pad_on_write" else "#{!}"
    dst_t = _tile_text(out_order, axis, digit, rest, extent, length, wpad, kind)
    dst_view = "out.view()" if mutation == "write_read_view" else "out.view_mut()"
    stop = extent + length if mutation == "past_end" else extent
    in_place = extras and draw(st.booleans())
    fill = extras and route == "dm_write" and draw(st.booleans())
    feats |= {"in_place"} if in_place else set()
    feats |= {"memset"} if fill else set()
    out_t = f"HbmTensor[{dtype}, Chip, m(\"{', '.join(out_order)}\")]"
    body = [f"    out = {out_t}.new()"] * (not in_place) + [
            f"    for s in range(0, {stop}, {2 * length if fill else length}):",
            f"        src = x.view().tile(m(\"{index}\"), {length}, m(\"{src_t}\"), s)"]
    to = f"{extent - length} - s" if mirror else "s"
    if via_dm:
        body.append(f"        d = src.to_dm(ctx.tdma, DmTensor[{dtype}, Chip, m(\"1 # 2\"), m(\"1 # 64\"), "
                    f"m(\"{_dm_element(axis, digit, rest, kind, length)}\")])")
        body.append("        src = d.view()")
    if route == "dm_write":  # the tiles land in a DM tensor made by new(), copied out whole
        dm_t = _tile_text(["A", "B"], axis, digit, rest, extent, length, wpad, kind)
        dm_view = "d.view()" if mutation == "write_read_view" else "d.view_mut()"
        top = 0 if in_place else 1
        body.insert(top, f"    d = DmTensor[{dtype}, Chip, m(\"1 # 2\"), m(\"1 # 64\"), m(\"A, B\")].new()")
        if fill:
            body.insert(top + 1, f"    d.view_mut().memset(ctx.sub, {draw(st.integers(-100, 100))})")
        body.append(f"        src.to_dm_view(ctx.tdma, {dm_view}.tile(m(\"{index}\"), {length}, m(\"{dm_t}\"), {to}))")
        body.append("    d.view().to_hbm_view(ctx.tdma, out.view_mut())")
    else:
        body.append(f"        dst = {dst_view}.tile(m(\"{index}\"), {length}, m(\"{dst_t}\"), {to})")
        body.append("        src.to_hbm_view(ctx.tdma, dst)")
    body.append("    return None" if in_place else "    return out")
    params = f"x: HbmTensor[{dtype}, Chip, m(\"A, B\")]" + (f", out: Mut[{out_t}]" if in_place else "")
    header = ["from npu_opt import *", "", f"axes(A={A}, B={B})", "", 'Chip = m("1")', "", "",
              "@device(chip=1)", f"def dk(ctx: Context, {params}) -> {'None' if in_place else out_t}:"]
    if mutation:
        feats.add(f"mutation:{mutation}")
    return Generated("\n".join(header + body + [""]), "dk", frozenset(feats), mutation)


def _dm_element(axis: str, digit: str, rest: str, kind: str, length: int) -> str:
    """The element of the DM copy of one tile: every live cell of the tile, in order."""
    window = f"{digit} = {length}"
    tiled = ([window, rest] if kind == "outer" else [rest, window]) if rest else [window]
    parts = []
    for a in ("A", "B"):
        if a != axis:
            parts.append(a)
        elif length > 1:
            parts += tiled
        elif rest:
            parts.append(rest)
    return ", ".join(parts)
