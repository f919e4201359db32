"""`npu-opt lsp` hovers, inlay hints, completion, signature help and quick fixes, end to end."""

from __future__ import annotations

import pytest

from tests.lsp import kernels as K
from tests.lsp.helpers import change, hover_text, open_doc, position, settle
from tests.optional_deps import Deferred

lsp = Deferred("lsprotocol.types")  # imported by the worker that runs these tests, not at collection


def _doc(uri: str) -> lsp.TextDocumentIdentifier:
    return lsp.TextDocumentIdentifier(uri)


def test_hover_on_a_stage_call_shows_the_stream_type_after_it(client, folder):
    uri = open_doc(client, folder / "hover_stage.py", K.WHOLE_FLIT)
    at = position(K.WHOLE_FLIT, ".fetch(", after=2)
    text = hover_text(client, uri, at.line, at.character)
    assert "`Stream[i8; 1, 1 # 2, 1 # 256; N / 32, N % 32]`" in text
    assert "| Time | `N / 32` | 64 |" in text and "| Packet | `N % 32` | 32 |" in text
    assert "packet 32 x i8 = 32 bytes = 1 flit of 32 bytes" in text


def test_hover_on_a_mapping_shows_its_parse_axes_and_explain_line(client, folder):
    uri = open_doc(client, folder / "hover_map.py", K.WHOLE_FLIT)
    at = position(K.WHOLE_FLIT, 'm("N / 32")', after=4)
    text = hover_text(client, uri, at.line, at.character)
    assert "size 64; axes: N = 2048" in text
    assert "explain-mapping: N / 32: size 64, axes N" in text


def test_hover_on_a_tensor_annotation_shows_bytes_and_the_host_shape(client, folder):
    uri = open_doc(client, folder / "hover_tensor.py", K.WHOLE_FLIT)
    at = position(K.WHOLE_FLIT, "HbmTensor[", after=2)
    text = hover_text(client, uri, at.line, at.character)
    assert "host array for `run`: shape (2048,), dtype i8" in text
    at = position(K.WHOLE_FLIT, "DmTensor[", after=2)
    text = hover_text(client, uri, at.line, at.character)
    assert "element 2048 x i8 = 2048 bytes per slice" in text


def test_hover_on_a_rule_id_in_a_comment_shows_its_title(client, folder):
    uri = open_doc(client, folder / "hover_rule.py", K.HALF_FLIT)
    at = position(K.HALF_FLIT, "COLLECT-2", after=3)
    text = hover_text(client, uri, at.line, at.character)
    from driver.explain import page

    assert text.startswith(f"**COLLECT-2**: {page('COLLECT-2').title}")


def test_inlay_hints_end_each_chain_line_and_a_setting_turns_them_off(client, folder):
    uri = open_doc(client, folder / "hints.py", K.WHOLE_FLIT)
    settle(client, uri)
    lines = K.WHOLE_FLIT.split("\n")
    whole = lsp.Range(lsp.Position(0, 0), lsp.Position(len(lines), 0))
    hints = client.text_document_inlay_hint(lsp.InlayHintParams(_doc(uri), whole))
    by_line = {h.position.line: h for h in hints}
    fetch = position(K.WHOLE_FLIT, ".fetch(").line
    assert by_line[fetch].label == ": Stream[i8; 1, 1 # 2, 1 # 256; N / 32, N % 32]"
    assert by_line[fetch].position.character == len(lines[fetch].rstrip())
    collect = position(K.WHOLE_FLIT, ".collect(").line
    assert by_line[collect].position.character == lines[collect].index("  # ok")  # before the comment
    client.workspace_did_change_configuration(lsp.DidChangeConfigurationParams({"npuOpt": {"inlayHints": False}}))
    try:
        assert not client.text_document_inlay_hint(lsp.InlayHintParams(_doc(uri), whole))
    finally:
        client.workspace_did_change_configuration(lsp.DidChangeConfigurationParams({"npuOpt": {"inlayHints": True}}))


def test_completion_offers_the_stream_methods_with_their_signatures(client, folder):
    uri = open_doc(client, folder / "complete.py", K.WHOLE_FLIT)
    at = position(K.WHOLE_FLIT, ".collect(", after=1)  # after the dot that follows `.fetch(...)`
    found = client.text_document_completion(lsp.CompletionParams(_doc(uri), at))
    items = {i.label: i.detail for i in found.items}
    assert items["collect"] == "collect(time, packet)"
    assert "commit" not in items  # a FetchStream does not offer it (TYPE-1)


def test_completion_still_works_while_the_line_is_being_typed(client, folder):
    uri = open_doc(client, folder / "typing.py", K.WHOLE_FLIT)
    settle(client, uri)
    typed = K.WHOLE_FLIT.replace('.collect(m("N / 32"), m("N % 32"))  # ok: one flit is 32 bytes', '.')  # mid-edit
    change(client, uri, typed, 2)
    at = position(typed, ".\n", after=1)
    found = client.text_document_completion(lsp.CompletionParams(_doc(uri), at))
    assert "collect" in {i.label for i in found.items}


def test_completion_offers_enum_variants(client, folder):
    uri = open_doc(client, folder / "enums.py", K.ENUMS)
    for name, variant in (("LaneMode.", "INTERLEAVED"), ("FpBinaryOp.", "ADD_F")):
        at = position(K.ENUMS, name, after=len(name))
        found = client.text_document_completion(lsp.CompletionParams(_doc(uri), at))
        assert variant in {i.label for i in found.items}


def test_signature_help_inside_a_stage_call(client, folder):
    uri = open_doc(client, folder / "signature.py", K.WHOLE_FLIT)
    at = position(K.WHOLE_FLIT, '.collect(m("N / 32"), ', after=len('.collect(m("N / 32"), '))
    found = client.text_document_signature_help(lsp.SignatureHelpParams(_doc(uri), at))
    assert found.signatures[0].label == "collect(time, packet)"
    assert found.active_parameter == 1


def _apply(text: str, edit: lsp.TextEdit) -> str:
    lines = text.split("\n")
    start = sum(len(x) + 1 for x in lines[:edit.range.start.line]) + edit.range.start.character
    end = sum(len(x) + 1 for x in lines[:edit.range.end.line]) + edit.range.end.character
    return text[:start] + edit.new_text + text[end:]


def _fix(client, uri: str, text: str, code: str) -> str:
    diagnostics = [d for d in settle(client, uri) if d.code == code]
    assert diagnostics
    actions = client.text_document_code_action(lsp.CodeActionParams(
        _doc(uri), diagnostics[0].range, lsp.CodeActionContext(diagnostics=diagnostics)))
    assert len(actions) == 1 and actions[0].kind == lsp.CodeActionKind.QuickFix
    (edit,) = actions[0].edit.changes[uri]
    return _apply(text, edit)


def test_the_collect_2_quick_fix_applies_its_help(client, folder):
    uri = open_doc(client, folder / "fix_collect.py", K.HALF_FLIT)
    fixed = _fix(client, uri, K.HALF_FLIT, "COLLECT-2")
    assert '.collect(m("N / 16"), m("N % 16 # 32"))  # COLLECT-2' in fixed
    change(client, uri, fixed, 2)
    assert [d.code for d in settle(client, uri)] == []


def test_the_param_1_quick_fix_adds_mut(client, folder):
    uri = open_doc(client, folder / "fix_mut.py", K.WRITES_INPUT)
    fixed = _fix(client, uri, K.WRITES_INPUT, "PARAM-1")
    assert 'b: Mut[HbmTensor[i8, Chip, m("N")]]) -> None:' in fixed
    change(client, uri, fixed, 2)
    assert settle(client, uri) == []
