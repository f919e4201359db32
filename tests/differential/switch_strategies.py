"""Generated switch kernels for the differential test: x[A, B, P] over 256 slices (Slice A,
Time B, a packet of P elements of 8, 16 or 32 bytes) is fetched, optionally converted,
switched with a random SwitchConfig, collected, committed and returned through HBM.

Named configurations get random legal fields; their output frame is the one the
configuration produces (from `ir.switch.rules.switch_frames`), each broadcast tile written
as a bare integer or as a new axis `Y<k>` the result then carries. CUSTOM_BROADCAST cuts A
into power-of-two digits, moves some to the innermost Time in their Slice order, permutes
the rest with a tile per moved digit, and states the ring size the digits need. A few
kernels get a mutation (a wrong ring size or field, two moved digits swapped) and must be
refused alike everywhere.
"""

from __future__ import annotations

import random

from hypothesis import strategies as st

from ir.mapping import m
from ir.mapping.nodes import Mapping
from ir.switch import config as sc
from ir.switch.custom import computed_ring_size, plan_custom, routes
from ir.switch.rules import switch_frames
from tests.differential.strategies import Generated

BITS = {"i8": 8, "bf16": 16, "i16": 16, "f32": 32, "i32": 32}
ADAPTERS = {"i8": ["", ".fetch_cast(i32)"], "bf16": ["", ".fetch_cast(f32)"], "i16": [""], "f32": [""],
            "i32": [""]}
NAMED = ("BROADCAST1", "TRANSPOSED_BROADCAST1", "TRANSPOSE", "BROADCAST01", "INTER_TRANSPOSE", "FORWARDING")
MUTATIONS = ("ring_size", "field", "moved_order")


def _text(mp: Mapping) -> str:
    text = mp.text()
    return text[1:-1] if text.startswith("(") and text.endswith(")") else text


def _pow2s(limit: int) -> list[int]:
    return [1 << k for k in range(limit.bit_length()) if 1 << k <= limit]


def _named(rng: random.Random, name: str, steps: int) -> tuple[sc.SwitchVariant, list, list]:
    """A legal named config and its (slice slots, time slots)."""
    cls = getattr(sc.SwitchConfig, name)
    if name == "FORWARDING":
        config = cls
    else:
        s1 = rng.choice(_pow2s(16 if name == "INTER_TRANSPOSE" else 64))
        s0 = rng.choice(_pow2s(256 // s1))
        fields = {"slice1": s1, "slice0": s0}
        if name == "BROADCAST01":
            fields["time0"] = rng.choice([d for d in range(1, steps + 1) if steps % d == 0])
        if name == "INTER_TRANSPOSE":
            s1 = rng.choice([d for d in _pow2s(steps) if steps % d == 0])
            fields["slice1"], fields["slice0"] = s1, rng.choice(_pow2s(256 // s1))
            fields["time0"] = rng.choice([d for d in range(1, steps // s1 + 1) if (steps // s1) % d == 0])
        config = cls(**fields)
    q = _axes(steps)
    frames = switch_frames(q("A"), q("B"), config)
    return config, list(frames.slice_slots), list(frames.time_slots)


def _axes(steps: int):
    """Mappings over this kernel's axes A (the 256 slices) and B (its time steps)."""
    table = {"A": 256, "B": steps}
    return lambda text: m(text, axes=table)


def _custom(rng: random.Random, steps: int, mutate: bool) -> tuple[sc.SwitchVariant, list, list]:
    """A CUSTOM_BROADCAST: A's digits moved, permuted and tiled; ring size as derived."""
    sizes, left = [], 256
    while left > 1:
        size = rng.choice([s for s in (2, 4, 8, 16) if left % s == 0])
        sizes.append(size)
        left //= size
    q = _axes(steps)
    digits, inner = [], 1
    for size in reversed(sizes):
        digits.append(q(f"A / {inner} % {size}") if inner * size < 256 else q(f"A / {inner}"))
        inner *= size
    digits.reverse()
    moved = [d for d in digits if rng.random() < 0.35]
    if mutate and len(moved) >= 2:
        moved[0], moved[1] = moved[1], moved[0]
    slots: list = [d for d in digits if d not in moved] + [d.size for d in moved]
    rng.shuffle(slots)
    time_slots = [q("B"), *moved]
    ring = _ring(q, slots, time_slots)
    return sc.SwitchConfig.CUSTOM_BROADCAST(ring_size=ring), slots, time_slots


def _ring(q, slice_slots: list, time_slots: list) -> int:
    from ir.mapping.nodes import Broadcast, pair_all

    out_slice = pair_all([Broadcast(s) if isinstance(s, int) else s for s in slice_slots])
    out_time = pair_all(time_slots)
    plan = plan_custom(q("A"), q("B"), out_slice, out_time)
    if not hasattr(plan, "moved_size"):
        return 1  # a mutated (illegal) custom switch: the rules refuse it before the ring
    return computed_ring_size(routes(q("A"), out_slice, out_time, plan))


def _mutated(config: sc.SwitchVariant, what: str) -> sc.SwitchVariant:
    fields = config.fields()
    if what == "ring_size" and "ring_size" in fields:
        return type(config)(ring_size=min(256, fields["ring_size"] * 2) if fields["ring_size"] < 256 else 128)
    if what == "field" and "slice1" in fields:
        return type(config)(**{**fields, "slice1": fields["slice1"] * 2})
    return config


CONFIG_NAMES = (*NAMED, "CUSTOM_BROADCAST")


@st.composite
def switch_kernels(draw) -> Generated:
    """One generated switch kernel (a `Generated` of tests/differential/strategies.py)."""
    return switch_kernel(random.Random(draw(st.integers(0, 2**64 - 1))))


def switch_kernel(rng: random.Random, name: str | None = None) -> Generated:
    """The kernel `rng` draws (with the config variant `name`, or a random one)."""
    dtype = rng.choice(sorted(BITS))
    adapter = rng.choice(ADAPTERS[dtype])
    steps = rng.choice([2, 4, 8])
    nbytes = rng.choice([8, 16, 32])
    name = name or rng.choice([*CONFIG_NAMES, "CUSTOM_BROADCAST"])
    mutation = rng.choice(MUTATIONS) if rng.random() < 0.1 else None
    context = rng.choice(["main", "sub"])
    if name == "CUSTOM_BROADCAST":
        config, slots, time_slots = _custom(rng, steps, mutation == "moved_order")
    else:
        config, slots, time_slots = _named(rng, name, steps)
    if mutation in ("ring_size", "field"):
        config = _mutated(config, mutation)
    return _source(dtype, adapter, steps, nbytes, context, config, slots, time_slots, rng, mutation)


def _source(dtype: str, adapter: str, steps: int, nbytes: int, context: str, config: sc.SwitchVariant,
            slots: list, time_slots: list, rng: random.Random, mutation: str | None) -> Generated:
    packet = nbytes * 8 // BITS[dtype]
    out_dtype = {".fetch_cast(i32)": "i32", ".fetch_cast(f32)": "f32"}.get(adapter, dtype)
    flit = 256 // BITS[out_dtype]
    tiles, slice_texts = [], []
    for slot in slots:
        if isinstance(slot, int) and slot > 1 and rng.random() < 0.5:
            tiles.append((f"Y{len(tiles)}", slot))
            slice_texts.append(tiles[-1][0])
        else:
            slice_texts.append(str(slot) if isinstance(slot, int) else _text(slot))
    out_slice, out_time = ", ".join(slice_texts), ", ".join(_text(t) for t in time_slots)
    collect_packet = "P" if packet == flit else f"P # {flit}"
    collect_time = out_time if packet <= flit else f"{out_time}, P / {flit}"
    if packet > flit:  # a widened packet of several flits
        collect_packet = f"P % {flit}"
    result = ", ".join([t for t, _ in tiles] + ["A, B, P"])
    declared = ", ".join([f"A=256, B={steps}, P={packet}"] + [f"{t}={n}" for t, n in tiles])
    source = f'''from npu_opt import *

axes({declared})

Chip = m("1")
Cluster = m("1 # 2")

@device(chip=1)
def dk(ctx: Context, x: HbmTensor[{dtype}, Chip, m("A, B, P")]) -> HbmTensor[{out_dtype}, Chip, m("{result}")]:
    x = x.to_dm(ctx.tdma, DmTensor[{dtype}, Chip, Cluster, m("A"), m("B, P")])
    y = (ctx.{context}.begin(x.view())
         .fetch(m("B"), m("P")){adapter}
         .switch(m("{out_slice}"), m("{out_time}"), {config!r})
         .collect(m("{collect_time}"), m("{collect_packet}"))
         .commit_trim(m("{'P' if packet <= flit else f'P % {flit}'}"))
         .commit())
    return y.to_hbm(ctx.tdma, HbmTensor[{out_dtype}, Chip, m("{result}")])
'''
    feats = {f"switch:{type(config).NAME}", f"dtype:{dtype}", f"ctx:{context}", "tile_axis" if tiles else "no_tile"}
    return Generated(source, "dk", frozenset(feats), mutation)
