"""The smoke run: `python -m pytest -m smoke`, the first command to try on a new machine
(README.md, docs/testing.md). In well under a minute it goes through the main paths once,
each end to end on a shipped kernel: `check` (a kernel that passes and one refused at the
author's line), `compile` and the verifier of its artifact, `run` on the cpu backend and in
the VISA interpreter against an independent numpy oracle, `explain`, and the README's
example as the guide's tests run it. The whole suite covers each path in depth."""

from __future__ import annotations

import contextlib
import io
from pathlib import Path

import numpy as np
import pytest

import npu_opt
from driver.cli import main
from npu_opt.testing import oracles, to_bits
from tests.docs.blocks import ROOT, PageRunner, RUN_KINDS, blocks
from tests.kernel_files import example

pytestmark = pytest.mark.smoke


def _cli(*argv: str) -> tuple[int, str]:
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
        status = main(list(argv))
    return status, out.getvalue()


def test_check_accepts_an_example_and_refuses_a_mistake_at_its_line() -> None:
    status, out = _cli("check", str(ROOT / "examples" / "dot_product.py"))
    assert status == 0 and out.endswith("checked 1 kernel(s): 1 ok\n")
    status, out = _cli("check", str(ROOT / "tests" / "fixtures" / "refused.py"), "--filter", "r01_half_flit")
    assert status == 1 and "error[COLLECT-2]" in out and "refused.py:14:11" in out


def test_compile_writes_an_artifact_the_verifier_accepts(tmp_path: Path) -> None:
    status, out = _cli("compile", str(ROOT / "examples" / "dot_product.py"), "-o", str(tmp_path), "--no-cache")
    assert status == 0, out
    artifact = tmp_path / "dot_product_kernel.visa"
    assert artifact.read_text().startswith("visa ")
    status, out = _cli("visa", str(artifact))
    assert status == 0, out


@pytest.mark.parametrize("backend", ["cpu", "visa"])
def test_run_equals_the_numpy_oracle_bit_for_bit(backend: str) -> None:
    rng = np.random.default_rng(3)
    lhs, rhs = (rng.integers(0x3C00, 0x4000, 2048, dtype=np.uint16) for _ in range(2))  # bf16 in [1, 2)
    out = npu_opt.run(example("dot_product_kernel"), lhs, rhs, backend=backend)
    assert to_bits(out, "bf16").tolist() == oracles.dot_oracle_exact(lhs, rhs).tolist()


def test_explain_prints_a_codes_page() -> None:
    status, out = _cli("explain", "COLLECT-2")
    assert status == 0
    assert out.startswith("COLLECT-2: ") and "\nRule\n" in out and "error[COLLECT-2]" in out


def test_the_readme_example_runs_as_the_guide_tests_run_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.syspath_prepend(str(ROOT))
    page = ROOT / "README.md"
    runner = PageRunner(page, tmp_path)
    try:
        shown = [b for b in blocks(page) if b.kind in RUN_KINDS]
        for block in shown:
            runner.run(block)
    finally:
        runner.close()
    assert runner.counts["console"] >= 1 and sum(runner.counts.values()) == len(shown)
