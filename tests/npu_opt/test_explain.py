"""`npu-opt explain` pages: one per code of the rule index, each with an example that
really produces its code when traced (api.md 5)."""

from __future__ import annotations

import io
import re
import tomllib
from importlib.resources import files

import pytest

from ir.codes import CODES
from npu_opt import explain
from npu_opt.explain import all_codes, example_diagnostics, page, render_page

PAGES = explain.all_pages()
KERNEL_PAGES = sorted(c for c, p in PAGES.items() if p.example is not None)
MARK = "# <--"


# --- (a) the page set is the rule index ----------------------------------------------------

def test_every_code_has_a_page():
    assert sorted(set(CODES) - set(PAGES)) == []


def test_every_page_is_an_indexed_code():
    assert sorted(set(PAGES) - set(CODES)) == []


def test_all_codes_follows_the_index_order():
    assert all_codes() == tuple(c for c in CODES if c in PAGES)


def test_page_files_are_plain_toml_tables():
    folder = files("npu_opt").joinpath("pages")
    names = sorted(e.name for e in folder.iterdir() if e.name.endswith(".toml"))
    assert names, "no page files shipped"
    seen: set[str] = set()
    for name in names:
        data = tomllib.loads(folder.joinpath(name).read_text(encoding="utf-8"))
        for code, table in data.items():
            assert isinstance(table, dict), f"{name}: {code} is not a table"
            assert code not in seen, f"{code} defined twice"
            seen.add(code)


# --- (b) every example produces its code first -----------------------------------------------

@pytest.mark.parametrize("code", KERNEL_PAGES)
def test_example_first_diagnostic_is_the_code(code):
    p = page(code)
    diagnostics = example_diagnostics(code)
    assert diagnostics, f"{code}: the example traced without any diagnostic"
    first = diagnostics[0]
    assert first.code == p.expected_code, (
        f"{code}: expected {p.expected_code} first, got {[d.code for d in diagnostics]}\n{first.render()}")
    assert first.file == explain.EXAMPLE_FILE


@pytest.mark.parametrize("code", [c for c in KERNEL_PAGES if not PAGES[c].shadowed_by])
def test_example_diagnostic_points_at_the_marked_line(code):
    p = page(code)
    marked = [i for i, line in enumerate(p.example.splitlines(), start=1) if MARK in line]
    first = example_diagnostics(code)[0]
    if first.code != code:
        pytest.skip(f"{code} reports {first.code} first (see the test above)")
    assert first.line in marked, f"{code}: diagnostic at line {first.line}, `{MARK}` at {marked}"


@pytest.mark.parametrize("code", KERNEL_PAGES)
def test_example_is_a_self_contained_kernel_module(code):
    source = page(code).example
    assert source.startswith("from npu_opt import *\n")
    assert "axes(" in source
    assert len(re.findall(r"^@device\(chip=\d+\)", source, flags=re.M)) == 1
    assert MARK in source


# --- (c) every page is complete ------------------------------------------------------------

@pytest.mark.parametrize("code", sorted(PAGES))
def test_page_fields_are_filled(code):
    p = page(code)
    assert p.title and "\n" not in p.title
    assert p.rule and p.when
    assert p.fixes and all(f.strip() for f in p.fixes)
    assert p.example or p.command, f"{code} has neither an example kernel nor a command"
    if p.shadowed_by:
        assert p.shadowed_by in CODES and p.shadowed_by != code
        assert p.example is not None


def test_map_pages_cover_every_category_but_overshoot():
    from ir.codes import MAPPING_CATEGORIES

    want = {f"MAP-{c}" for c in MAPPING_CATEGORIES if c != "overshoot"}
    assert want == {c for c in PAGES if c.startswith("MAP-")}


# --- (d) rendering ------------------------------------------------------------------------

@pytest.mark.parametrize("code", sorted(PAGES))
def test_render_page_shows_the_real_diagnostic(code):
    p = page(code)
    text = render_page(p)
    assert text.startswith(f"{code}: {p.title}")
    assert p.rule.split()[0] in text and p.fixes[0].split()[0] in text
    if p.example:
        assert f"error[{p.expected_code}]" in text
        assert f"--> {explain.EXAMPLE_FILE}:" in text


def test_render_page_without_output_does_not_trace(monkeypatch):
    monkeypatch.setattr(explain, "_trace_source", lambda source: pytest.fail("traced"))
    text = render_page(page("TYPE-1"), with_example_output=False)
    assert "TYPE-1" in text and "error[" not in text


def test_rendered_output_quotes_the_faulty_source_line():
    text = render_page(page("TYPE-1"))
    assert re.search(r"\d+ \|\s+\.commit\(\)", text)
    assert "^^^^^^" in text


# --- lookup and the command ---------------------------------------------------------------

@pytest.mark.parametrize("spelling, code", [
    ("TYPE-1", "TYPE-1"), ("type-1", "TYPE-1"), (" fetch-10 ", "FETCH-10"),
    ("MAP-syntax", "MAP-syntax"), ("map-SYNTAX", "MAP-syntax"), ("Map-Unknown_Axis", "MAP-unknown_axis"),
    ("usage", "USAGE"), ("map-zero-size", "MAP-zero_size"),
])
def test_page_lookup_is_case_insensitive(spelling, code):
    assert page(spelling).code == code


@pytest.mark.parametrize("unknown", ["TYPE-99", "FEED-1", "nonsense", "MAP-overshoot"])
def test_unknown_code_has_no_page(unknown):
    assert page(unknown) is None


def test_close_matches_suggest_known_codes():
    assert "FETCH-1" in explain.close_matches("FETC-1")
    assert "MAP-unknown_axis" in explain.close_matches("map-unknwn_axis")


def test_explain_command_prints_the_page():
    out, err = io.StringIO(), io.StringIO()
    assert explain.explain_command("collect-2", out, err) == 0
    assert out.getvalue().startswith("COLLECT-2: ") and "error[COLLECT-2]" in out.getvalue()
    assert err.getvalue() == ""


def test_explain_command_refuses_an_unknown_code():
    out, err = io.StringIO(), io.StringIO()
    assert explain.explain_command("COLECT-2", out, err) == 2
    assert out.getvalue() == ""
    assert "unknown code" in err.getvalue() and "COLLECT-2" in err.getvalue()


def test_example_diagnostics_of_unknown_code_raises():
    with pytest.raises(KeyError):
        example_diagnostics("NOPE-1")
