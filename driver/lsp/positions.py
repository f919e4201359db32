"""Positions between Python and the Language Server Protocol.

Python reports 1-based lines and columns counted in UTF-8 bytes (`ast`, code positions);
LSP counts 0-based lines and UTF-16 code units. A document is a list of lines; `offset`
turns an LSP position into an index of the text, for the scans completion and
signature help make.
"""

from __future__ import annotations

__all__ = ["utf16_col", "py_col", "offset", "position_of", "line_text"]


def line_text(lines: list[str], line0: int) -> str:
    return lines[line0] if 0 <= line0 < len(lines) else ""


def utf16_col(text: str, byte_col0: int) -> int:
    """The UTF-16 column of the UTF-8 byte column `byte_col0` of a line."""
    prefix = text.encode("utf-8")[:max(0, byte_col0)].decode("utf-8", errors="ignore")
    return len(prefix.encode("utf-16-le")) // 2


def py_col(text: str, utf16: int) -> int:
    """The UTF-8 byte column of the UTF-16 column `utf16` of a line."""
    units = text.encode("utf-16-le")[:max(0, utf16) * 2].decode("utf-16-le", errors="ignore")
    return len(units.encode("utf-8"))


def offset(lines: list[str], line0: int, utf16: int) -> int:
    """The index in `"\\n".join(lines)` of an LSP position."""
    before = sum(len(line) + 1 for line in lines[:line0])
    text = line_text(lines, line0)
    chars = len(text.encode("utf-16-le")[:max(0, utf16) * 2].decode("utf-16-le", errors="ignore"))
    return before + min(chars, len(text))


def position_of(lines: list[str], index: int) -> tuple[int, int]:
    """(line0, UTF-16 column) of an index in `"\\n".join(lines)`."""
    for n, line in enumerate(lines):
        if index <= len(line):
            return n, len(line[:index].encode("utf-16-le")) // 2
        index -= len(line) + 1
    return max(0, len(lines) - 1), 0
