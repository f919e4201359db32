"""The runtime rules RUNTIME-1..7 (docs/runtime.md): each refusal carries its code at the
user's line, the line marked `# RUNTIME-n` in tests/runtime/refusal_kernels.py."""

from __future__ import annotations

import inspect
import re

import pytest

import npu_opt
from tests.runtime import refusal_kernels as rk


def marked(kernel) -> list[tuple[int, str]]:
    """(line, code) of each `# RUNTIME-n` mark in the kernel's source, in order."""
    lines, first = inspect.getsourcelines(kernel.fn)
    return [(first + i, m.group(1)) for i, text in enumerate(lines)
            if (m := re.search(r"# (RUNTIME-\d)", text))]


def found(kernel) -> list[tuple[int, str]]:
    return [(d.line, d.code) for d in kernel.trace().diagnostics]


@pytest.mark.parametrize("kernel", [rk.truth_values, rk.immediate, rk.bad_scalar_type, rk.whole_write_under_guard])
def test_each_refusal_is_at_its_marked_line(kernel):
    assert sorted(found(kernel)) == sorted(marked(kernel))


def test_values_made_under_a_guard_do_not_leave_it():
    got = found(rk.escapes)
    want = marked(rk.escapes)
    assert [code for _, code in got] == ["RUNTIME-6"] * 2
    assert sorted(got) == sorted(want)
    assert "`ctx.when` block that has ended" in rk.escapes.trace().diagnostics[1].message


def test_the_refusals_name_the_construct_to_use():
    by_code = {}
    for d in rk.truth_values.trace().diagnostics:
        by_code.setdefault(d.code, d)
    assert "ctx.when" in by_code["RUNTIME-1"].help
    assert "range(N)" in by_code["RUNTIME-2"].help
    assert "cast one side" in by_code["RUNTIME-4"].help
    assert "to_spm" in by_code["RUNTIME-7"].help


def test_a_refused_kernel_does_not_run():
    with pytest.raises(npu_opt.CompileError) as e:
        npu_opt.run(rk.escapes, None, 1)
    assert {d.code for d in e.value.diagnostics} == {"RUNTIME-6"}
