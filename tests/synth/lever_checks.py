"""What the tests of synth's levers ask of one candidate: its modelled makespan, and that it
equals the space's numpy oracle on the cpu backend and in the VISA interpreter."""

from __future__ import annotations

import numpy as np

from backends import get_backend
from backends.npu import compile_kernel
from synth.space import build
from tu_ops.target import get_target
from visa.schedule import builtin_rates, schedule_artifact


def makespan(spec, point: dict) -> int:
    """The schedule model's makespan of the candidate `point` of `spec`, compiled for rngd."""
    outcome = compile_kernel(build(spec, point), get_target("rngd"))
    assert outcome.status == "ok", outcome.diagnostics
    return schedule_artifact(outcome.artifact, target=get_target("rngd"), rates=builtin_rates("rngd")).makespan


def equals_numpy(spec, point: dict) -> None:
    """The candidate equals the space's numpy oracle (synth/space.py `_oracle`, np.einsum of
    the operands widened to int64) on the cpu backend and in the VISA interpreter."""
    space = spec.space()
    kernel = build(spec, point)
    arrays = space.inputs(np.random.default_rng(54))
    want = space.oracle(*arrays)
    for backend in ("cpu", "visa"):
        got = [a.copy() for a in arrays]
        get_backend(backend).run(kernel, tuple(got))
        assert np.array_equal(got[-1], want), backend
