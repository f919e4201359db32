"""Device topology: chips per kernel and processing elements (PEs) per chip (docs/machine/topology.md).

An RNGD chip has 8 PEs; 4 PEs make a cluster and every PE drives a quarter of its cluster's
slices (64 of 256). `@device(pe=P)` runs a kernel on P PEs of each chip: 1, 2 or 4 PEs
are one cluster of 64, 128 or 256 slices, 8 PEs are the whole chip (2 clusters of 256).
The numbers derive from the target's largest cluster and slice counts, so a target file
with other sizes scales the same way.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ir.host_layout import host_shape
from ir.mapping.factors import AxisFactor, BroadcastFactor, PaddingFactor

__all__ = ["CHIP_TARGETS", "named_chip_counts", "PE_COUNTS", "DEFAULT_PE", "PES_PER_CLUSTER", "pe_space", "pe_fault",
           "chip_host_dims", "chip_broadcast_dims", "host_array_shape", "accepted_host_shapes", "padded_chip_note",
           "unequal_chip_copies", "host_chip_fault"]

# Chip counts the reference compiles for, and the built-in target of each: `rngd` is one
# chip; the multi-chip targets ship as data beside it (tu_ops/targets/).
CHIP_TARGETS = {1: "rngd", 2: "rngd-2chip", 4: "rngd-4chip"}
PE_COUNTS = (1, 2, 4, 8)


def named_chip_counts(name: Any) -> frozenset[int]:
    """The chip counts of a kernel the target named `name` runs: every count of
    `CHIP_TARGETS` for `rngd` (or no name: a multi-chip kernel compiles for its shipped
    N-chip target), the counts up to N for a shipped N-chip target (as its file lists
    them), one chip for any other name or a path."""
    if name in (None, "rngd"):
        return frozenset(CHIP_TARGETS)
    named = [n for n, target in CHIP_TARGETS.items() if target == name]
    return frozenset(k for k in CHIP_TARGETS if k <= named[0]) if named else frozenset({1})
DEFAULT_PE = 8
PES_PER_CLUSTER = 4


def pe_space(pe: int, cluster_sizes: Any = (1, 2), slice_sizes: Any = (64, 128, 256)) -> tuple[int, int]:
    """(clusters, slices per cluster) that `pe` processing elements of one chip own."""
    slices_per_pe = max(slice_sizes) // PES_PER_CLUSTER
    clusters = min(max(cluster_sizes), -(-pe // PES_PER_CLUSTER))
    return clusters, min(pe, PES_PER_CLUSTER) * slices_per_pe


def pe_fault(pe: int, cluster: int, slices: int, cluster_sizes: Any = (1, 2),
             slice_sizes: Any = (64, 128, 256)) -> str | None:
    """Why a (Cluster, Slice) of `cluster` x `slices` positions does not fit `pe` PEs, or None."""
    max_clusters, max_slices = pe_space(pe, cluster_sizes, slice_sizes)
    if cluster > max_clusters:
        return (f"the Cluster mapping has {cluster} positions, but pe={pe} owns {max_clusters} cluster(s) "
                f"of {max_slices} slices")
    if slices > max_slices:
        return (f"the Slice mapping has {slices} positions, but pe={pe} owns {max_slices} slices per cluster "
                f"({max_slices // (max(slice_sizes) // PES_PER_CLUSTER)} x {max(slice_sizes) // PES_PER_CLUSTER})")
    return None


def chip_host_dims(chip: Any) -> tuple[int, ...]:
    """The host dimensions an HBM tensor's Chip mapping adds in front of its element's, one
    per axis digit and per broadcast of the Chip, outer first (rule 11 of the porting
    rules): `m("C")` with |C| = 2 adds a leading 2 (row c lives on chip c), a broadcast
    `m("4")` a leading 4 holding the copies (equal on input, one per chip on output);
    padding positions hold no row, so `1` and `1 # 2` add none (`accepted_host_shapes`)."""
    return tuple(f.extent for f in chip.factors()
                 if isinstance(f, AxisFactor) or (isinstance(f, BroadcastFactor) and f.extent > 1))


def chip_broadcast_dims(chip: Any) -> tuple[int, ...]:
    """Which of `chip_host_dims` are broadcasts (their rows are copies that must agree)."""
    dims = [f for f in chip.factors() if isinstance(f, AxisFactor) or (isinstance(f, BroadcastFactor) and f.extent > 1)]
    return tuple(d for d, f in enumerate(dims) if isinstance(f, BroadcastFactor))


def host_array_shape(t: Any) -> tuple[int, ...]:
    """The shape of the host array of HBM type `t`: its Chip's dimensions, then one per
    top-level term of its element (`ir.host_layout`)."""
    return chip_host_dims(t.chip) + host_shape(t.element)


def accepted_host_shapes(t: Any) -> tuple[tuple[int, ...], ...]:
    """The host array shapes a parameter of HBM type `t` may take, `host_array_shape` first.
    A Chip of padding around one live chip (`m("1 # 4")`) holds one copy, on chip 0: its
    array is the element's shape, and the reference's tests state the same data with a
    leading `1` (`HostTensor<m![1, ..]>`), so that shape is taken too."""
    shape = host_array_shape(t)
    return (shape, (1, *shape)) if _one_live_chip_of_many(t.chip) else (shape,)


def padded_chip_note(t: Any) -> str:
    """What a wrong shape's USAGE adds for a padded Chip (empty for any other Chip)."""
    if not _one_live_chip_of_many(t.chip):
        return ""
    return (f" or {(1, *host_array_shape(t))}: the Chip `{t.chip}` holds one copy, on chip 0, and chips 1 to "
            f"{t.chip.size - 1} hold padding")


def _one_live_chip_of_many(chip: Any) -> bool:
    """A Chip that adds no host dimension yet spans several chips: padding around chip 0."""
    return not chip_host_dims(chip) and chip.size > 1


def unequal_chip_copies(name: str, array: Any, chip: Any) -> str | None:
    """Why host array `array` of parameter `name` cannot be an HBM tensor on `chip`: the
    copies along a broadcast Chip dimension differ (rule 11); None when they agree."""
    for d in chip_broadcast_dims(chip):
        if not np.array_equal(array, np.broadcast_to(array.take([0], axis=d), array.shape)):
            return f"parameter `{name}`: dimension {d} is the broadcast Chip `{chip}` (one copy per chip); its " \
                   "copies must be equal"
    return None


def host_chip_fault(chip: Any, element: Any) -> str | None:
    """Why a parameter or result's Chip mapping has no host form, or None: every factor of a
    Chip that names axes is an axis digit (whole, `C`, or a part, `A / 4 % 4`, which the
    element may share) or padding (`C # 4`); each digit is one leading host dimension."""

    if not chip.axes():
        return None
    for f in chip.factors():
        if not isinstance(f, (AxisFactor, PaddingFactor)):
            return f"the Chip mapping `{chip}` must be axis digits and padding, not `{f}`"
    return None
