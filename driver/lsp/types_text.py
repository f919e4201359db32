"""Types as the guide writes them, for hovers and inlay hints.

`Stream[i8; 1, 1 # 2, 1 # 256; K / 16, K % 16]` is the one-line form (the guide's
`Stream[D; Chip, Cluster, Slice; Time, Packet]`); `type_markdown` adds one row per level
with the mapping and its size, and the bytes a packet (or element) carries in flits.
"""

from __future__ import annotations

from typing import Any

from ir.dtypes import bytes_of

__all__ = ["LEVELS", "guide_text", "type_markdown", "describe", "level_sizes", "FLIT_BYTES"]

FLIT_BYTES = 32

# The level names of each type kind, in `levels()` order, and the groups the guide separates by `;`.
LEVELS: dict[str, tuple[tuple[str, ...], ...]] = {
    "hbm": (("Chip",), ("Element",)),
    "dm": (("Chip", "Cluster", "Slice"), ("Element",)),
    "trf": (("Chip", "Cluster", "Slice"), ("Lane", "Element")),
    "stream": (("Chip", "Cluster", "Slice"), ("Time", "Packet")),
    "cstream": (("Chip", "Cluster", "Slice"), ("Lane", "Time", "Packet")),
    "vrf": (("Chip", "Cluster", "Slice"), ("Element",)),
    "spm": (("Chip", "Cluster", "Pe"), ("Element",)),
}
_NAMES = {"hbm": "Hbm", "dm": "Dm", "trf": "Trf", "stream": "Stream", "cstream": "CStream", "vrf": "Vrf",
          "spm": "Spm"}


def _dtypes(t: Any) -> str:
    return f"{t.acc}, {t.dtype}" if t.kind == "cstream" else str(t.dtype)


def _level_texts(t: Any) -> list[tuple[str, str, int]]:
    """(level name, mapping text, size) of every level, each mapping printed once."""
    names = [n for group in LEVELS[t.kind] for n in group]
    return [(name, str(mp), mp.size) for name, mp in zip(names, t.levels())]


def _guide(t: Any, levels: list[tuple[str, str, int]]) -> str:
    texts = iter(text for _, text, _ in levels)
    groups = [", ".join(next(texts) for _ in group) for group in LEVELS[t.kind]]
    return f"{_NAMES[t.kind]}[{_dtypes(t)}; {'; '.join(groups)}]"


def guide_text(t: Any) -> str:
    """The one-line form: `Stream[i8; 1, 1 # 2, 1 # 256; K / 16, K % 16]`."""
    return _guide(t, _level_texts(t))


def level_sizes(t: Any) -> list[tuple[str, str, int]]:
    """(level name, mapping text, size) of every level."""
    return _level_texts(t)


def _bytes(n: int, dtype: Any) -> str:
    try:
        return f"{bytes_of(n, dtype)} bytes"
    except ValueError:
        return f"{n * dtype.bits} bits"


def _payload_line(t: Any) -> str:
    """What one step carries: a stream's packet in bytes and flits, a tensor's element per slice."""
    last = t.levels()[-1]
    if t.kind in ("stream", "cstream"):
        try:
            total = bytes_of(last.size, t.dtype)
        except ValueError:
            return f"packet {last.size} x {t.dtype}"
        flits = total / FLIT_BYTES
        shown = f"{flits:g} flit" + ("" if flits == 1 else "s")
        return f"packet {last.size} x {t.dtype} = {total} bytes = {shown} of {FLIT_BYTES} bytes"
    where = "per chip" if t.kind == "hbm" else "per processing element" if t.kind == "spm" else "per slice"
    return f"element {last.size} x {t.dtype} = {_bytes(last.size, t.dtype)} {where}"


def type_markdown(t: Any, title: str | None = None) -> str:
    """A hover's Markdown for type `t`: its guide form, a table of levels, the payload line."""
    return describe(t, title)[1]


def describe(t: Any, title: str | None = None) -> tuple[str, str]:
    """`guide_text(t)` and `type_markdown(t, title)`, the levels printed once for both."""
    levels = _level_texts(t)
    guide = _guide(t, levels)
    rows = ["| level | mapping | size |", "| --- | --- | --- |"]
    rows += [f"| {name} | `{text}` | {size} |" for name, text, size in levels]
    head = f"**{title}** → " if title else ""
    return guide, "\n".join([f"{head}`{guide}`", "", *rows, "", _payload_line(t)])
