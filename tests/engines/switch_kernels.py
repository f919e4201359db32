"""Own kernels that switch a fetched i8 stream with every SwitchConfig variant, commit it,
and return it through HBM. A broadcast tile is written as a new axis (X, Y, Z) that the
result carries, so the result holds one copy of the input per tile position: the oracle
is the input itself, repeated along the tile axes (numpy only)."""

from __future__ import annotations

import numpy as np

# name -> (out_slice, out_time, config text, result layout, tile axes in front)
CONFIGS: dict[str, tuple[str, str, str, str, tuple[str, ...]]] = {
    "forwarding": ("A", "B", "SwitchConfig.FORWARDING", "A, B, C", ()),
    "broadcast01": ("A / 4, Y, Z", "B / 4, A / 2 % 2, B % 4, A % 2",
                    "SwitchConfig.BROADCAST01(slice1=2, slice0=2, time0=4)", "Y, Z, A, B, C", ("Y", "Z")),
    "broadcast1": ("X, A % 64", "B, A / 64", "SwitchConfig.BROADCAST1(slice1=4, slice0=64)", "X, A, B, C", ("X",)),
    "transpose": ("A / 64, A % 2, A / 2 % 32", "B", "SwitchConfig.TRANSPOSE(slice1=32, slice0=2)", "A, B, C", ()),
    "inter_transpose": ("A / 32, B / 2 % 2, A % 16", "B / 4, B % 2, A / 16 % 2",
                        "SwitchConfig.INTER_TRANSPOSE(slice1=2, slice0=16, time0=2)", "A, B, C", ()),
    "transposed_broadcast1": ("X, A / 4", "B, A % 4", "SwitchConfig.TRANSPOSED_BROADCAST1(slice1=64, slice0=4)",
                              "X, A, B, C", ("X",)),
    "custom_broadcast": ("A / 4, X", "B, A % 4", "SwitchConfig.CUSTOM_BROADCAST(ring_size=4)", "X, A, B, C", ("X",)),
    "custom_permutation": ("A % 16, A / 16", "B", "SwitchConfig.CUSTOM_BROADCAST(ring_size=256)", "A, B, C", ()),
}

SIZES = {"A": 256, "B": 8, "C": 16, "X": 4, "Y": 2, "Z": 2}

TEMPLATE = '''from npu_opt import *

axes(A=256, B=8, C=16, X=4, Y=2, Z=2)

Chip = m("1")
Cluster = m("1 # 2")

@device(chip=1)
def switched_{name}(ctx: Context, x: HbmTensor[i8, Chip, m("A, B, C")]) -> HbmTensor[i8, Chip, m("{result}")]:
    x = x.to_dm(ctx.tdma, DmTensor[i8, Chip, Cluster, m("A"), m("B, C")])
    y = (ctx.{context}.begin(x.view())
         .fetch(m("B"), m("C"))
         .switch(m("{out_slice}"), m("{out_time}"), {config})
         .collect(m("{out_time}"), m("C # 32"))
         .commit_trim(m("C"))
         .commit())
    return y.to_hbm(ctx.tdma, HbmTensor[i8, Chip, m("{result}")])
'''


def source(name: str, context: str = "main") -> str:
    out_slice, out_time, config, result, _ = CONFIGS[name]
    return TEMPLATE.format(name=name, out_slice=out_slice, out_time=out_time, config=config, result=result,
                           context=context)


def expected(name: str, x: np.ndarray) -> np.ndarray:
    """The input repeated along the result's tile axes."""
    tiles = CONFIGS[name][4]
    shape = tuple(SIZES[t] for t in tiles) + x.shape
    return np.broadcast_to(x, shape).copy()
