"""Mutated artifacts for `visa --verify` and the interpreter (issue 16, "Wrong answers" 1).

`mutants(text, rng, n)` makes `n` one-token edits of a `.visa` text: a `%n` reference
replaced by another value's, a dtype by another dtype, an integer by a nearby or absurd
one, a quoted mapping by another mapping of the same artifact, an enum word by another.
`classify(text, mutant, arrays, reference)` says what became of one mutant:

* `refused`: the parser or `verify_text` refused it with a documented error;
* `same`: verify accepted it and the interpreter computes the reference output bit for bit
  (an edit that does not change meaning, e.g. a `loc`);
* `changed`: verify accepted it and the output differs; `interp-refused`: verify accepted
  it and the interpreter refused it; `crash`: something raised a non-`NpuOptError`.

Only `refused` and `same` are acceptable: verify must refuse every mutant the interpreter
cannot execute and every one that computes something else.
"""

from __future__ import annotations

import random
import re

import numpy as np

from ir.errors import NpuOptError

__all__ = ["mutants", "classify", "inputs_for", "BAD"]

BAD = ("changed", "interp-refused", "crash")
_DTYPES = ["bf16", "f32", "i8", "i32", "i4", "f8e4m3", "f8e5m2", "u8", "i16", "f16"]
_ENUMS = ["HBM_TO_DM", "DM_TO_HBM", "DM_TO_DM", "MAIN", "SUB", "Flit1", "Flit2", "WIDE", "NARROW",
          "INTERLEAVED", "REDUCE", "BF16", "F32", "I8", "I32", "FULL", "HOMOGENEOUS", "NONE"]
_TOKEN = re.compile(r'%\d+|"[^"\n]*"|\b(?:' + "|".join(_DTYPES + _ENUMS) + r')\b|-?\d+')


def _record_spans(text: str) -> list[tuple[int, int, str]]:
    """(start, end, token) of every mutable token on a record line (`%n = ...`), loc excluded."""
    spans = []
    offset = 0
    for line in text.splitlines(keepends=True):
        body = line.split(" ; loc ")[0]
        if body.lstrip().startswith("%") and " = " in body:
            spans.extend((offset + m.start(), offset + m.end(), m.group()) for m in _TOKEN.finditer(body))
        offset += len(line)
    return spans


def _replacement(token: str, pool: dict[str, list[str]], rng: random.Random) -> str:
    if token.startswith("%"):
        return rng.choice(pool["refs"])
    if token.startswith('"'):
        return rng.choice(pool["strings"])
    if token in _DTYPES:
        return rng.choice(_DTYPES)
    if token in _ENUMS:
        return rng.choice(_ENUMS)
    n = int(token)
    return str(rng.choice([0, 1, -1, n + 1, n - 1, n * 2, n // 2, 2 ** 31, 2 ** 63 - 1, 7, 4096]))


def mutants(text: str, rng: random.Random, n: int) -> list[str]:
    """`n` one-token edits of `text` (record lines only), each different from `text`."""
    spans = _record_spans(text)
    pool = {"refs": sorted({t for _, _, t in spans if t.startswith("%")}),
            "strings": sorted({t for _, _, t in spans if t.startswith('"')})}
    out: list[str] = []
    while len(out) < n:
        start, end, token = rng.choice(spans)
        new = _replacement(token, pool, rng)
        if new != token:
            out.append(text[:start] + new + text[end:])
    return out


def inputs_for(text: str, seed: int = 0) -> list[np.ndarray]:
    """Small random host arrays for the parameters of the artifact `text`."""
    from visa import parse_visa
    from ir.topology import host_array_shape
    from tests.differential.strategies import equal_chip_copies

    from ir.resident import Device, DmBuffer

    artifact = parse_visa(text)
    rng = np.random.default_rng(seed)
    out = []
    for p in artifact.kernel.params:
        if p.at is not None:  # a resident DM parameter: a buffer of small values
            buf = DmBuffer(p.type, str(p.type), Device(artifact.target))
            buf.write(rng.integers(-3, 4, size=buf.shape).astype(p.type.dtype.host_dtype))
            out.append(buf)
        else:
            out.append(equal_chip_copies(rng.integers(-3, 4, size=host_array_shape(p.type)).astype(
                p.type.dtype.host_dtype), p.type.chip))
    return out


def classify(mutant: str, arrays: list[np.ndarray], reference: np.ndarray) -> str:
    """What `verify_text` and then the interpreter make of `mutant` (see the module doc)."""
    from visa.verify import verify_text
    from visa.interp import execute

    try:
        artifact = verify_text(mutant)
    except NpuOptError:
        return "refused"
    except Exception:  # noqa: BLE001 - the point is to find crashes
        return "crash"
    try:
        got = execute(artifact, arrays, as_tuple=False)
    except NpuOptError:
        return "interp-refused"
    except Exception:  # noqa: BLE001
        return "crash"
    if got is None or np.asarray(got).shape != np.asarray(reference).shape:
        return "changed"
    same = np.asarray(got).view(np.uint8).tobytes() == np.asarray(reference).view(np.uint8).tobytes()
    return "same" if same else "changed"
