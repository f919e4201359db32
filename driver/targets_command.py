"""`npu-opt targets`: list the built-in targets (or describe a target file) and their capabilities."""

from __future__ import annotations

import sys

from ir.errors import NpuOptError
from tu_ops.target import BUILTIN_TARGETS, load_target, target_sha256

__all__ = ["targets_command", "describe"]


def _pairs(entries, fmt) -> str:
    items = [fmt(e) + ("" if e.native else " (emulated)") for e in entries]
    return ", ".join(items) or "none"


def describe(target) -> str:
    """A readable summary of one target description."""
    c = target.constants
    digest = target.file_sha256 or target_sha256(target)
    lines = [
        f"{target.name}: {target.description}",
        f"  sha256         {digest}",
        f"  chips          {', '.join(map(str, target.chips))}",
        f"  clusters       {', '.join(map(str, c.CLUSTER_SIZES))} per chip; slices {', '.join(map(str, c.SLICE_SIZES))}",
        f"  lanes          {', '.join(map(str, c.LANES))}; flit {c.FLIT_BYTES} B",
        f"  DM per slice   {c.DM_SLICE_BYTES} B; TRF per slice {c.TRF_BYTES} B; VRF {c.VRF_BYTES} B",
        f"  sequencer      {c.SEQ_MAX_ENTRIES} entries of at most {c.SEQ_MAX_ITER} iterations",
        f"  fetch_cast     {_pairs(target.fetch_cast, lambda e: f'{e.src}->{e.dst}')}",
        f"  table lookup   {_pairs(target.fetch_table_lookup, lambda e: f'{e.src}->{e.dst}')}",
        f"  cast           {_pairs(target.cast, lambda e: f'{e.src}->{e.dst}')}",
        f"  commit_cast    {_pairs(target.commit_cast, lambda e: f'{e.src}->{e.dst}')}",
        f"  contraction    {_pairs(target.mac, lambda e: f'{e.stream}x{e.weight}->{e.acc}')}",
        f"  emulation      {len(target.emulation)} path(s)",
    ]
    return "\n".join(lines)


def targets_command(path: str | None = None) -> int:
    """Print every built-in target, or the target file at `path`; exit 2 for a bad file."""
    if path is not None:
        try:
            target = load_target(path)
        except (NpuOptError, OSError) as e:
            print(f"error[USAGE]: {e}", file=sys.stderr)
            return 2
        print(describe(target))
        return 0
    for make in BUILTIN_TARGETS.values():
        print(describe(make()))
    return 0
