"""`SwitchConfig`: the surface enum rule (unit variant as attribute, struct variants by
keyword) and the SWITCH-1 refusals of a malformed value."""

from __future__ import annotations

import pytest

from ir.errors import TypeCheckError
from ir.switch.config import SwitchConfig, as_switch_config

STRUCT_VARIANTS = {
    "BROADCAST01": ("slice1", "slice0", "time0"),
    "BROADCAST1": ("slice1", "slice0"),
    "TRANSPOSE": ("slice1", "slice0"),
    "INTER_TRANSPOSE": ("slice1", "slice0", "time0"),
    "CUSTOM_BROADCAST": ("ring_size",),
    "TRANSPOSED_BROADCAST1": ("slice1", "slice0"),
}


@pytest.mark.parametrize("name", sorted(STRUCT_VARIANTS))
def test_struct_variant_by_keyword(name: str) -> None:
    fields = STRUCT_VARIANTS[name]
    values = {f: 2 + i for i, f in enumerate(fields)}
    cfg = getattr(SwitchConfig, name)(**values)
    assert cfg.fields() == values and list(cfg.fields()) == list(fields)
    assert all(getattr(cfg, f) == v for f, v in values.items())
    assert repr(cfg) == f"SwitchConfig.{name}(" + ", ".join(f"{f}={v}" for f, v in values.items()) + ")"
    assert cfg == getattr(SwitchConfig, name)(**values) and hash(cfg) == hash(getattr(SwitchConfig, name)(**values))
    assert as_switch_config(cfg) is cfg


def test_forwarding_is_a_value() -> None:
    assert repr(SwitchConfig.FORWARDING) == "SwitchConfig.FORWARDING"
    assert as_switch_config(SwitchConfig.FORWARDING) is SwitchConfig.FORWARDING
    assert SwitchConfig.FORWARDING.fields() == {}


def refusal(fn) -> TypeCheckError:
    with pytest.raises(TypeCheckError) as info:
        fn()
    assert info.value.code == "SWITCH-1"
    return info.value


def test_malformed_values_are_refused_with_switch_1() -> None:
    assert "by keyword" in refusal(lambda: SwitchConfig.BROADCAST1(4, 64)).message
    assert "missing field slice0" in refusal(lambda: SwitchConfig.BROADCAST1(slice1=4)).message
    assert "no field time0" in refusal(lambda: SwitchConfig.TRANSPOSE(slice1=4, slice0=2, time0=1)).message
    assert "must be an integer" in refusal(lambda: SwitchConfig.BROADCAST1(slice1=4.0, slice0=2)).message
    assert "must be an integer" in refusal(lambda: SwitchConfig.CUSTOM_BROADCAST(ring_size=True)).message
    assert "no variant BROADCAST2" in refusal(lambda: SwitchConfig.BROADCAST2).message
    assert "not called itself" in refusal(lambda: SwitchConfig()).message


def test_data_variant_used_without_its_data() -> None:
    err = refusal(lambda: as_switch_config(SwitchConfig.INTER_TRANSPOSE))
    assert "SwitchConfig.INTER_TRANSPOSE(slice1=.., slice0=.., time0=..)" in err.message
    assert "must be a SwitchConfig variant" in refusal(lambda: as_switch_config("BROADCAST1")).message


def test_values_are_immutable() -> None:
    cfg = SwitchConfig.TRANSPOSE(slice1=4, slice0=2)
    with pytest.raises(AttributeError):
        cfg.slice1 = 8
    with pytest.raises(AttributeError):
        SwitchConfig.FORWARDING = None
    assert not hasattr(cfg, "ring_size")
