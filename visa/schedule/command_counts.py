"""The fewest DMA commands a kernel of a contraction issues where its tensors or its MACs
span several partitions (a chip, or a chip's cluster): what the roofline's DMA bound
(visa/schedule/bounds.py) counts of start-ups beyond one command per tensor. Each function's
docstring holds its proof, in the model."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from visa.schedule.bounds import Demand

__all__ = ["chip_commands", "cluster_commands"]


def chip_commands(c: Demand) -> int:
    """The fewest DMA commands of any kernel of `c` whose tensors are split over chips: the sum
    of `c.parts` (one per tensor where none is given).

    Proof, in the model (tu_ops/dma_commands.py, ir/rules/dma.py, ir/rules/views.py):
    - A command serves one partition, `(chip, cluster)` of its DM side (of the destination
      for HBM -> HBM), and walks its HBM side's Element level from one Chip position's base:
      the Chip digits pick the partition, never an entry, and a window (a view's tile) keeps
      each level's extent, moving the base by whole cells and walking at most the tile's
      live values from there (VIEW-3: start + length within the digit's extent). So the HBM
      bytes one command reads or writes lie in ONE chip's part of an HBM tensor whose Chip
      is split (tests/synth/test_synth_roofline.py checks it on every compiled candidate).
      Which DM they reach does not matter here: a window of the Chip level may move a part
      to another chip's DM.
    - A kernel of the contraction reads every given element of each operand (any of them
      changes the result) and writes every given element of the result, whose host tensors
      hold, on chip c, part c of the split index (synth/target.to_host). An HBM tensor's
      bytes are read or written only by DMAs (no other engine touches HBM), so a tensor with
      given elements on P chips' parts takes at least P commands reading (writing) it.
    - No command counts for two tensors: an HBM -> DM or HBM -> HBM command reads one source
      tensor, a DM -> HBM or HBM -> HBM one writes one destination tensor, and an HBM -> HBM
      command reading an operand writing the result would store an operand's bytes, not
      results (nor can the result's HBM tensor be read as an operand's scratch: it holds no
      operand bytes the kernel did not write there through DM first, which is a command
      more).
    A tensor copied whole to each chip (an operand without the split index) is read in one
    command at the least (any one copy): part 1. The MACs need not run on every chip (one
    chip may compute all of them), so this counts no second copy of a broadcast operand and
    no wait on a program (`program_gap` assumes one command per tensor: with parts on two
    chips, one chip's store may run while the other computes)."""
    return sum(c.parts) if c.parts else len(c.loads) + len(c.stores)


def cluster_commands(t: int) -> int:
    """The fewest DMA commands of a kernel of one chip whose MACs run on slices of both of its
    clusters, `t` the contraction's tensors (one command each at the least), unless the MACs
    of one cluster all end before those of the other start: `t + 2`. Either way its DMA
    context waits at least as long as `program_gap` says of a kernel on one cluster.

    Proof, in the model (tu_ops/dma_commands.py, docs/machine/switch.md, fetch-lift.md):
    - A command whose destination is DM writes one partition, `(chip, cluster)`, and one whose
      source is DM (to HBM) reads one: its commands are cut per partition of its DM side.
    - No other engine moves bytes between clusters: every engine but the Switch Engine works
      inside one slice, the switch moves a stream between the slices of one cluster's ring
      (Chip and Cluster stay), and a fetch (lifted or not) reads its own slice's DM. A MAC
      reads its operands from its slice's TRF and stream, so a cluster whose slices run MACs
      holds, in its DM, bytes brought from each operand's HBM tensor by some command whose
      destination is that cluster.
    - Let `A` and `W` be the clusters a command reading `a` and one reading `w` write (each
      reads one HBM tensor). If `A != W`, `A` needs `w`'s bytes and `W` needs `a`'s: two more
      commands, with different destinations, neither of them one of those two.
    - If `A == W = X`, the other cluster `Y` needs a command into it (one more). The results
      of both clusters' MACs reach HBM through stores, each reading one cluster: two stores
      (one more), or one store and a copy into the cluster it reads of the other cluster's
      results. A copy out of `Y` starts after `Y`'s MACs, so after the command that brought
      `Y` its operands: one more. A copy into `Y` may be that command only if it carries all
      of `X`'s results and all of `Y`'s operands: then every MAC of `X` ends before it starts
      and every MAC of `Y` starts after it ends.
    So a kernel on both clusters issues `t + 2` commands (two start-ups more, which
    `program_gap` never exceeds), or `t + 1` with its MACs in two runs one after the other,
    each on one cluster's slices: after the last load the context idles for a program and
    `X`'s MACs, runs the copy, and idles for a program and `Y`'s MACs, at least a start-up
    more than `program_gap`'s `W` with the MACs of one cluster. A kernel of one cluster runs
    its MACs on that cluster's slices alone."""
    return t + 2
