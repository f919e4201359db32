"""A synth space's bound from the parameters, computed once per space (synth/bound.py
`space_bound`), against the plain statement of the same bound (`candidate_bound`, from the
numbers of `gemm_names`) on candidates of drawn contractions: GEMMs small and tiled, batched,
padded, stored transposed (on the host or the device), each dtype pair."""

from __future__ import annotations

import itertools

import numpy as np

from driver.tune_eval import target_rates
from ir.errors import NpuOptError
from synth.bound import candidate_bound, space_bound
from synth.gemm_text import kept
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


def _tiles(spec, placement: str) -> int:
    """The tiles of a placement of `spec` (`mt * nt` of synth/gemm_text.py's names)."""
    geo, (mi, ni) = geometry(placement), kept(spec)
    return max(1, spec.padded[mi] // geo.tm) * max(1, spec.padded[ni] // geo.tn)


def test_the_per_space_bound_equals_the_plain_bound_on_drawn_candidates():
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
        fast = space_bound(spec)
        # 40 of the space's lever products, half of them (when it has them) of several tiles
        several = [i for i, p in enumerate(every) if spec.form != "gemv" and _tiles(spec, p["placement"]) > 1]
        picked = [*rng.choice(several, min(len(several), 20), replace=False)] if several else []
        for i in [*picked, *rng.choice(len(every), min(len(every), 40 - len(picked)), replace=False)]:
            point = every[i]
            assert fast(point, rates) == candidate_bound(spec, point, rates), (spec.text, spec.sizes, point)
            if spec.form == "gemv":
                continue
            geo = geometry(point["placement"])
            seen |= {name for name, on in (("double", geo.double), ("switch", geo.switch), ("a_switch", geo.a_switch),
                                          ("split", geo.sk > 1), ("pieces", point.get("pieces", 1) > 1),
                                          ("pair", bool(point.get("pair"))), ("batch", spec.batch is not None),
                                          ("device", bool(spec.device_transposed)),
                                          ("none", point.get("reuse") == "none"))
                     if on}
    # the draws reach the levers the per-space bound reads apart from gemm_names
    assert seen >= {"switch", "a_switch", "pieces", "pair", "batch", "device", "split", "double", "none"}, seen
