"""The block runner of tests/docs/blocks.py can fail: a stale page is caught."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.docs.blocks import PageRunner, _plain, blocks


def _run_page(tmp_path: Path, text: str, monkeypatch: pytest.MonkeyPatch) -> dict:
    import tempfile

    root = Path(tempfile.mkdtemp(dir=tmp_path))
    page = root / "page.md"
    page.write_text(text)
    work = root / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    monkeypatch.syspath_prepend(str(work))
    runner = PageRunner(page, work)
    try:
        for block in blocks(page):
            if block.kind in ("python", "pycon", "console"):
                runner.run(block)
    finally:
        runner.close()
    return runner.counts


def test_a_current_page_passes(tmp_path, monkeypatch):
    counts = _run_page(tmp_path, "```python\nx = 2\n```\n\n```pycon\n>>> x + 1\n3\n```\n\n"
                                 "```console\n$ echo hello\nhello\n```\n", monkeypatch)
    assert counts["python"] == 1 and counts["pycon"] == 1 and counts["console"] == 1


def test_stale_console_output_fails(tmp_path, monkeypatch):
    with pytest.raises(AssertionError, match="differs from the page"):
        _run_page(tmp_path, "```console\n$ echo hello\ngoodbye\n```\n", monkeypatch)


def test_ellipsis_matches_but_not_everything(tmp_path, monkeypatch):
    _run_page(tmp_path, "```console\n$ printf 'a\\nb\\nc\\n'\na\n...\nc\n```\n", monkeypatch)
    with pytest.raises(AssertionError):
        _run_page(tmp_path, "```console\n$ printf 'a\\nb\\n'\na\n...\nc\n```\n", monkeypatch)


def test_stale_pycon_fails(tmp_path, monkeypatch):
    with pytest.raises(AssertionError, match="stale example"):
        _run_page(tmp_path, "```pycon\n>>> 1 + 1\n3\n```\n", monkeypatch)


def test_failing_python_block_fails(tmp_path, monkeypatch):
    with pytest.raises(ZeroDivisionError):
        _run_page(tmp_path, "```python\n1 / 0\n```\n", monkeypatch)


def test_planned_block_that_runs_is_an_error(tmp_path, monkeypatch):
    with pytest.raises(AssertionError, match="drop the marker"):
        _run_page(tmp_path, "```python\n# planned: nothing missing\nx = 1\n```\n", monkeypatch)
    counts = _run_page(tmp_path, "```python\n# planned: not there\nnot_there()\n```\n", monkeypatch)
    assert counts["planned"] == 1


def test_file_blocks_are_importable(tmp_path, monkeypatch):
    counts = _run_page(tmp_path, "```python\n# file: helper_mod.py\nVALUE = 41\n```\n\n"
                                 "```python\nfrom helper_mod import VALUE\nassert VALUE == 41\n```\n", monkeypatch)
    assert counts["file"] == 1 and counts["python"] == 1


def test_indented_blocks_are_found(tmp_path):
    page = tmp_path / "p.md"
    page.write_text('=== "tab"\n\n    ```python\n    x = 1\n\n    y = 2\n    ```\n')
    (block,) = blocks(page)
    assert block.kind == "python" and block.body == "x = 1\n\ny = 2\n"


def test_only_commands_without_shell_syntax_run_in_process():
    """Quoted words are plain (synth's einsums run in this process); a glob, a variable, a
    redirection or an unclosed quote needs a shell."""
    assert _plain('npu-opt synth "out[m,n] = a[m,k] * w[n,k]" --sizes m=512') and _plain("npu-opt x 'a*b; $c'")
    for command in ("npu-opt check *.py", 'npu-opt check "$HOME"', "npu-opt check a > b", 'npu-opt check "a',
                    "npu-opt check a; echo", "npu-opt check `x`", 'npu-opt check "a\\b"'):
        assert not _plain(command), command
