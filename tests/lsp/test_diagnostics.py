"""`npu-opt lsp` diagnostics end to end: the same diagnostics as `npu-opt check`, at the
same positions, for open, change and save; load errors; unsaved buffers; two files."""

from __future__ import annotations

import pytest

from tests.lsp import kernels as K
from tests.lsp.helpers import change, check_json, hover_text, open_doc, position, settle
from tests.optional_deps import Deferred

lsp = Deferred("lsprotocol.types")  # imported by the worker that runs these tests, not at collection


def test_a_refusal_is_the_diagnostic_check_gives_at_the_same_place(client, folder):
    path = folder / "half.py"
    path.write_text(K.HALF_FLIT)
    uri = open_doc(client, path, K.HALF_FLIT)
    diagnostics = settle(client, uri)
    assert [d.code for d in diagnostics] == ["COLLECT-2"]
    d = diagnostics[0]
    cli = check_json(path)[0]
    assert (cli["code"], cli["message"]) == (d.code, d.message)
    assert (d.range.start.line + 1, d.range.start.character + 1) == (cli["line"], cli["col"])
    assert d.range.end.character - d.range.start.character == len("collect")
    assert d.severity == lsp.DiagnosticSeverity.Error and d.source == "npu-opt"
    assert d.code_description.href == "https://guide.example/npu-opt/reference/diagnostics/#COLLECT-2"
    helps = [r.message for r in d.related_information if r.message.startswith("help: ")]
    assert helps == [f"help: {cli['help']}"]
    assert any(r.message == "note: packet is 16 x i8 = 16 bytes" for r in d.related_information)


def test_change_rechecks_the_unsaved_buffer_and_save_too(client, folder):
    path = folder / "edited.py"
    path.write_text(K.WHOLE_FLIT)  # the disk holds a clean kernel
    uri = open_doc(client, path, K.WHOLE_FLIT)
    assert settle(client, uri) == []
    change(client, uri, K.HALF_FLIT, 2)  # the buffer, not saved, has the fault
    assert [d.code for d in settle(client, uri)] == ["COLLECT-2"]
    assert check_json(path) == []  # the disk still does not
    change(client, uri, K.WHOLE_FLIT, 3)
    client.text_document_did_save(lsp.DidSaveTextDocumentParams(lsp.TextDocumentIdentifier(uri)))
    assert settle(client, uri) == []


def test_a_buffer_checks_clean_while_the_disk_is_broken(client, folder):
    path = folder / "disk_broken.py"
    path.write_text(K.SYNTAX_ERROR)
    uri = open_doc(client, path, K.WHOLE_FLIT)
    assert settle(client, uri) == []


@pytest.mark.parametrize("source, line, words", [
    (K.SYNTAX_ERROR, 3, "syntax error"),
    (K.RAISES, 5, "KeyError"),
    (K.EXITS, 4, "exit"),
])
def test_a_file_that_does_not_load_is_one_diagnostic_at_its_line(client, folder, source, line, words):
    path = folder / f"load_{line}.py"
    path.write_text(source)
    uri = open_doc(client, path, source)
    diagnostics = settle(client, uri)
    assert len(diagnostics) == 1, diagnostics
    assert diagnostics[0].range.start.line + 1 == line and words in diagnostics[0].message
    assert diagnostics[0].code == "USAGE"


def test_a_kernel_that_loops_is_stopped_and_the_server_goes_on(client, folder):
    uri = open_doc(client, folder / "spin.py", K.HANGS)
    diagnostics = settle(client, uri)
    assert len(diagnostics) == 1 and "time limit" in diagnostics[0].message
    assert diagnostics[0].range.start.line + 1 in (7, 8)  # inside the loop of the kernel body
    other = open_doc(client, folder / "after_spin.py", K.HALF_FLIT)
    assert [d.code for d in settle(client, other)] == ["COLLECT-2"]


def test_a_file_that_sleeps_while_importing_is_stopped(client, folder):
    uri = open_doc(client, folder / "sleepy.py", K.SLEEPS_AT_IMPORT)
    diagnostics = settle(client, uri)
    assert len(diagnostics) == 1 and "time limit" in diagnostics[0].message
    assert diagnostics[0].range.start.line + 1 == 4


def test_a_process_exit_past_the_guard_restarts_the_worker(client, folder):
    uri = open_doc(client, folder / "leave.py", K.EXITS_HARD)
    diagnostics = settle(client, uri)
    assert len(diagnostics) == 1 and "ended with status 5" in diagnostics[0].message
    assert diagnostics[0].range.start.line + 1 == 6  # the kernel that was being traced (its `@device` line)
    other = open_doc(client, folder / "after_leave.py", K.HALF_FLIT)
    assert [d.code for d in settle(client, other)] == ["COLLECT-2"]


def test_sys_exit_in_a_kernel_is_its_usage_error(client, folder):
    uri = open_doc(client, folder / "sysexit.py", K.SYS_EXIT_IN_KERNEL)
    diagnostics = settle(client, uri)
    assert [(d.code, d.range.start.line + 1) for d in diagnostics] == [("USAGE", 8)]
    assert "SystemExit" in diagnostics[0].message


def test_printing_is_a_warning_and_does_not_break_the_channel(client, folder):
    uri = open_doc(client, folder / "prints.py", K.PRINTS)
    diagnostics = settle(client, uri)
    assert [(d.severity, d.range.start.line + 1) for d in diagnostics] == \
        [(lsp.DiagnosticSeverity.Warning, K.PRINTS.count("\n"))]
    assert "hello from the kernel file" in diagnostics[0].message


def test_two_files_declaring_different_axes_each_see_their_own(client, folder):
    small, large = K.with_axes(1024), K.with_axes(4096)
    uri_small = open_doc(client, folder / "small.py", small)
    uri_large = open_doc(client, folder / "large.py", large)
    assert settle(client, uri_small) == [] and settle(client, uri_large) == []
    at = position(small, 'm("N")', 0, 3)
    assert "size 1024" in hover_text(client, uri_small, at.line, at.character)
    assert "size 4096" in hover_text(client, uri_large, at.line, at.character)


def test_the_server_keeps_working_after_200_edits(client, folder):
    uri = open_doc(client, folder / "many.py", K.WHOLE_FLIT)
    for version in range(2, 202):
        change(client, uri, K.HALF_FLIT if version % 2 else K.WHOLE_FLIT, version)
    assert [d.code for d in settle(client, uri)] == ["COLLECT-2"]  # version 201 has the fault
    change(client, uri, K.WHOLE_FLIT, 202)
    assert settle(client, uri) == []


def test_a_tune_space_is_checked_at_its_default_point(client, folder):
    uri = open_doc(client, folder / "factory.py", K.FACTORY)
    diagnostics = settle(client, uri)
    assert [(d.code, d.range.start.line + 1) for d in diagnostics] == [("COLLECT-2", 14)]


def test_a_file_over_the_memory_limit_is_its_diagnostic(client, folder):
    uri = open_doc(client, folder / "greedy.py", K.GREEDY)
    diagnostics = settle(client, uri)
    assert [(d.code, d.range.start.line + 1) for d in diagnostics] == [("USAGE", 3)]
    assert "MemoryError" in diagnostics[0].message
    other = open_doc(client, folder / "after_greedy.py", K.HALF_FLIT)
    assert [d.code for d in settle(client, other)] == ["COLLECT-2"]


def test_closing_a_document_clears_its_diagnostics(client, folder):
    uri = open_doc(client, folder / "closed.py", K.HALF_FLIT)
    assert [d.code for d in settle(client, uri)] == ["COLLECT-2"]
    client.text_document_did_close(lsp.DidCloseTextDocumentParams(lsp.TextDocumentIdentifier(uri)))
    other = open_doc(client, folder / "still_open.py", K.WHOLE_FLIT)
    settle(client, other)  # the server has handled the close by now
    assert list(client.diagnostics[uri]) == []


def test_a_loop_the_alarm_cannot_interrupt_is_killed_and_the_server_goes_on(client, folder):
    uri = open_doc(client, folder / "c_loop.py", K.LOOPS_IN_C)
    diagnostics = settle(client, uri)
    assert len(diagnostics) == 1 and "outlived its time limit" in diagnostics[0].message
    assert "while importing the file" in diagnostics[0].message
    other = open_doc(client, folder / "after_c_loop.py", K.HALF_FLIT)
    assert [d.code for d in settle(client, other)] == ["COLLECT-2"]
