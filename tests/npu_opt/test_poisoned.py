"""What a refused value does when the kernel goes on using it: every attribute, call and
index is the refused value again, and a loop over it runs no body (so one refusal is
reported once, never followed by a Python error or a loop that does not end)."""

from __future__ import annotations

from npu_opt.stagebase import Poisoned


def test_attributes_calls_and_members_stay_refused():
    p = Poisoned("model")
    assert p.layers[3].weight.to_dm(None, None) is p


def test_a_loop_over_a_refused_value_runs_no_body():
    p = Poisoned("model")
    assert list(p.layers) == []
    assert [x for x in p] == []
