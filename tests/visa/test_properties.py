"""Hypothesis properties of the VISA text: perturbed records round trip, mutated texts only
ever raise VisaFormatError (parse and --verify alike). The default runs take fewer
examples; `-m slow` runs the long ones."""

from __future__ import annotations

import enum

import attrs
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ir.dtypes import DType
from ir.errors import VisaFormatError
from ir.location import Location
from tests.visa.samples import cast_kernel, example_4, example_4b, widen_kernel
from tests.visa.test_text import SPEC_TEXT
from tu_ops import Conversion, ConversionKind, Ref, TuProgram, rngd
from visa import parse_visa, print_artifact, print_visa, renumber, with_facts
from visa.verify import verify_text

BASES = {"4": example_4(locs=False), "4b": example_4b(locs=False), "widen": widen_kernel(), "cast": cast_kernel()}
INTS = st.one_of(st.integers(0, 70_000), st.integers(-(2**40), 2**40))
FILES = st.from_regex(r"[A-Za-z0-9_./-]{1,20}(:[A-Za-z0-9_]{1,4})?", fullmatch=True)


def _conversion(draw) -> Conversion:
    kind = draw(st.sampled_from(ConversionKind))
    return Conversion(kind, draw(st.integers(-128, 255)) if kind is ConversionKind.ZP_SUB else None)


def _perturb(draw, value):
    """A value of the same type as `value`, keeping refs and mappings (they tie records to types)."""
    if isinstance(value, bool) or isinstance(value, Ref) or not draw(st.booleans()):
        return value
    if isinstance(value, int):
        return draw(INTS)
    if isinstance(value, DType):
        return draw(st.sampled_from(DType))
    if isinstance(value, Conversion):
        return _conversion(draw)
    if isinstance(value, enum.Enum):
        return draw(st.sampled_from(type(value)))
    if isinstance(value, tuple):
        return _perturb_list(draw, value)
    if attrs.has(type(value)) and type(value).__module__.startswith(("tu_ops", "ir.mapping.ops")):
        changes = {f.name: _perturb(draw, getattr(value, f.name)) for f in attrs.fields(type(value)) if f.init}
        return type(value)(**changes)
    return value


def _perturb_list(draw, items: tuple):
    if not items:
        return items
    pool = [_perturb(draw, x) for x in items]
    extra = [_perturb(draw, draw(st.sampled_from(items))) for _ in range(draw(st.integers(0, 2)))]
    out = draw(st.permutations(pool + extra)) if draw(st.booleans()) else pool + extra
    return tuple(out[: draw(st.integers(1 if isinstance(items[0], Ref) else 0, len(out)))])


@st.composite
def kernels(draw):
    """One of the sample kernels with attr fields perturbed within their types, random
    locations, and random conversion lists / time broadcasts."""
    kernel = BASES[draw(st.sampled_from(sorted(BASES)))]

    def op(o):
        changes = {}
        for f in attrs.fields(type(o)):
            if f.metadata.get("role") == "attr":
                changes[f.name] = _perturb(draw, getattr(o, f.name))
        if o.MNEMONIC == "feed_buffer" and draw(st.booleans()):
            changes["conversions"] = tuple(_conversion(draw) for _ in range(draw(st.integers(0, 3))))
        if o.MNEMONIC == "contract_outer" and draw(st.booleans()):
            changes["time_broadcast"] = tuple(draw(st.lists(st.integers(1, 64), max_size=3)))
        if draw(st.booleans()):
            changes["loc"] = Location(draw(FILES), draw(st.integers(1, 10**6)), draw(st.integers(1, 500)))
        return attrs.evolve(o, **changes)

    steps = [attrs.evolve(s, ops=tuple(op(o) for o in s.ops)) if isinstance(s, TuProgram) else op(s)
             for s in kernel.steps]
    return attrs.evolve(kernel, steps=steps)


def _locs(kernel):
    return [op.loc for op in kernel.ops()]


def _round_trip(kernel, locs):
    text = print_visa(kernel, rngd(), locs=locs)
    artifact = parse_visa(text)
    expected = with_facts(renumber(kernel), rngd())
    assert artifact.kernel == expected
    if locs:
        assert _locs(artifact.kernel) == _locs(expected)
    assert print_artifact(artifact, locs=locs) == text


@settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(kernels(), st.booleans())
def test_perturbed_kernels_round_trip(kernel, locs):
    _round_trip(kernel, locs)


@pytest.mark.slow
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(kernels(), st.booleans())
def test_perturbed_kernels_round_trip_slow(kernel, locs):
    _round_trip(kernel, locs)


# --- fuzz: mutated texts --------------------------------------------------------------------

TEXTS = [SPEC_TEXT, print_visa(example_4b(), rngd()), print_visa(widen_kernel(), rngd(), locs=False)]
NOISE = st.text(alphabet=st.sampled_from(list('%:=,()[]{}"; -#/>\n\t0123456789aAzZ_.') + ["\x00", "é", "\r"]),
                min_size=1, max_size=6)


@st.composite
def mutated(draw):
    text = draw(st.sampled_from(TEXTS))
    for _ in range(draw(st.integers(1, 3))):
        lines = text.split("\n")
        kind = draw(st.sampled_from(["truncate", "flip", "drop", "dup_line", "dup_value", "swap", "insert",
                                     "version", "digit"]))
        pos = draw(st.integers(0, max(len(text) - 1, 0)))
        i, j = draw(st.integers(0, len(lines) - 1)), draw(st.integers(0, len(lines) - 1))
        if kind == "truncate":
            text = text[:pos]
        elif kind == "flip":
            raw = bytearray(text.encode("utf-8"))
            if raw:
                at = min(pos, len(raw) - 1)
                raw[at] ^= 1 << draw(st.integers(0, 7))
            text = raw.decode("utf-8", errors="replace")
        elif kind == "drop":
            text = "\n".join(lines[:i] + lines[i + 1:])
        elif kind == "dup_line":
            text = "\n".join(lines[:i] + [lines[i]] + lines[i:])
        elif kind == "dup_value":
            words = lines[i].split(" ")
            k = draw(st.integers(0, len(words) - 1))
            lines[i] = " ".join(words[:k + 1] + [words[k]] + words[k + 1:])
            text = "\n".join(lines)
        elif kind == "swap":
            lines[i], lines[j] = lines[j], lines[i]
            text = "\n".join(lines)
        elif kind == "insert":
            text = text[:pos] + draw(NOISE) + text[pos:]
        elif kind == "version":
            text = text.replace("visa 2", f"visa {draw(st.integers(-3, 12))}", 1)
        else:
            text = text[:pos] + str(draw(st.integers(0, 10**12))) + text[pos + 1:]
    return text


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mutated())
def test_mutated_texts_only_raise_visa_format_error(text):
    _only_visa_format_error(text)


@pytest.mark.slow
@settings(max_examples=1000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mutated())
def test_mutated_texts_only_raise_visa_format_error_slow(text):
    _only_visa_format_error(text)


def _only_visa_format_error(text):
    try:
        artifact = verify_text(text)
    except VisaFormatError as e:
        assert isinstance(e.line, int) and e.line >= 1
        assert isinstance(e.column, int) and e.column >= 1
        assert str(e).startswith(f"line {e.line}, column {e.column}: ")
        return
    assert parse_visa(print_artifact(artifact)) == artifact
