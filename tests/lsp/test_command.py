"""`npu-opt lsp` on the command line: listed by the parser, and a clear USAGE error when the
`lsp` extra is not installed."""

from __future__ import annotations

import subprocess
import sys

from tests.lsp.conftest import ROOT


def test_the_parser_lists_the_lsp_command():
    from driver.cli import build_parser

    helped = build_parser().format_help()
    assert "lsp" in helped and "language server" in helped


def test_without_the_lsp_extra_the_command_says_how_to_install_it():
    probe = "import sys; sys.modules['pygls'] = None; from driver.cli import main; sys.exit(main(['lsp']))"
    out = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert out.returncode == 2
    assert "error[USAGE]: npu-opt lsp needs the lsp extra" in out.stderr and "npu-opt[lsp]" in out.stderr
    assert "Traceback" not in out.stderr


def test_the_cli_reference_page_lists_the_lsp_command():
    import importlib.util

    spec = importlib.util.spec_from_file_location("reference_hook", ROOT / "docs" / "_hooks" / "reference.py")
    hook = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(hook)
    page = hook.cli_markdown()
    assert "## `npu-opt lsp`" in page and "--time-limit SECONDS" in page
