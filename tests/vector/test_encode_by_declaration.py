"""A traced op finds the unit that encodes it by the declaration (issue 59, item 4): the
unit's codec names the traced class (`Codec.traced`), and `encode_step` follows that link
(identity, then the op's scalar), never the class's `__name__`."""

from __future__ import annotations

import sys

import pytest

from ir.vector.unit_codecs import Codec, TracedRef
from ir.vector.units import UnitSpec, VeStage, encode_step, register, unregister
from tests.vector.toy_unit import ToyOp


class _Traced:
    """A hand-written traced class, offered by this module under another name as well."""

    def __init__(self, scalar: str) -> None:
        self.scalar = scalar


class _Derived(_Traced):
    """A subclass: it is encoded by its base's unit."""


Alias = _Traced  # the name the declaration uses: not the class's own `__name__`


def _this_module():
    return sys.modules[__name__]


def _unit(name: str, scalar: str, ref: str = "Alias"):
    return register(UnitSpec(
        name, VeStage.FXP, ToyOp, scalar, arg="i32", arity=2, fn=lambda op: None,
        codec=Codec(TracedRef(_this_module, ref), lambda spec, op: (spec.name, "TOY_ABS_DIFF", 0))))


@pytest.fixture
def units():
    made = [_unit("TOY_LINK_I32", "i32"), _unit("TOY_LINK_F32", "f32")]
    try:
        yield made
    finally:
        for spec in made:
            unregister(spec.name)


def test_the_unit_is_the_one_its_codec_declares(units):
    assert encode_step(_Traced("i32"))[0] == "TOY_LINK_I32"
    assert encode_step(_Traced("f32"))[0] == "TOY_LINK_F32"
    assert encode_step(_Derived("f32"))[0] == "TOY_LINK_F32"


def test_no_unit_for_another_scalar_or_class(units):
    with pytest.raises(KeyError, match="no unit encodes _Traced on None"):
        encode_step(_Traced(None))

    class Alias:  # the declared name, but another class
        scalar = "i32"

    with pytest.raises(KeyError, match="no unit encodes"):
        encode_step(Alias())


def test_two_units_claiming_one_class_and_scalar_is_a_declaration_error(units):
    _unit("TOY_LINK_AGAIN", "i32")
    try:
        with pytest.raises(ValueError, match="units TOY_LINK_I32 and TOY_LINK_AGAIN both encode _Traced on i32"):
            encode_step(_Traced("i32"))
    finally:
        unregister("TOY_LINK_AGAIN")
    assert encode_step(_Traced("i32"))[0] == "TOY_LINK_I32"
