"""The VISA verifier's loop rules (tu_ops/loop_checks.py): an edited artifact whose loop leaves
a start's range for some iteration, whose body buffer overlaps a tensor every iteration
reads, or whose brackets do not pair, is refused; the dependences across iterations are
derived facts."""

from __future__ import annotations

import pytest

import npu_opt
from tests.loops import kernels as K
from visa import parse_visa
from visa.artifact import VisaTextError
from visa.facts import with_facts
from visa.verify import verify_text
from tu_ops.loop_checks import loop_facts
from tu_ops import rngd


def _refused(text: str) -> VisaTextError:
    with pytest.raises(VisaTextError) as e:
        verify_text(text)
    return e.value


def test_a_loop_one_iteration_too_long_is_refused_naming_the_iteration():
    text = npu_opt.compile(K.copy_shifted).text
    verify_text(text)
    e = _refused(text.replace("start=0 stop=4 ", "start=0 stop=5 ", 1))
    assert e.rule == "LOOP-6" and "is 9 at %2 = 4, past the last start 7" in str(e)


def test_a_start_no_check_covers_is_refused():
    text = npu_opt.compile(K.copy_shifted).text
    e = _refused(text.replace("op=MUL lhs=%2 imm=2", "op=MUL lhs=%2 rhs=%2", 1))
    assert e.rule == "LOOP-6" and "no check covers" in str(e)


def test_a_body_buffer_over_a_tensor_every_iteration_reads_is_refused():
    text = npu_opt.compile(K.copy_through_dm).text
    verify_text(text)
    e = _refused(text.replace("src_base=256, dst_base=288", "src_base=256, dst_base=0", 1))
    assert e.rule == "LOOP-6" and "which every iteration reads" in str(e)


def test_unpaired_loop_brackets_are_refused():
    text = npu_opt.compile(K.copy_rolled).text
    end = next(line for line in text.splitlines() if "= loop_end " in line)
    assert _refused(text.replace(end + "\n", "", 1)).rule == "LOOP-5"


def test_the_dependences_across_iterations_are_derived():
    text = npu_opt.compile(K.copy_through_dm).text
    kernel = with_facts(parse_visa(text).kernel, rngd())
    new = next(s.result.id for s in kernel.steps if getattr(s, "MNEMONIC", "") == "tensor_new")
    write = next(s.result.id for s in kernel.steps if getattr(s, "MNEMONIC", "") == "dma_into")
    (facts,) = loop_facts(kernel)
    assert facts.read_each == (1,)                  # the DM copy of x, read by every iteration
    assert len(facts.reused) == 3                   # e, f, g: one allocation each, reused
    assert facts.carried == {new: write}            # `out`: its version written in the body carries over
