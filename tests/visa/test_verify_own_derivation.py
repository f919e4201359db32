"""The VISA verifier compares each program record with the derivation the record declares
(`TuOp.derived`), not with a re-run of the lowering: a fault injected into the lowering
yields an artifact every op verifier accepts, and the verifier still refuses it at the
faulty field. (Before, the verifier re-ran the faulty lowering and agreed with itself.)"""

from __future__ import annotations

import sys

import attrs
import pytest

from ir import ops as ir
from npu_opt.compile_api import compile_kernel
from tests.kernel_files import example
from tu_ops.base import Entry
from tu_ops import dma_commands as dma_lowering
from tu_ops.lower import feed as feed_lowering
from tu_ops.lower.dispatch import LOWERINGS
from visa.artifact import VisaTextError
from visa.verify import verify_text


def _walk_stride(rec):  # the TRF sequencer's lane stride doubled
    *rest, last = rec.trf_read.entries
    return attrs.evolve(rec, trf_read=attrs.evolve(rec.trf_read, entries=(*rest, Entry(last.size, last.stride * 2))))


def _split_write(rec):  # the same addresses, but not the write plan the rules give
    (one,) = rec.write.time
    return attrs.evolve(rec, write=attrs.evolve(rec.write, time=(Entry(4, one.stride * one.size // 4),
                                                                 Entry(one.size // 4, one.stride))))


STAGE_FAULTS = {
    "trf-walk": (ir.ContractOuter, _walk_stride, "contract_outer field trf_read.entries="),
    "write-plan": (ir.CommitTrim, _split_write, "commit field write.time="),
}


@pytest.mark.parametrize("case", sorted(STAGE_FAULTS))
def test_a_faulty_stage_lowering_is_refused(case: str, monkeypatch: pytest.MonkeyPatch) -> None:
    cls, fault, message = STAGE_FAULTS[case]
    right = LOWERINGS[cls]
    monkeypatch.setitem(LOWERINGS._base.fns, cls, lambda op, site: fault(right(op, site)))
    outcome = compile_kernel(example("gemm_i8_kernel"))
    assert outcome.status == "ok", outcome.diagnostics  # every op verifier of the lowering accepts it
    with pytest.raises(VisaTextError, match="disagrees with the record's types") as e:
        verify_text(outcome.text)
    assert message in e.value.detail


def test_a_faulty_feed_lowering_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    right = feed_lowering.lower_feed

    def faulty(*args, **kwargs):
        feed = right(*args, **kwargs)
        shape = feed.shapes[0]
        time = tuple(Entry(e.size, e.stride * 2 if e.stride else 0) for e in shape.time)
        return attrs.evolve(feed, shapes=(attrs.evolve(shape, time=time),))

    for module in [m for m in list(sys.modules.values()) if getattr(m, "lower_feed", None) is right]:
        monkeypatch.setattr(module, "lower_feed", faulty)  # the lowering's function, wherever it is imported
    outcome = compile_kernel(example("gemm_i8_kernel"))
    assert outcome.status == "ok", outcome.diagnostics
    with pytest.raises(VisaTextError, match="feed_buffer field shapes\\[0\\].time=") as e:
        verify_text(outcome.text)
    assert "disagrees with the record's types" in e.value.detail


def test_the_faultless_artifact_verifies() -> None:
    verify_text(compile_kernel(example("gemm_i8_kernel")).text)


def test_a_faulty_dma_lowering_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    right = dma_lowering.lower_dma

    def faulty(*args, **kwargs):
        dma = right(*args, **kwargs)
        if dma.kind.name != "HBM_TO_DM" or len(dma.commands[0].entries) < 3:
            return dma
        a, b, *rest = dma.commands[0].entries  # the two outer loops read each other's HBM rows
        command = attrs.evolve(dma.commands[0], entries=(attrs.evolve(a, src_stride=b.src_stride),
                                                         attrs.evolve(b, src_stride=a.src_stride), *rest))
        return attrs.evolve(dma, commands=(command, *dma.commands[1:]))

    for module in [m for m in list(sys.modules.values()) if getattr(m, "lower_dma", None) is right]:
        monkeypatch.setattr(module, "lower_dma", faulty)
    outcome = compile_kernel(example("gemm_i8_kernel"))
    assert outcome.status == "ok", outcome.diagnostics
    with pytest.raises(VisaTextError, match="dma field commands\\[0\\].entries=") as e:
        verify_text(outcome.text)
    assert "disagrees with the record's types" in e.value.detail
