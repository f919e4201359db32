"""Help and quick-fix text show a mapping as the kernel author spells it inside `m("...")`
(issue 58): `m("A, B / 32")`, not the printed form `m("(A, B / 32)")`."""

from __future__ import annotations

import pytest

import npu_opt
from ir.mapping.nodes import written
from npu_opt import m
from tests.kernel_files import fixture

AXES = {"A": 4, "B": 32, "K": 64}


@pytest.mark.parametrize("text, expected", [
    ("(A, K / 32)", "A, K / 32"), ("(A, B = 8 #{!} 32)", "A, B = 8 #{!} 32"), ("(A % 4, K) # 512", "(A % 4, K) # 512"),
    ("(A, (B, K))", "A, B, K"), ("K % 32", "K % 32"), ("1", "1"),
])
def test_written_drops_only_a_pairs_outer_parentheses_and_reparses_to_the_same_mapping(text: str,
                                                                                      expected: str) -> None:
    mapping = m(text, AXES)
    assert written(mapping) == expected
    assert m(written(mapping), AXES) == mapping


def test_a_text_in_parentheses_that_close_early_is_kept() -> None:
    assert written("(A, B) # (B)") == "(A, B) # (B)" and written("(A, B)") == "A, B"


def test_the_help_of_a_refusal_spells_the_mapping_as_the_kernel_does() -> None:
    report = npu_opt.check(fixture("r01_half_flit"))
    (d,) = report.diagnostics
    assert d.code == "COLLECT-2"
    assert d.help == 'use m("B % 32") for an i8 stream: .collect(m("A, B / 32"), m("B % 32"))'
