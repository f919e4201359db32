"""The inter-slice reduce lowered: its own `inter_slice_reduce` record (`tu_ops.vector_inter`).

IntraFirst (`vector_init, tag, ..., vector_inter_slice_reduce, vector_final`): the `vector`
record of the chain before it (made at `vector_init`), then this record. InterFirst
(`vector_init, vector_inter_slice_reduce [, tag, ...], vector_final`): `vector_init` makes
no record, the feed delivers to this one, and a chain after it (entered with its tag)
becomes a `vector` record of its own, made at that tag.
"""

from __future__ import annotations

from typing import Any

from ir.vector import ops as vops
from ir.vector.inter_ops import VectorInterSliceReduce
from tu_ops.base import Ref
from tu_ops.lower.tables import Site, lowers
from tu_ops.lower.vector import lower_pass
from tu_ops.vector_inter import InterReduceName, InterSliceReduceOp

__all__ = ["lower_inter", "inter_first_without_chain"]


@lowers(VectorInterSliceReduce, into=InterSliceReduceOp)
def lower_inter(op: VectorInterSliceReduce, site: Site) -> InterSliceReduceOp:
    return InterSliceReduceOp(result=Ref(site.result), input=Ref(site.src), op=InterReduceName[op.op.name],
                              out_slice=op.out_slice, input_type=site.type_of(op.input),
                              output_type=site.type_of(op.result), loc=op.loc)


@lowers(vops.VectorTag)
def _tag(op: vops.VectorTag, site: Site) -> Any:
    """A tag after an InterFirst inter-slice reduce opens the `vector` record of the rest of
    the pass; every other tag is a step of its pass's record."""
    rest = site.chain.after_collect()
    if site.position == 0 or not isinstance(rest[site.position - 1], VectorInterSliceReduce):
        return None

    tail = rest[site.position:]
    end = next(i for i, o in enumerate(tail) if isinstance(o, vops.VectorFinal))
    return lower_pass(op, site, tail[:end + 1])


def inter_first_without_chain(ops: tuple[Any, ...]) -> int:
    """How many InterFirst reduces of `ops` (a chain's ops after collect) no tag follows: their
    `vector_init` and the reduce make one record, not two (`tu_ops.lower.program.lowered_count`)."""
    n = 0
    for i, o in enumerate(ops):
        if isinstance(o, VectorInterSliceReduce) and i and isinstance(ops[i - 1], vops.VectorInit):
            n += not (i + 1 < len(ops) and isinstance(ops[i + 1], vops.VectorTag))
    return n
