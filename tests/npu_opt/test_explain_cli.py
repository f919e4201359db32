"""Every `npu-opt explain` page's example, saved as a file, produces its code under the
command a user runs: `npu-opt check` for trace-time codes, `npu-opt compile` for the codes
only the lowering finds (test_explain.py checks the same through the Python API; this checks
the command line's discovery, import and report path)."""

from __future__ import annotations

import json

import pytest

from driver import explain
from driver.cli import main

PAGES = dict(explain._load())  # every page, keyed by its canonical code
KERNEL_PAGES = sorted(c for c, p in PAGES.items() if p.example is not None)


def _report(capsys) -> list[dict]:
    return [json.loads(line) for line in capsys.readouterr().out.splitlines() if line.startswith("{")]


@pytest.mark.parametrize("code", KERNEL_PAGES)
def test_the_command_line_reports_the_page_code(code, tmp_path, capsys):
    p = PAGES[code]
    path = tmp_path / "example.py"
    path.write_text(p.example)
    argv = ["compile", str(path), "-o", str(tmp_path / "out"), "--no-cache"] if p.lowers else ["check", str(path)]
    if p.target is not None:
        (tmp_path / "target.toml").write_text(p.target)
        argv += ["--target", str(tmp_path / "target.toml")]
    if p.lowers and not p.compat:
        argv.append("--no-compat")
    status = main([*argv, "--format", "json"])
    kernels = [r for r in _report(capsys) if r.get("kind") == "kernel"]
    assert len(kernels) == 1, kernels
    codes = [d["code"] for d in kernels[0]["diagnostics"]]
    assert codes[:1] == [p.expected_code], codes
    if p.expected_code != "USAGE":  # a refusal poisons what follows: the rest of the kernel still traces
        assert "USAGE" not in codes, codes
    # the exit statuses of docs/ci.md: a kernel's own Python error is 2, a warning alone 0, a rule 1
    want = 2 if "USAGE" in codes else 0 if all(c.startswith("W-") for c in codes) else 1
    assert status == want
