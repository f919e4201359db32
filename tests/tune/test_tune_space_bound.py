"""A synth space's bound from the parameters (synth/bound.py: `space_work` reads a candidate's
numbers from its levers, per-space parts once) against the same counts derived here from every
name the kernel's text uses (synth/gemm_text.py `gemm_names`), on candidates of drawn
contractions: GEMMs small and tiled, batched, padded, stored transposed (on the host or the
device), each dtype pair. Whether a store is cut to the user's rows is the kernel text's own
decision (synth/live_rows.py `live_rows` of the names), which the bound shares by design; what
is compared is the numbers it is fed."""

from __future__ import annotations

import itertools
import math
from typing import Any

import numpy as np

from driver.tune_eval import target_rates
from ir.dtypes import DType
from ir.errors import NpuOptError
from synth.bound import DmaWork, space_bound, space_work
from synth.gemm_text import gemm_names, kept
from synth.live_rows import live_rows
from synth.space import points
from synth.spec import contraction
from synth.tiling import geometry


def _drawn(rng: np.random.Generator):
    """A contraction drawn with `rng`, or None when the rules refuse it."""
    batched = rng.random() < 0.3
    b = "b," if batched else ""
    kfirst = str(rng.choice(["", "", "a", "w"])) if not batched else ""
    a = "a[k,m]" if kfirst == "a" else f"a[{b}m,k]"
    w = "w[k,n]" if kfirst == "w" else f"w[{b}n,k]"
    ops = f"{a} * {w}" if rng.random() < 0.5 else f"{w} * {a}"
    out = f"out[{b}m,n]" if rng.random() < 0.6 else f"out[{b}n,m]"
    mn = (40, 64, 96, 128, 256, 300, 512, 1024, 2048)
    sizes = dict(m=int(rng.choice(mn)), n=int(rng.choice(mn)), k=int(rng.choice((32, 64, 100, 256, 1024))))
    if batched:
        sizes["b"] = int(rng.choice((2, 3, 16)))
    try:
        return contraction(f"{out} = {ops}", dtype=str(rng.choice(["i8:i32", "bf16:f32", "bf16:bf16"])),
                           sizes=sizes, name="drawn_bound", transpose="device" if kfirst and rng.random() < 0.5 else "host")
    except NpuOptError:
        return None


def _named_work(spec, point: dict[str, Any]) -> DmaWork | None:
    """The DMA work synth/bound.py's docstring counts, from `gemm_names`: the block loads and
    stores the tile loops make per batch step, every operand byte once per slice holding it,
    every stored result byte once, and a slice's longest contiguous run of results."""
    if spec.form == "gemv" or spec.chips != 1:
        return None
    v = gemm_names(spec, point)
    geo = v["geo"]
    if geo.sk > 1:
        return None
    tiles = v["mt"] * v["nt"]
    if geo.double:      # synth/trf_double.py: w's two halves and a, or w and a chunk of a per time block
        loads = 1 + geo.tb if geo.tb > 1 else 3
    elif tiles == 1:
        loads = 2
    elif v["reuse"] == "all":
        loads = v["mt"] + v["nt"]
    elif v["reuse"] == "outer":
        loads = (v["mt"] if v["order"] == "ij" else v["nt"]) + tiles
    else:
        loads = 2 * tiles
    commands = v["steps"] * (loads + tiles * v["pieces_n"])
    size = v["size"]
    # a tile row's slices holding real columns each get `a`'s rows (one copy when switched); `w` alike
    copies = {v["an"]: 1 if geo.a_switch else min(geo.sn, math.ceil(size[v["ni"]] / v["c"])),
              v["wn"]: 1 if geo.switch else min(geo.sm, math.ceil(size[v["mi"]] / v["r"]))}
    elem = DType(v["din"]).bits // 8
    load_bytes = sum(math.prod(size[i] for i in spec.stored(name)) * elem * copies[name] for name, _ in spec.operands)
    out_elem = DType(v["dout"]).bits // 8
    stored = {**size, v["mi"]: live_rows(v) or size[v["mi"]]}
    out_bytes = math.prod(stored[i] for i in spec.result[1]) * out_elem
    # the run: the slice's extent along the innermost index, and outward while each covers its index
    run, extent = out_elem, {v["mi"]: v["r"], v["ni"]: v["c"]}
    for i in reversed(spec.result[1]):
        run *= min(extent.get(i, 1), size[i])
        if extent.get(i, 1) < size[i]:
            break
    return DmaWork(commands, load_bytes, out_bytes, run)


def _tiles(spec, placement: str) -> int:
    """The tiles of a placement of `spec` (`mt * nt` of synth/gemm_text.py's names)."""
    geo, (mi, ni) = geometry(placement), kept(spec)
    return max(1, spec.padded[mi] // geo.tm) * max(1, spec.padded[ni] // geo.tn)


def test_the_per_space_bound_counts_what_the_kernels_names_give_on_drawn_candidates():
    rates = target_rates("rngd")
    rng = np.random.default_rng(26)
    seen, spaces = set(), 0
    while spaces < 16:
        spec = _drawn(rng)
        if spec is None:
            continue
        spaces += 1
        levers = points(spec)
        every = [dict(zip(levers, values)) for values in itertools.product(*levers.values())]
        work, bound = space_work(spec), space_bound(spec)
        full = math.prod(spec.padded[i] for i in spec.result[1]) * DType(spec.result_dtype).bits // 8
        # 40 of the space's lever products, half of them (when it has them) of several tiles
        several = [i for i, p in enumerate(every) if spec.form != "gemv" and _tiles(spec, p["placement"]) > 1]
        picked = [*rng.choice(several, min(len(several), 20), replace=False)] if several else []
        for i in [*picked, *rng.choice(len(every), min(len(every), 40 - len(picked)), replace=False)]:
            point = every[i]
            named = _named_work(spec, point)
            assert work(point) == named, (spec.text, spec.sizes, point)
            assert bound(point, rates) == (None if named is None else named.cycles(rates))
            if spec.form == "gemv":
                continue
            geo = geometry(point["placement"])
            seen |= {name for name, on in (("double", geo.double), ("switch", geo.switch), ("a_switch", geo.a_switch),
                                          ("split", geo.sk > 1), ("pieces", point.get("pieces", 1) > 1),
                                          ("pair", bool(point.get("pair"))), ("batch", spec.batch is not None),
                                          ("device", bool(spec.device_transposed)),
                                          ("none", point.get("reuse") == "none"),
                                          ("live", named is not None and named.out_bytes < full))
                     if on}
    # the draws reach the levers the per-space bound reads apart from gemm_names, and cut stores
    assert seen >= {"switch", "a_switch", "pieces", "pair", "batch", "device", "split", "double", "none",
                    "live"}, seen
