"""A `dma_into` HBM tensor written over in place (issue 29): the walker lets a `dma_into`
write over the HBM bytes of its `into` tensor, instead of copying them, when a DMA of the
same run made that tensor and no later record (nor the results) reads it
(`walker._last_reads`). examples/gemm_tiled.py writes its output tile by tile, each tile a
`dma_into` of the previous one: the bits must be those of the copying path and of a numpy
GEMM, the caller's arrays untouched."""

from __future__ import annotations

import runpy
from pathlib import Path

import attrs
import ml_dtypes
import numpy as np

import npu_opt
from tu_ops.base import Ref
from tu_ops.target import get_target
from visa import parse_visa
from visa.interp import dma, execute_inout, walker

ROOT = Path(__file__).resolve().parents[2]


def tiled_bf16_gemm(seed: int):
    """examples/gemm_tiled.py compiled and parsed, and its inputs: small-integer bf16
    operands (exact sums) and a random `out`, written everywhere, so its old values do not
    show."""
    kernel = runpy.run_path(str(ROOT / "examples" / "gemm_tiled.py"))["gemm_tiled"]
    rng = np.random.default_rng(seed)
    shapes = [tuple(f.extent for f in op.result.type.element.factors()) for op in kernel.trace().kernel.params]
    a = rng.integers(-8, 8, shapes[0]).astype(np.float32).astype(ml_dtypes.bfloat16)
    w = rng.integers(-8, 8, shapes[1]).astype(np.float32).astype(ml_dtypes.bfloat16)
    out = rng.standard_normal(shapes[2]).astype(np.float32)
    return parse_visa(npu_opt.compile(kernel).text), [a, w, out]


def _gemm_tiled():
    return tiled_bf16_gemm(11)


def _in_place_flags(monkeypatch) -> list[bool]:
    """Whether each `dma_into` of the runs that follow writes over its HBM tensor in place."""
    flags: list[bool] = []
    real = dma.run_dma

    def spy(op, mem, env, in_place=False):
        if getattr(op, "into", None) is not None and op.output_type.kind == "hbm":
            flags.append(in_place)
        return real(op, mem, env, in_place)

    monkeypatch.setattr(walker, "run_dma", spy)
    return flags


def test_dma_into_in_place_gives_the_copying_bits(monkeypatch):
    art, arrays = _gemm_tiled()
    kept = [x.copy() for x in arrays]
    flags = _in_place_flags(monkeypatch)
    fast = execute_inout(art, arrays)[1][0]
    assert flags[0] is False and all(flags[1:]) and len(flags) > 1  # the parameter is copied, the run's own not
    monkeypatch.setattr(walker, "_last_reads", lambda kernel: {})  # nothing known: every dma_into copies
    flags.clear()
    slow = execute_inout(art, arrays)[1][0]
    assert not any(flags)
    assert np.asarray(fast).tobytes() == np.asarray(slow).tobytes()
    want = arrays[0].astype(np.float64) @ arrays[1].astype(np.float64).T  # small integers: exact in f32
    assert np.array_equal(np.asarray(fast), want.astype(np.float32))
    assert all(np.array_equal(x.view(np.uint8), y.view(np.uint8)) for x, y in zip(arrays, kept))


@attrs.frozen
class _Source:
    tensor: Ref


@attrs.frozen
class _Op:
    result: Ref
    src: Ref | None = None
    source: _Source | None = None
    into: Ref | None = None


@attrs.frozen
class _Kernel:
    steps: tuple
    results: tuple = ()
    finals: tuple = ()


def test_last_reads_sees_every_field_naming_a_value():
    steps = (_Op(Ref(1), src=Ref(0)),                      # %1 from %0
             _Op(Ref(2), src=Ref(9), into=Ref(1)),         # %2 into %1
             _Op(Ref(3), source=_Source(Ref(1))),          # %1 read again, inside a field's object
             _Op(Ref(4), src=Ref(2), into=Ref(3)))
    last = walker._last_reads(_Kernel(steps, results=(Ref(4),), finals=(Ref(3),)))
    assert last[1] == 2 and last[0] == 0 and last[2] == 3 and last[9] == 1
    assert last[3] == last[4] == len(steps)  # a final or result: read after the last step


def _first_dma(name: str):
    kernel = runpy.run_path(str(ROOT / "examples" / f"{name}.py"))[f"{name}_kernel"]
    art = parse_visa(npu_opt.compile(kernel).text)
    op = next(s for s in art.kernel.steps if getattr(s, "MNEMONIC", "") == "dma" and s.output_type.kind == "dm")
    return op, dma.tensor_bytes(op.output_type, get_target("rngd"))


def _covered_by_numpy(op, base: int, size: int) -> bool:
    """The oracle: every byte address each command writes; the set of them must be each
    slice's window, every address once."""
    slices = op.output_type.slice.size
    addr = np.concatenate([dma.walk(c.dst_base, [e.size for e in c.entries], [e.dst_stride for e in c.entries]).ravel()
                           for c in op.commands])
    want = (np.arange(slices, dtype=np.int64)[:, None] * 524288 + base + np.arange(size)).ravel()
    return addr.size == want.size and np.array_equal(np.sort(addr), want)


def test_a_dma_writing_its_whole_tensor_skips_the_zeroing_only_then():
    op, size = _first_dma("gemm_bf16")
    base = op.commands[0].dst_base
    assert dma._covers(op, base, size, 524288) is True and _covered_by_numpy(op, base, size)
    cmd = op.commands[0]
    short = attrs.evolve(op, commands=[attrs.evolve(cmd, entries=[attrs.evolve(cmd.entries[0], size=15),
                                                                  *cmd.entries[1:]])])
    twice = attrs.evolve(op, commands=[attrs.evolve(cmd, entries=[cmd.entries[0], attrs.evolve(cmd.entries[1],
                                       dst_stride=0), *cmd.entries[2:]])])
    shifted = attrs.evolve(op, commands=[attrs.evolve(cmd, dst_base=cmd.dst_base + 4096)])
    for bad in (short, twice, shifted):
        assert dma._covers(bad, base, size, 524288) is False and not _covered_by_numpy(bad, base, size)


def test_a_parameter_the_run_owns_is_written_in_place_a_borrowed_one_copied(monkeypatch):
    """`out` given Fortran-ordered: its HBM bytes are a copy the run owns, so the first
    `dma_into` writes over them too; given C-ordered they are a view of the caller's array
    (`to_hbm(copy=False)`), which only a copy is written. Same bits, caller's arrays untouched."""
    art, arrays = _gemm_tiled()
    flags = _in_place_flags(monkeypatch)
    fortran = [arrays[0], arrays[1], np.asfortranarray(arrays[2])]
    kept = [x.copy() for x in fortran]
    owned = execute_inout(art, fortran)[1][0]
    assert len(flags) > 1 and all(flags)
    flags.clear()
    borrowed = execute_inout(art, arrays)[1][0]
    assert flags[0] is False and all(flags[1:])
    want = arrays[0].astype(np.float64) @ arrays[1].astype(np.float64).T
    assert np.array_equal(np.asarray(owned), want.astype(np.float32))
    assert np.asarray(owned).tobytes() == np.asarray(borrowed).tobytes()
    assert all(np.ascontiguousarray(x).tobytes() == y.tobytes() for x, y in zip(fortran, kept))
    assert not any(np.may_share_memory(np.asarray(owned), x) for x in fortran + arrays)


def test_an_unwritten_borrowed_parameter_comes_back_as_a_copy():
    """A final that is the parameter's own bytes (nothing writes it) must not hand the caller
    a view of the array it passed in."""
    art, arrays = _gemm_tiled()
    kernel = art.kernel
    same = attrs.evolve(kernel, steps=(), finals=(kernel.params[2].ref,))
    out = execute_inout(same, arrays)[1][0]
    assert np.array_equal(out, arrays[2]) and not np.may_share_memory(out, arrays[2])
