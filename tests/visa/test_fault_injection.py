"""Fault injection: a corrupted example-4 artifact is never silently accepted (issue 7).

Each case changes one field of the valid `gemm_i8_kernel` artifact (visa/visa.lark, built
by hand in tests/tu_ops/builders.py), prints it, and checks that either the verifier
(`LoweredKernel.verify` / `visa.verify_text`) refuses it, or the VISA interpreter, run on
it, refuses it or computes something other than the `cpu` backend. Fields that move data
(strides, bases, the TRF walk, the reduction loops, the write plan, flit counts, element
types) must be caught by the interpreter itself, whatever the verifier says: an emulator
that ignored them would agree with the author while the hardware did something else.
"""

from __future__ import annotations

import attrs
import numpy as np
import pytest

from ir.errors import NpuOptError
from npu_opt.run import run
from tests.kernel_files import example
from tests.tu_ops.builders import gemm
from tu_ops import (
    CollectFlits, CommitConversion, DmaEntry, FeedElementType, LaneMode, LoopKind, TimeLoop, WritePlan, rngd,
)
from tu_ops.base import Ref
from tu_ops.program import TuProgram
from visa import parse_visa, print_visa
from visa.verify import verify_text
from visa.interp import InterpError, execute

TARGET = rngd()


def edit(n: int, fn):
    """A corruption: replace record `%n` (example 4 numbering) by `fn(record)`."""

    def apply(kernel):
        def put(op):
            return fn(op) if op.result.id == n else op
        steps = [attrs.evolve(s, ops=tuple(put(o) for o in s.ops)) if isinstance(s, TuProgram) else put(s)
                 for s in kernel.steps]
        return attrs.evolve(kernel, steps=steps)
    return apply


def shape(op, **changes):
    return attrs.evolve(op, shapes=[attrs.evolve(op.shapes[0], **changes)])


def command(op, **changes):
    return attrs.evolve(op, commands=[attrs.evolve(op.commands[0], **changes)])


def entries(op, *items):
    return command(op, entries=[DmaEntry(*e) for e in items])


def walk(op, *items, **changes):
    return attrs.evolve(op, trf_read=attrs.evolve(op.trf_read, entries=list(items), **changes))


K, R = LoopKind.KEEP, LoopKind.REDUCE

# (id, corruption, must the interpreter itself catch it?)
CASES = [
    # read plans (strides in source elements)
    ("feed-time-stride", edit(6, lambda op: shape(op, time=[(32, 64), (4, 0)])), True),
    ("feed-bcast-stride", edit(6, lambda op: shape(op, time=[(32, 128), (4, 1)])), True),
    ("feed-packet-stride", edit(6, lambda op: shape(op, packet=[(64, 2), (2, 1)])), True),
    ("weight-feed-stride", edit(4, lambda op: shape(op, time=[(8, 128), (4, 512)])), True),
    ("feed-offset", edit(6, lambda op: attrs.evolve(op, source=attrs.evolve(op.source, offset=32))), True),
    ("feed-source", edit(6, lambda op: attrs.evolve(op, source=attrs.evolve(op.source, tensor=Ref(3)))), True),
    # DMA commands (paired byte strides, bases)
    ("dma-src-stride", edit(2, lambda op: entries(op, (16, 2048, 8388608), (16, 0, 524288), (4096, 1, 1))), True),
    ("dma-dst-stride", edit(3, lambda op: entries(op, (16, 0, 524288), (16, 4096, 8388608), (4096, 1, 1))), True),
    ("dma-broadcast-axis", edit(2, lambda op: entries(op, (16, 0, 8388608), (16, 4096, 524288), (4096, 1, 1))), True),
    ("dma-src-base", edit(2, lambda op: command(op, src_base=128)), True),
    ("dma-dst-base", edit(3, lambda op: command(op, dst_base=4104)), True),
    ("dma-out-stride", edit(12, lambda op: entries(op, (16, 8388608, 65536), (16, 524288, 128), (32, 128, 1024),
                                                   (128, 1, 1))), True),
    ("dma-out-base", edit(12, lambda op: command(op, src_base=0)), True),
    ("dma-packet", edit(2, lambda op: command(op, packet_bytes=2048)), True),
    # flit counts
    ("flits-per-packet", edit(6, lambda op: attrs.evolve(op, flits_per_packet=5)), True),
    ("beats", edit(6, lambda op: attrs.evolve(op, beats=128)), True),
    ("collect-flits", edit(4, lambda op: attrs.evolve(op, collect_flits=CollectFlits.Flit1)), True),
    # dtypes and element types
    ("dma-element-type", edit(2, lambda op: attrs.evolve(op, element_type=op.element_type.__class__("u8"))), False),
    ("feed-element-type", edit(6, lambda op: attrs.evolve(op, element_type=FeedElementType.U8)), True),
    ("stream-type", edit(7, lambda op: attrs.evolve(op, stream_type=FeedElementType.RawInt4)), True),
    ("weight-type", edit(7, lambda op: attrs.evolve(op, weight_type=FeedElementType.BF16)), True),
    ("mac-type", edit(7, lambda op: attrs.evolve(op, mac_type=FeedElementType.F32)), True),
    ("trf-element-type", edit(5, lambda op: attrs.evolve(op, element_type=FeedElementType.F8E4M3)), True),
    # TRF load and walk
    ("trf-lanes", edit(5, lambda op: attrs.evolve(op, lanes=4)), True),
    ("trf-base-row", edit(5, lambda op: attrs.evolve(op, base_row=2)), True),
    ("walk-stride", edit(7, lambda op: walk(op, (32, 0), (8, 2))), True),
    ("walk-broadcast", edit(7, lambda op: walk(op, (32, 1), (8, 0))), True),
    ("walk-transposed", edit(7, lambda op: walk(op, (32, 0), (4, 1), (2, 4))), True),
    ("walk-read-elems", edit(7, lambda op: walk(op, (32, 0), (8, 1), read_elems=32, packet_broadcast=2)), True),
    ("time-broadcast", edit(7, lambda op: attrs.evolve(op, time_broadcast=(2,))), True),
    ("pack-size", edit(7, lambda op: attrs.evolve(op, pack_size=1)), True),
    # reductions
    ("tree-depth", edit(8, lambda op: attrs.evolve(op, depth=5)), True),
    ("loops-keep-reduce", edit(9, lambda op: attrs.evolve(op, loops=[TimeLoop(32, K), TimeLoop(4, R), TimeLoop(2, K)])),
     True),
    ("loops-order", edit(9, lambda op: attrs.evolve(op, loops=[TimeLoop(32, K), TimeLoop(2, R), TimeLoop(4, K)])),
     True),
    ("loops-reduce-outer", edit(9, lambda op: attrs.evolve(op, loops=[TimeLoop(2, R), TimeLoop(32, K),
                                                                      TimeLoop(4, K)])), True),
    ("lane-mode", edit(10, lambda op: attrs.evolve(op, mode=LaneMode.SEQUENTIAL)), True),
    ("lane-cycles", edit(10, lambda op: attrs.evolve(op, cycles=64)), True),
    # the commit
    ("write-time-stride", edit(11, lambda op: attrs.evolve(op, write=WritePlan(time=[(128, 16)], packet=[(8, 1)]))),
     True),
    ("write-permuted", edit(11, lambda op: attrs.evolve(op, write=WritePlan(time=[(4, 8), (32, 32)], packet=[(8, 1)]))),
     True),
    ("write-packet-stride", edit(11, lambda op: attrs.evolve(op, write=WritePlan(time=[(128, 8)], packet=[(2, 1), (4, 2)]))),
     True),
    ("commit-dest", edit(11, lambda op: attrs.evolve(op, dest=0)), True),
    ("commit-valid-bytes", edit(11, lambda op: attrs.evolve(op, valid_bytes=16)), True),
    ("commit-conversion", edit(11, lambda op: attrs.evolve(op, conversion=CommitConversion.F32_TO_BF16)), True),
]


@pytest.fixture(scope="module")
def reference():
    """Inputs and the cpu backend's result for examples/gemm_i8.py."""
    rng = np.random.default_rng(7)
    a = rng.integers(-128, 128, (512, 128), dtype=np.int8)
    w = rng.integers(-128, 128, (512, 128), dtype=np.int8)
    return (a, w), run(example("gemm_i8_kernel"), a, w, backend="cpu")


def test_the_uncorrupted_artifact_verifies_and_agrees(reference):
    arrays, expected = reference
    text = print_visa(gemm("i8"), TARGET)
    gemm("i8").verify(TARGET)
    out = execute(verify_text(text), arrays)
    np.testing.assert_array_equal(out.view(np.uint32), expected.view(np.uint32))


def _verifier_refuses(kernel) -> tuple[bool, str | None]:
    """(refused, text): the kernel's verifier or `verify_text` on its printed artifact."""
    try:
        kernel.verify(TARGET)
    except NpuOptError:
        return True, _text(kernel)
    text = _text(kernel)
    if text is None:
        return True, None
    try:
        verify_text(text)
    except NpuOptError:
        return True, text
    return False, text


def _text(kernel) -> str | None:
    try:
        return print_visa(kernel, TARGET)
    except (NpuOptError, ValueError, TypeError, ArithmeticError, KeyError):
        return None


def _interpreted(kernel, text, arrays, expected) -> str:
    """'refused', 'differs' or 'same': the interpreter on the printed artifact (or, when it
    cannot be read back, on the records themselves)."""
    source = kernel
    if text is not None:
        try:
            source = parse_visa(text)
        except NpuOptError:
            source = kernel
    try:
        out = execute(source, arrays)
    except InterpError:
        return "refused"
    if out.shape != expected.shape or out.dtype != expected.dtype:
        return "differs"
    return "same" if np.array_equal(out.view(np.uint32), expected.view(np.uint32)) else "differs"


@pytest.mark.parametrize("case,corrupt,interp_must_catch", CASES, ids=[c[0] for c in CASES])
def test_a_corruption_is_never_silently_accepted(reference, case, corrupt, interp_must_catch):
    arrays, expected = reference
    kernel = corrupt(gemm("i8"))
    assert kernel != gemm("i8"), "the corruption changed nothing"
    refused, text = _verifier_refuses(kernel)
    outcome = _interpreted(kernel, text, arrays, expected)
    assert refused or outcome != "same", f"{case}: verifier accepts it and the interpreter agrees with cpu"
    if interp_must_catch:
        assert outcome != "same", f"{case}: the interpreter ignored a field that moves data ({outcome})"


def test_cases_cover_every_family():
    """Read-plan, DMA, flit, dtype, TRF-walk, loop and write-plan corruptions are all present."""
    ids = {c[0].split("-")[0] for c in CASES}
    assert {"feed", "dma", "flits", "beats", "walk", "loops", "write", "trf", "mac", "stream"} <= ids
