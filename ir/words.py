"""The article before a name in a message: `a_an(x)` is "a x" or "an x" as x is read aloud.

A message that says `an {dtype} stream` reads "an bf16 stream" for bf16, and `pass a
{names} array` reads "pass a int32 array"; every message template puts `a_an(...)` before
an interpolated name or number instead (tests/test_message_articles.py checks the sources).

Names are read the way a kernel author says them: dtypes and the memories letter by letter
(`an i8`, `a bf16`, `an f32`, `a u8`, `an HbmTensor`, `a DmTensor`, `an SPM`), other words as
words (`an int`, `a float`, `a usize`), numbers as numbers (`an 8-byte`, `an 11-cell`,
`a 16-byte`).
"""

from __future__ import annotations

import functools
import re

__all__ = ["a_an", "article"]

# Letters whose name begins with a vowel sound: "eff", "aitch", "ell", "em", "en", "ess", "ex", ...
_VOWEL_LETTERS = frozenset("aefhilmnorsx")
# Lowercase names read letter by letter: the memories and units that appear as kinds.
_SPELLED = ("hbm", "dm", "trf", "vrf", "spm", "dma", "tdma", "alu", "ndarray", "lsp")
_SPELLED_CAMEL = ("Hbm", "Dm", "Trf", "Vrf", "Spm", "Dma")
_DTYPE_LIKE = re.compile(r"[a-z]{1,3}\d")  # i8, u8, bf16, f32, f8e4m3, i5/i9, int8 is a word
_WORDS_A = ("uint", "usize", "uni", "use", "one", "once", "eu")


def article(word: object) -> str:
    """"a" or "an" before `word` (its `str`)."""
    return _article(str(word))


@functools.lru_cache(maxsize=4096)
def _article(word: str) -> str:
    """`article` of a text (remembered: the interpreter's checks format theirs on every run)."""
    text = word.lstrip("`'\"(")
    if not text:
        return "a"
    number = re.match(r"\d+", text)
    if number:
        n = number.group()
        return "an" if n[0] == "8" or (len(n) % 3 == 2 and n[:2] in ("11", "18")) else "a"
    lower = text.lower()
    if text.startswith("SIG"):  # a signal's name is read as a word: "a SIGSEGV"
        return "a"
    spelled = (_DTYPE_LIKE.match(text) is not None and not lower.startswith(("int", "uint"))) \
        or re.match(r"[A-Z]{2,}\b", text) is not None \
        or lower.startswith(_SPELLED) \
        or text.startswith(_SPELLED_CAMEL)
    if spelled:
        return "an" if lower[0] in _VOWEL_LETTERS else "a"
    if lower.startswith(_WORDS_A):
        return "a"
    return "an" if lower[0] in "aeiou" else "a"


def a_an(word: object, *, start: bool = False) -> str:
    """`word` with its article: "an i8", "a bf16" ("An i8" at the `start` of a sentence)."""
    art = article(word)
    return f"{art.capitalize() if start else art} {word}"
