"""Runtime scalars and guards in VISA (docs/runtime.md): the records print, parse back to
the same text and verify; an edited guard or scalar record is refused with RUNTIME-8; the
schedule model counts guarded work as done (the worst case)."""

from __future__ import annotations

import pytest

import npu_opt
from tests.runtime.kernels import arithmetic, nested
from visa import parse_visa
from visa.artifact import VisaTextError
from visa.printer import print_artifact
from visa.schedule import schedule_artifact
from visa.verify import verify_text


def records(text: str, mnemonic: str) -> list[str]:
    return [line for line in text.splitlines() if f"= {mnemonic} " in line]


def test_the_records_print_parse_back_and_verify():
    text = npu_opt.compile(nested).text
    assert '  param %1 "lo" : scalar[i64]' in text
    assert len(records(text, "scalar_load")) == 2 and len(records(text, "guard_begin")) == 16
    assert any("= scalar op=LE lhs=" in r and "imm=" in r and "-> scalar[bool]" in r for r in records(text, "scalar"))
    assert print_artifact(parse_visa(text)) == text
    verify_text(text)


def test_casts_print_their_result_type():
    text = npu_opt.compile(arithmetic).text
    assert any("op=CAST" in r and ": scalar[i32] -> scalar[u32]" in r for r in records(text, "scalar"))
    assert any("op=CAST" in r and ": scalar[u32] -> scalar[usize]" in r for r in records(text, "scalar"))
    verify_text(text)


def _edited(text: str, old: str, new: str) -> str:
    assert old in text
    return text.replace(old, new, 1)


def test_a_guard_end_closing_the_outer_guard_first_is_refused():
    text = npu_opt.compile(nested).text
    ends = records(text, "guard_end")
    inner, outer = ends[0], ends[1]         # the first block: `hi > 0` inside `lo <= 0`
    inner_ref, outer_ref = inner.split("begin=")[1].split()[0], outer.split("begin=")[1].split()[0]
    swapped = _edited(text, f"begin={inner_ref} ", f"begin={outer_ref} ")
    swapped = _edited(swapped, outer, outer.replace(f"begin={outer_ref} ", f"begin={inner_ref} "))
    with pytest.raises(VisaTextError) as e:
        verify_text(swapped)
    assert e.value.rule == "RUNTIME-8" and "innermost open guard" in str(e.value)


def test_a_scalar_record_with_rhs_and_imm_is_refused():
    text = npu_opt.compile(arithmetic).text
    line = next(r for r in records(text, "scalar") if "op=ADD" in r)
    lhs = line.split("lhs=")[1].split()[0]
    with pytest.raises(VisaTextError) as e:
        verify_text(_edited(text, line, line.replace("imm=", f"rhs={lhs} imm=")))
    assert e.value.rule == "RUNTIME-8"


def test_an_unknown_scalar_type_does_not_parse():
    text = npu_opt.compile(nested).text
    with pytest.raises(VisaTextError, match="unknown scalar type `f32`"):
        parse_visa(_edited(text, '"lo" : scalar[i64]', '"lo" : scalar[f32]'))


def test_the_schedule_counts_guarded_work_as_done():
    artifact = npu_opt.compile(nested)
    schedule = schedule_artifact(parse_visa(artifact.text))
    steps = [s.step for s in schedule.slots]
    programs = [s for s in steps if any(r.mnemonic == "commit" for r in s.records)]
    assert len(programs) == 8 and all(s.duration > 0 for s in programs)
    loads = [s for s in steps if s.records[0].mnemonic == "scalar_load"]
    assert [s.duration for s in loads] == [501, 501]      # one DMA command: 500 startup + 1
    guards = [s for s in steps if s.records[0].mnemonic in ("scalar", "guard_begin", "guard_end")]
    assert guards and all(s.duration == 0 for s in guards)
