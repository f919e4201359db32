"""`npu_opt.compile` and `npu-opt compile` use the artifact the compile made instead of
parsing the text they just printed; that artifact is the one `parse_visa` reads back
(same text, records, allocation facts, cost and makespan) on every example."""

from __future__ import annotations

import io
import json

import pytest

import npu_opt
import visa
import visa.parser
from npu_opt.compile_api import compile_kernel
from driver.compile_command import run_compile
from visa.printer import print_artifact
from visa.schedule import schedule_artifact

from tests.kernel_files import EXAMPLES_DIR, example, example_names


@pytest.mark.parametrize("name", example_names())
def test_the_compile_artifact_is_the_parsed_text(name):
    outcome = compile_kernel(example(name))
    assert outcome.status == "ok"
    parsed = visa.parse_visa(outcome.text)
    made = outcome.artifact
    assert print_artifact(made) == outcome.text
    assert tuple(made.kernel.ops()) == tuple(parsed.kernel.ops())
    assert made.kernel.steps == parsed.kernel.steps
    assert made.kernel.dm_allocations == parsed.kernel.dm_allocations
    assert made.kernel.trf_allocations == parsed.kernel.trf_allocations
    assert made.cost == parsed.cost
    assert schedule_artifact(made).makespan == schedule_artifact(parsed).makespan


def _no_parse(*args, **kwargs):
    raise AssertionError("the compile parsed its own text again")


def test_compile_does_not_parse(monkeypatch):
    monkeypatch.setattr(visa, "parse_visa", _no_parse)
    monkeypatch.setattr(visa.parser, "parse_visa", _no_parse)
    artifact = npu_opt.compile(example("gemm_i8_kernel"))
    assert artifact.manifest_entry["makespan"] > 0
    assert artifact.records


def test_compile_command_does_not_parse(monkeypatch, tmp_path):
    monkeypatch.setattr(visa, "parse_visa", _no_parse)
    monkeypatch.setattr(visa.parser, "parse_visa", _no_parse)
    status = run_compile([str(EXAMPLES_DIR / "gemm_i8.py")], str(tmp_path), jobs=1, out=io.StringIO(),
                         cached=False)
    assert status == 0
    assert (tmp_path / "gemm_i8_kernel.visa").is_file()
    manifest = json.loads((tmp_path / "manifest.json").read_text())
    assert [k["makespan"] > 0 for k in manifest["kernels"]] == [True]


def test_a_cold_compile_does_not_even_load_the_parser(tmp_path):
    """A fresh process compiling every example loads no VISA parser module at all."""
    import subprocess
    import sys

    code = ("import sys\nfrom driver.cli import main\n"
            f"status = main(['compile', {str(EXAMPLES_DIR)!r}, '-o', {str(tmp_path / 'out')!r}, '--jobs', '1'])\n"
            "print(status, sorted(m for m in sys.modules if m.startswith('visa.')), file=sys.stderr)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path)
    status, _, loaded = done.stderr.strip().splitlines()[-1].partition(" ")
    assert status == "0", done.stderr
    assert "visa.printer" in loaded  # it did compile
    assert "visa.parser" not in loaded and "visa.decode" not in loaded
