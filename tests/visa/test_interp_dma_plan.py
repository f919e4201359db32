"""What a DMA record alone fixes is worked out once per record, not on every run of it
(issue 61 item 2: a batched drawn kernel runs ~50 DMAs a run, a rolled loop the same
records again and again): its commands' loops checked and split into sizes and strides
(`dma._command_walks`, per record), its live (chip, cluster)s (`dma.live_parts`, per pair
of mappings), and no error message is built unless it is raised. The results stay the
numpy oracle's bits."""

from __future__ import annotations

import functools

import attrs
import ml_dtypes
import numpy as np
import pytest

from npu_opt.compile_api import compile_kernel
from synth import contraction
from synth.space import build
from visa import parse_visa
from tu_ops.target import as_target
from visa.facts import tensor_bytes
from visa.interp import dma, execute_inout

SIZES = dict(m=128, n=128, k=64)


@functools.cache
def _kernel() -> tuple:
    spec = contraction("out[n,m] = a[m,k] * w[n,k]", dtype="bf16:f32", sizes=SIZES, name="dma_plan")
    kernel = build(spec, dict(placement="16x8 of 8x16, on 1/2 of the slices", trf="w", packet=16), "<dma plan>")
    rng = np.random.default_rng(11)
    a, w = rng.integers(-8, 9, (128, 64)), rng.integers(-8, 9, (128, 64))
    arrays = [x.astype(ml_dtypes.bfloat16) for x in (a, w)] + [np.zeros((128, 128), np.float32)]
    want = np.einsum("nk,mk->nm", w.astype(np.float64), a.astype(np.float64)).astype(np.float32)
    return parse_visa(compile_kernel(kernel).text), arrays, want


def _out(artifact, arrays) -> np.ndarray:
    results, finals = execute_inout(artifact, [x.copy() for x in arrays])
    return np.asarray((results + finals)[-1])


def test_a_second_run_does_not_check_or_split_the_dma_commands_again(monkeypatch: pytest.MonkeyPatch) -> None:
    artifact, arrays, want = _kernel()
    messages: list[str] = []
    masks: list = []
    check, pad_mask = dma.check, dma.pad_mask
    monkeypatch.setattr(dma, "check", lambda ok, message, op=None: messages.append(message) or check(ok, message, op))
    monkeypatch.setattr(dma, "pad_mask", lambda *m: masks.append(m) or pad_mask(*m))
    dma._live_parts.cache_clear()
    first = _out(artifact, arrays)
    per_command = [m for m in messages if m.startswith("command ")]
    assert per_command and masks          # the first run checks each command, works out the live parts
    messages.clear()
    masks.clear()
    second = _out(artifact, arrays)
    assert not [m for m in messages if m.startswith("command ")] and not masks
    for got in (first, second):
        assert np.array_equal(got.view(np.uint32), want.view(np.uint32))


def test_no_error_message_is_built_on_the_way_through(monkeypatch: pytest.MonkeyPatch) -> None:
    """`a_an` words only an error's message: a run that raises none never calls it."""
    artifact, arrays, want = _kernel()
    monkeypatch.setattr(dma, "a_an", lambda *args: pytest.fail("an error message built"))
    got = _out(artifact, arrays)
    assert np.array_equal(got.view(np.uint32), want.view(np.uint32))


class _NoCopy(np.ndarray):
    """An HBM tensor that must not be copied."""

    def copy(self, *args, **kwargs):
        pytest.fail("the tensor written over whole was copied first")


def _into_step(artifact) -> tuple:
    target = as_target(artifact.target)
    (step,) = [s for s in artifact.kernel.steps if getattr(s, "into", None) is not None]
    return step, step.output_type.chip.size * tensor_bytes(step.output_type, target)


def test_a_dma_into_that_writes_every_byte_does_not_copy_the_tensor_first() -> None:
    """The result's DMA writes all of `out` (one injective command of its size): the old
    bytes are not copied into the result first; the run's bits stay the oracle's with `out`
    holding garbage before."""
    artifact, arrays, want = _kernel()
    step, size = _into_step(artifact)
    env = {step.into.id: np.full(size, 0xA5, np.uint8).view(_NoCopy)}
    got = dma._hbm_result(step, env, size, False)
    assert got.shape == (size,) and not isinstance(got, _NoCopy)
    garbage = [*arrays[:2], np.full((128, 128), np.nan, np.float32)]
    assert np.array_equal(_out(artifact, garbage).view(np.uint32), want.view(np.uint32))


def test_a_dma_into_that_leaves_bytes_keeps_the_tensors() -> None:
    """Commands that skip a byte, write one twice, or reach past the end: not a fill."""
    artifact, _, _ = _kernel()
    step, size = _into_step(artifact)
    assert dma._fills_hbm(step, size)
    (cmd,) = step.commands
    short = attrs.evolve(cmd, entries=[attrs.evolve(cmd.entries[0], size=cmd.entries[0].size - 1), *cmd.entries[1:]])
    twice = attrs.evolve(cmd, dst_base=cmd.dst_base + 1)
    for commands in ([short], [short, short], [twice]):
        assert not dma._fills_hbm(attrs.evolve(step, commands=commands), size)
    first = cmd.entries[0]        # the outermost loop (the widest destination stride): its last step
    assert first.dst_stride == max(e.dst_stride for e in cmd.entries)
    rest = attrs.evolve(cmd, entries=[attrs.evolve(first, size=1), *cmd.entries[1:]],
                        dst_base=cmd.dst_base + (first.size - 1) * first.dst_stride)
    assert dma._fills_hbm(attrs.evolve(step, commands=[short, rest]), size)   # two commands, each byte once
