"""Lowered kernels for the VISA tests: examples/gemm_i8.py / 4b with the visa/visa.lark locations,
and two small kernels around the `widen_program` / `cast_program` builders (conversions,
cast, COMMIT delivery) with deliberately non-canonical value numbers."""

from __future__ import annotations

import attrs

from ir.dtypes import DType
from ir.location import Location
from ir.mapping.api import m
from ir.types import DmType, HbmType
from tests.tu_ops.builders import cast_program, gemm, widen_program
from tu_ops import DmaCommand, DmaKind, DmaOp, KernelParam, LoweredKernel, Ref, TuProgram

# visa/visa.lark: line:col of the call each record of example 4 comes from.
EXAMPLE_4_LOCS = {2: (13, 11), 3: (14, 11), 4: (15, 22), 5: (19, 15), 6: (20, 21), 7: (24, 13),
                  8: (25, 13), 9: (26, 13), 10: (27, 13), 11: (28, 13), 12: (30, 16)}


def located(kernel: LoweredKernel, file: str, locs: dict[int, tuple[int, int]]) -> LoweredKernel:
    """`kernel` with `loc=Location(file, line, col)` on every op listed in `locs`."""

    def put(op):
        where = locs.get(op.result.id)
        return op if where is None else attrs.evolve(op, loc=Location(file, *where))

    steps = [attrs.evolve(s, ops=tuple(put(o) for o in s.ops)) if isinstance(s, TuProgram) else put(s)
             for s in kernel.steps]
    return attrs.evolve(kernel, steps=steps)


def example_4(locs: bool = True) -> LoweredKernel:
    """examples/gemm_i8.py as visa/visa.lark prints it (locations from 1.6 when `locs`)."""
    kernel = gemm("i8")
    return located(kernel, "examples/gemm_i8.py", EXAMPLE_4_LOCS) if locs else kernel


def example_4b(locs: bool = True) -> LoweredKernel:
    """examples/gemm_bf16.py, located at the same lines of `examples/gemm_bf16.py` when `locs`."""
    kernel = gemm("bf16")
    return located(kernel, "examples/gemm_bf16.py", EXAMPLE_4_LOCS) if locs else kernel


def _wrap(program: TuProgram, axes: dict[str, int], src: DType, dst: DType, element: str,
          first: int) -> LoweredKernel:
    """param -> dma into DM (result `%first`) -> program -> dma back to HBM."""
    q = lambda t: m(t, axes=axes)  # noqa: E731
    chip, cluster, slice_ = program.space
    names = ", ".join(axes)
    hin, hout = HbmType(src, chip, q(names)), HbmType(dst, chip, q(names))
    dm_in = DmType(src, chip, cluster, slice_, q(element))
    sink = program.sink
    cmd = DmaCommand(part=(0, 0, 0), src_base=0, dst_base=0, packet_bytes=64, entries=[(4, 64, 64), (64, 1, 1)])
    into = DmaOp(result=Ref(first), src=Ref(7), kind=DmaKind.HBM_TO_DM, element_type=src, input_type=hin,
                 output_type=dm_in, commands=[cmd])
    out = DmaOp(result=Ref(99), src=sink.result, kind=DmaKind.DM_TO_HBM, element_type=dst,
                input_type=sink.output_type, output_type=hout,
                commands=[attrs.evolve(cmd, src_base=sink.dest, dst_base=0)])
    return LoweredKernel(name="sample", axes=tuple(axes.items()), params=[KernelParam(Ref(7), "x", hin)],
                         steps=[into, attrs.evolve(program, index=3), out], results=[Ref(99)])


def widen_kernel() -> LoweredKernel:
    """examples/widening_copy.py's feed (I8_TO_I32, Flit1, COMMIT) inside a kernel numbered %7, %30..%32, %99."""
    return _wrap(widen_program(), {"A": 4096, "B": 8}, DType.I8, DType.I32, "A / 8 % 2, A % 8, B", 30)


def cast_kernel() -> LoweredKernel:
    """The f32 -> bf16 CastOp chain inside a kernel numbered %7, %20..%23, %99."""
    return _wrap(cast_program(), {"I": 64, "J": 8}, DType.F32, DType.BF16, "J", 20)
