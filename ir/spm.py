"""Scratchpad memory (docs/machine/spm.md): what an `SpmTensor` is, and how it moves.

Each processing element (PE) of a cluster drives 64 of its slices and holds a 4 KiB
scratchpad. `SpmTensor[dtype, Chip, Cluster, Pe, Element]` places `Element` in the SPM of
every PE `Pe` names: `Pe` counts the PEs the tensor's cluster share fuses, so a DM tensor
of `Slice` slices moves to an SPM tensor of `Slice / 64` PEs (SPM-2).

The SPM is no SRAM the DMA engine addresses by slice: a DMA reads and writes it like HBM,
one byte stream per chip. That is how npu-opt stores and moves it: as the HBM tensor
`spm_as_hbm(t)`, whose per-chip element is `[Cluster, Pe, Element]`. The DMA rules of a
DM <-> HBM copy then apply to a move between DM and SPM (SPM-3).
"""

from __future__ import annotations

from ir.diagnostic import Violation
from ir.mapping.factors import AxisFactor, PaddingFactor
from ir.mapping.nodes import Mapping, pair_all
from ir.types import HbmType, SpmType

__all__ = ["SPM_BYTES", "PES_PER_CLUSTER", "SLICES_PER_PE", "spm_as_hbm", "spm_type_fault", "pe_is_padding_only",
           "positions_domain", "positions_axes"]

SPM_BYTES = 4096        # one PE's scratchpad
PES_PER_CLUSTER = 4     # the PEs one cluster fuses
SLICES_PER_PE = 64      # the slices each PE drives


def spm_as_hbm(t: SpmType) -> HbmType:
    """The HBM tensor an SPM tensor moves and is stored as: per chip, `[Cluster, Pe, Element]`."""
    return HbmType(t.dtype, t.chip, pair_all([t.cluster, t.pe, t.element]))


def spm_type_fault(t: SpmType) -> Violation | None:
    """SPM-1: Cluster is 1 or 2 positions, Pe 1, 2 or 4, and Element fits one PE's 4 KiB."""
    if t.cluster.size not in (1, 2):
        return Violation("SPM-1", f"the SPM tensor's Cluster `{t.cluster}` spans {t.cluster.size} positions; a "
                                  "chip has 2 clusters", help='write m("1 # 2"), m("2") or a 2-position axis')
    if t.pe.size not in (1, 2, PES_PER_CLUSTER):
        return Violation("SPM-1", f"the SPM tensor's Pe `{t.pe}` spans {t.pe.size} PEs; a cluster fuses 1, 2 or "
                                  f"{PES_PER_CLUSTER}", help='e.g. m("1 # 4"): the whole list on PE 0 of 4')
    bits = t.element.size * t.dtype.bits
    if bits > SPM_BYTES * 8:
        return Violation("SPM-1", f"the SPM tensor's Element `{t.element}` takes {bits // 8} bytes of {t.dtype}; one "
                                  f"PE's scratchpad holds {SPM_BYTES}",
                         help="split the tensor, or spread it over the PEs with a Pe axis")
    return None


def pe_is_padding_only(pe: Mapping) -> bool:
    """Whether `pe` keeps everything on PE 0: `1`, or one live position padded (`1 # 4`)."""
    factors = list(pe.factors())
    return not factors or (len(factors) == 1 and isinstance(factors[0], PaddingFactor)
                           and factors[0].kind.name == "TOP")


def positions_axes(t: SpmType) -> tuple[tuple[str, int], ...] | None:
    """(axis, size) of the domain an SPM list of positions keys (`positions_domain`), each a
    whole axis; None when one is held in part."""
    out: dict[str, int] = {}
    for level in (t.cluster, t.element):
        for f in level.factors():
            if isinstance(f, AxisFactor):
                if f.step != 1 or f.extent != f.axis_size or f.axis in out:
                    return None
                out[f.axis] = f.axis_size
    return tuple(out.items())


def positions_domain(t: SpmType) -> tuple[str, ...]:
    """The axes an SPM index of positions keys, outer to inner: a Cluster that names axes
    (each cluster its own list), then the list's own axes."""
    out = [a for f in t.cluster.factors() if isinstance(f, AxisFactor) for a in (f.axis,)]
    out += [f.axis for f in t.element.factors() if isinstance(f, AxisFactor)]
    return tuple(dict.fromkeys(out))
