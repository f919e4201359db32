"""Where a `npu-opt synth` kernel runs (docs/synth.md): `pe` processing elements of each chip
(`@device(pe=P)`: 1, 2 or 4 PEs are one cluster of 64, 128 or 256 slices, 8 the whole chip)
and `chips` chips with a non-contracted index `split` over them.

A multi-chip kernel is the one-chip kernel of a chip's share, every tensor's Chip mapping an
axis of its own (`C`): chip c computes the block c of the split index (its size padded per
chip), and an operand without that index is given once per chip (rule 11 of the porting
rules: a Chip axis is a leading host dimension). `Contraction.pad` and `unpad` convert
between the whole arrays and these host arrays (`to_host`, `from_host`); the search's
inputs and oracle see the whole arrays through `whole_oracle`.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ir.errors import NpuOptError
from ir.topology import DEFAULT_PE, PE_COUNTS, pe_space

__all__ = ["usage", "check", "chip_axis", "slices", "decorator", "chip_line", "cluster_line", "axes_prefix",
           "to_host", "from_host", "whole_oracle", "imports", "reduced"]


def usage(message: str) -> NpuOptError:
    """The USAGE error of a spec synth cannot build (synth/spec.py, synth/epilogue.py)."""
    return NpuOptError(message, code="USAGE")


def check(pe: int, chips: int, split: str | None, spec: Any) -> str | None:
    """The split index (USAGE for a pe, chip count or split synth cannot build): by default
    the batch index, else the result's first index; the contracted index when asked, the
    chips then summing their partial results with `chip_all_reduce`."""
    result, contracted, batch, sizes = spec.result[1], spec.contracted, spec.batch, spec.sizes
    if isinstance(pe, bool) or pe not in PE_COUNTS:
        raise usage(f"--pe takes one of {', '.join(map(str, PE_COUNTS))} (processing elements of a chip), "
                    f"not {pe!r}")
    if isinstance(chips, bool) or not isinstance(chips, int) or chips < 1:
        raise usage(f"the chip count must be a positive integer, not {chips!r}")
    if chips == 1:
        if split is not None:
            raise usage(f"--split {split} needs a target of more than one chip (--target rngd-2chip)")
        return None
    split = split or batch or result[0]
    if split == contracted:
        if spec.epilogue is not None or spec.dtype_out == "bf16":
            raise usage(f"--split {split}: the chips add their partial sums of the contracted {split} in the "
                        "Vector Engine (i32 or f32), so an epilogue or a bf16 result would apply to partial sums; "
                        f"split an index of the result ({', '.join(result)}) instead")
        return split
    if split not in result:
        raise usage(f"--split {split}: the result has no index {split} (it has {', '.join(result)})")
    if split == batch and sizes and split in sizes and sizes[split] % chips:
        raise usage(f"--split {split}: its size {sizes[split]} does not divide over {chips} chips "
                    "(the batch index is not padded)")
    return split


def chip_axis(spec: Any) -> str:
    """The kernel axis the chips run over: `C`, unless an index already is."""
    taken = {i.upper() for i in spec.sizes}
    return next(name for name in ("C", "CHIP", "CHIPS_") if name not in taken)


def slices(spec: Any) -> int:
    """The slices a tile uses: all the slices of one cluster of the PEs the kernel runs on."""
    return pe_space(spec.pe)[1]


def decorator(spec: Any) -> str:
    return f"@device(chip={spec.chips}" + ("" if spec.pe == DEFAULT_PE else f", pe={spec.pe}") + ")"


def chip_line(spec: Any) -> list[str]:
    if spec.chips == 1:
        return ['Chip = m("1")']
    if spec.split == spec.contracted:
        K = spec.split.upper()
        return [f"# {spec.chips} chips: chip c sums block c of {K} (every tensor's Chip is {chip_axis(spec)}, a "
                "leading host",
                f"# dimension); chip_all_reduce adds the chips' partial results, and each chip stores the sum",
                f'Chip = m("{chip_axis(spec)}")']
    return [f"# {spec.chips} chips: chip c computes block c of {spec.split.upper()} (every tensor's Chip is "
            f"{chip_axis(spec)}, a leading",
            f"# host dimension; an operand without {spec.split.upper()} is given once per chip)",
            f'Chip = m("{chip_axis(spec)}")']


def cluster_line(spec: Any) -> list[str]:
    clusters, n = pe_space(spec.pe)
    if spec.pe == DEFAULT_PE:
        return [f'Cluster = m("1 # {clusters}")']
    return [f"# pe={spec.pe}: the kernel runs on {spec.pe} processing element(s), one cluster of {n} slices",
            'Cluster = m("1")']


def imports(spec: Any) -> list[str]:
    """The emitted file's import of the collective a split of the contracted index needs."""
    return ["from npu_opt.collectives import chip_all_reduce"] if spec.chips > 1 and \
        spec.split == spec.contracted else []


def reduced(spec: Any, var: str) -> str:
    """The stored tensor: `var`, or the sum over the chips of the partial results `var`."""
    return f"chip_all_reduce(ctx, {var})" if spec.chips > 1 and spec.split == spec.contracted else var


def axes_prefix(spec: Any) -> str:
    return "" if spec.chips == 1 else f"{chip_axis(spec)}={spec.chips}, "


def per_chip(size: int, chips: int, batch: bool, pad: Any) -> int:
    """A chip's share of a split index of `size`: padded unless it is the batch."""
    return size // chips if batch else pad(-(-size // chips))


def to_host(spec: Any, a: np.ndarray, idx: tuple[str, ...]) -> np.ndarray:
    """The host array of a tensor indexed `idx` from its whole (padded) array."""
    if spec.chips == 1:
        return a
    if spec.split not in idx:
        return np.stack([a] * spec.chips)
    p = idx.index(spec.split)
    shape = a.shape[:p] + (spec.chips, a.shape[p] // spec.chips) + a.shape[p + 1:]
    return np.ascontiguousarray(np.moveaxis(a.reshape(shape), p, 0))


def from_host(spec: Any, a: np.ndarray, idx: tuple[str, ...]) -> np.ndarray:
    """The whole (padded) array of a tensor indexed `idx` from its host array."""
    if spec.chips == 1:
        return a
    if spec.split not in idx:
        return a[0]
    p = idx.index(spec.split)
    b = np.moveaxis(a, 0, p)
    return b.reshape(b.shape[:p] + (b.shape[p] * b.shape[p + 1],) + b.shape[p + 2:])


def _indices(spec: Any) -> list[tuple[str, ...]]:
    """The kernel's arguments' indices: the operands, the bias if any, the result."""
    bias = [(spec.epilogue.bias[1],)] if spec.epilogue is not None and spec.epilogue.bias is not None else []
    return [spec.stored(name) for name, _ in spec.operands] + bias + [spec.result[1]]


def whole_oracle(spec: Any, oracle: Any) -> Any:
    """`oracle` (on whole arrays) as an oracle of the kernel's host arrays."""
    if spec.chips == 1:
        return oracle

    def on_host(*arrays: np.ndarray) -> np.ndarray:
        indices = _indices(spec)
        whole = [from_host(spec, a, idx) for a, idx in zip(arrays, indices)]
        return to_host(spec, oracle(*whole), indices[-1])
    return on_host
