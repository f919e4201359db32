"""A bad `dma_redistribute` record for the op-verifier table of tests/tu_ops/test_verifiers.py."""

from __future__ import annotations

import attrs

from tests.topology import redistribute_kernels as k
from tu_ops.lower.api import lower_kernel


def _redistribute(edit):
    def build():
        step = next(s for s in lower_kernel(k.rotate_and_pick).steps
                    if getattr(s, "MNEMONIC", "") == "dma_redistribute")
        return edit(step), None
    return build


REDIST_BAD = {
    # a source part the tensor does not have (8 parts: 4 chips x 2 clusters)
    "REDISTOP-1": _redistribute(lambda op: attrs.evolve(op, sources=(9, *op.sources[1:]))),
    "REDISTOP-1:offsets": _redistribute(lambda op: attrs.evolve(op, offsets=op.offsets[:-1])),
}
