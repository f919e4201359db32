"""The loop rules (docs/loops.md): a rolled loop's body is checked once for every index value
(LOOP-1 names the iteration out of range), a start no check covers is refused (LOOP-2), values
made in the body stay in it (LOOP-3), and a loop has a count for a bound and runs to its end
(LOOP-4). Each refusal is at the line marked `# LOOP-n` in tests/loops/refusal_kernels.py."""

from __future__ import annotations

import inspect
import re

import pytest

from tests.loops import refusal_kernels as rk


def marked(kernel) -> list[tuple[int, str]]:
    lines, first = inspect.getsourcelines(kernel.fn)
    return [(first + i, m.group(1)) for i, text in enumerate(lines) if (m := re.search(r"# (LOOP-\d)", text))]


def found(kernel) -> list[tuple[int, str]]:
    return [(d.line, d.code) for d in kernel.trace().diagnostics]


@pytest.mark.parametrize("kernel", [rk.past_the_end, rk.below_zero, rk.not_affine, rk.escapes, rk.index_after_loop,
                                    rk.bad_bounds])
def test_each_refusal_is_at_its_marked_line(kernel):
    assert sorted(found(kernel)) == sorted(marked(kernel))


def test_an_out_of_range_start_names_the_iteration():
    (past,) = rk.past_the_end.trace().diagnostics
    assert "is 8 at k = 4, past the last start 7" in past.message
    (low,) = rk.below_zero.trace().diagnostics
    assert "is -1 at i = 0, below 0" in low.message


def test_the_refusals_say_what_to_write():
    for d in rk.not_affine.trace().diagnostics:
        assert "a * i + b" in d.help
    codes = [d.code for d in rk.bad_bounds.trace().diagnostics]
    assert codes == ["LOOP-4"] * 3
    messages = " ".join(d.message for d in rk.bad_bounds.trace().diagnostics)
    assert "unsigned count" in messages and "2.5" in messages and "`break`" in messages


def test_a_python_error_in_a_body_is_the_only_report():
    codes = [d.code for d in rk.raises_in_body.trace().diagnostics]
    assert codes == ["USAGE"]
