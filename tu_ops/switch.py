"""`SwitchRoute`: the Switch Engine stage of a FeedBuffer (docs/machine/switch.md).

The switch sits between the Fetch Adapter and Collect, which lower to one `feed_buffer`
record, so it is that record's optional `switch=` field, printed only when the program
has a switch (every artifact without one is unchanged):

    switch={config=BROADCAST1, slice1=256, slice0=1, time0=0, ring_size=256,
            out_slice="I", out_time="J / 16", bitmap=[]}

`config` names the variant; `slice1`, `slice0`, `time0` are its fields (0 where the variant
has none); `ring_size` is the sub-ring the engine is programmed with; `out_slice` and
`out_time` are the switched stream's Slice and Time (the collect reads that stream, and
every op after the feed lives on `out_slice`); `bitmap` is CUSTOM_BROADCAST's snoop bitmap
(per output slice, the input slices it snoops), empty for the named configurations.

`route_problem` is rule FEED-13: the field must be what the traced switch rules accept
for the feed's fetch stream, with the ring size and bitmap they derive.
"""

from __future__ import annotations

import enum
from typing import Any, ClassVar

import attrs

from ir.mapping.nodes import Mapping
from ir.switch import config as sc
from ir.diagnostic import Violation
from ir.dtypes import DType
from ir.memo import memo
from ir.switch.custom import checked_bitmap, derived_bitmap
from ir.switch.rules import check_switch, ring_size as named_ring_size

__all__ = ["SwitchKind", "SwitchRoute", "route_of", "route_problem", "switch_cycles"]


class SwitchKind(enum.Enum):
    """The seven SwitchConfig variants, printed by name."""

    FORWARDING = sc.Forwarding
    BROADCAST01 = sc.Broadcast01
    BROADCAST1 = sc.Broadcast1
    TRANSPOSE = sc.Transpose
    INTER_TRANSPOSE = sc.InterTranspose
    CUSTOM_BROADCAST = sc.CustomBroadcast
    TRANSPOSED_BROADCAST1 = sc.TransposedBroadcast1

    def __str__(self) -> str:
        return self.name


def _bitmap(rows: Any) -> tuple[tuple[int, ...], ...]:
    return tuple(tuple(int(x) for x in row) for row in rows)


@attrs.frozen(kw_only=True)
class SwitchRoute:
    """The switch of a feed: variant, its fields, ring size, output frame and snoop bitmap."""

    TEXT_STYLE: ClassVar[str] = "struct"
    TEXT_MEMO: ClassVar[bool] = True  # a CUSTOM_BROADCAST bitmap has 256 rows: print each distinct route once
    HOLDS_REFS: ClassVar[bool] = False  # no value numbers inside: renumbering (visa.facts) skips its bitmap
    config: SwitchKind
    slice1: int
    slice0: int
    time0: int
    ring_size: int
    out_slice: Mapping
    out_time: Mapping
    bitmap: tuple[tuple[int, ...], ...] = attrs.field(converter=_bitmap)

    def variant(self) -> sc.SwitchVariant:
        """The SwitchConfig value this route states (ValueError for fields the variant lacks)."""
        cls = self.config.value
        given = {"slice1": self.slice1, "slice0": self.slice0, "time0": self.time0, "ring_size": self.ring_size}
        extra = [k for k in ("slice1", "slice0", "time0") if k not in cls.FIELDS and given[k] != 0]
        if extra:
            raise ValueError(f"{self.config} has no field {', '.join(extra)}; write it as 0")
        return cls(**{k: given[k] for k in cls.FIELDS})


def route_of(in_slice: Mapping, in_time: Mapping, out_slice: Mapping, out_time: Mapping,
             config: sc.SwitchVariant) -> SwitchRoute:
    """The route of a legal traced switch: ring size and bitmap derived by the switch rules."""
    fields = config.fields()
    bitmap: tuple[tuple[int, ...], ...] = ()
    if isinstance(config, sc.CustomBroadcast):
        bitmap = checked_bitmap(in_slice, in_time, out_slice, out_time)
    return SwitchRoute(config=SwitchKind(type(config)), slice1=fields.get("slice1", 0),
                       slice0=fields.get("slice0", 0), time0=fields.get("time0", 0),
                       ring_size=named_ring_size(config), out_slice=out_slice, out_time=out_time, bitmap=bitmap)


def route_problem(route: SwitchRoute, fetch: Any, collected: Any) -> str | None:
    """FEED-13: the problem with a feed's switch given its fetch and collect stream types."""
    return _route_problem(route, fetch.slice, fetch.time, fetch.packet, fetch.dtype, collected.slice)


@memo()
def _route_problem(route: SwitchRoute, in_slice: Mapping, in_time: Mapping, packet: Mapping, dtype: DType,
                   collected_slice: Mapping) -> str | None:
    """`route_problem` on everything it reads: once per distinct switch of a program."""
    try:
        config = route.variant()
    except (TypeError, ValueError) as e:
        return f"switch config: {e}"
    found = check_switch(in_slice, in_time, route.out_slice, route.out_time, config, packet, dtype)
    if found is not None:
        return f"the switch breaks {found.code}: {found.message}"
    if route.ring_size != named_ring_size(config):
        return f"ring_size {route.ring_size}, but {config!r} routes in sub-rings of {named_ring_size(config)}"
    want = derived_bitmap(in_slice, in_time, route.out_slice, route.out_time) \
        if isinstance(config, sc.CustomBroadcast) else ()
    if isinstance(want, Violation) or route.bitmap != want:
        return "the snoop bitmap is not the one the switch's mappings need"
    if collected_slice != route.out_slice:
        return f"the collected stream lives on Slice `{collected_slice}`, not the switch's `{route.out_slice}`"
    return None


def switch_cycles(route: SwitchRoute, fetch_steps: int, flits_per_packet: int) -> int:
    """The book's estimate of one switch pass: ring_size x input Time x flits per packet."""
    return route.ring_size * fetch_steps * flits_per_packet
