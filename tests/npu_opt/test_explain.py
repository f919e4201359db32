"""`npu-opt explain` pages: one per code of the rule index, each with an example that
really produces its code (docs/reference/diagnostics.md): trace-time codes by tracing a kernel, lowering codes
by compiling one with the npu backend (on the page's target file when it has one),
op-verifier codes by verifying a hand-built op; ICE by forcing a compiler failure."""

from __future__ import annotations

import ast
import io
import re
import tomllib
from importlib.resources import files

import attrs
import pytest

from ir.codes import CODES
from driver import explain
from driver.explain import page, render_page
from tu_ops.base import OpVerifyError

PAGES = dict(explain._load())  # every page, keyed by its canonical code
KERNEL_PAGES = sorted(c for c, p in PAGES.items() if p.example is not None)
OP_PAGES = sorted(c for c, p in PAGES.items() if p.op_example is not None)
LOWER_CODES = sorted(c for c, e in CODES.items() if e.phase == "lower")
VERIFY_CODES = sorted(c for c, e in CODES.items() if e.phase == "verify")
MARK = "# <--"


def example_diagnostics(code: str) -> tuple:
    """Every diagnostic of the page's example, in report order (kernel examples: file =
    example.py; traced, or compiled for lowering codes; op examples: the verifier's)."""
    return explain._run_example(PAGES[code])


def heading(code: str) -> str:
    """How a diagnostic of `code` starts when rendered."""
    return f"{'warning' if code.startswith('W-') else 'error'}[{code}]"


# --- (a) the page set is the rule index ----------------------------------------------------

def test_every_code_has_a_page():
    assert sorted(set(CODES) - set(PAGES)) == []


def test_every_page_is_an_indexed_code():
    assert sorted(set(PAGES) - set(CODES)) == []


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


def test_every_phase_has_its_kind_of_example():
    """Trace codes: a traced kernel; lowering codes: a compiled kernel; op-verifier codes:
    a hand-built op; ICE: no example, a command."""
    for code, info in CODES.items():
        p = PAGES[code]
        if info.phase == "lower":
            assert p.example is not None and p.lowers, code
        elif info.phase == "verify":
            assert p.op_example is not None and p.example is None, code
        elif info.phase == "internal":
            assert p.example is None and p.op_example is None and p.command, code
        else:
            assert p.op_example is None and p.target is None and not p.lowers, code
    assert LOWER_CODES == sorted(["MEM-3", "MEM-4", "FEED-11", "DTYPE-EMU", "W-DTYPE-EMU", "W-FETCH-1", "VIEW-10", "VRF-6"])
    assert CODES["ICE"].phase == "internal"


def test_every_op_verifier_rule_is_indexed():
    """An ICE note names the failing op rule: each of them has a page."""
    from tu_ops import OP_CLASSES

    rules = {fn.rule_code for cls in OP_CLASSES for fn in cls.RULES}
    assert len(rules) == 87  # FEED 16, TRFLD 6, COP 7, PRED/TRED/LFOLD 3 each, VPAIR 4, VEOP 7, VBR 4, CASTOP 2,
    # TRANSPOSE 7, CMT 6, DMAOP 6, GATHEROP 2, SCATTEROP 1, SHUFFLEOP 1, REDISTOP 1, VRFLD 2, INTEROP 2, SPMOP 1,
    # RUNTIME 1, RFRESHAPE 1, LOOP 1
    assert rules <= set(PAGES)
    assert set(VERIFY_CODES) == (rules - {"FEED-11"}) | {"LOOP-6"}  # LOOP-6: a rule of a whole loop body


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


@pytest.mark.parametrize("code", LOWER_CODES)
def test_lowering_codes_are_found_by_compiling_not_by_tracing(code):
    """`npu-opt check` (trace only) accepts the example; the npu backend reports the code."""
    p = page(code)
    assert explain._trace_source(p.example) == ()
    first = example_diagnostics(code)[0]
    assert first.code == code and first.severity == ("warning" if code.startswith("W-") else "error")


@pytest.mark.parametrize("code", [c for c in KERNEL_PAGES if not PAGES[c].shadowed_by])
def test_example_diagnostic_points_at_the_marked_line(code):
    p = page(code)
    marked = [i for i, line in enumerate(p.example.splitlines(), start=1) if MARK in line]
    first = example_diagnostics(code)[0]
    assert first.code == code, f"{code}: {first.code} is reported first"
    assert first.line in marked, f"{code}: diagnostic at line {first.line}, `{MARK}` at {marked}"


@pytest.mark.parametrize("code", KERNEL_PAGES)
def test_example_is_a_self_contained_kernel_module(code):
    source = page(code).example
    assert source.startswith("from npu_opt import *\n")
    assert "axes(" in source
    assert len(re.findall(r"^@device\(chip=\d+(, pe=\d)?\)", source, flags=re.M)) == 1
    assert MARK in source


# --- (b') op-verifier pages: a hand-built op refused by exactly its rule ----------------------

def _run_snippet(source: str, namespace: dict | None = None) -> None:
    namespace = {} if namespace is None else namespace
    namespace["__name__"] = "op_example"
    exec(compile(source, explain.EXAMPLE_FILE, "exec"), namespace)  # noqa: S102


@pytest.mark.parametrize("code", OP_PAGES)
def test_op_example_raises_its_rule(code):
    source = page(code).op_example
    namespace: dict = {}
    with pytest.raises(OpVerifyError) as info:
        _run_snippet(source, namespace)
    (verified,) = re.findall(r"^(\w+)\.verify\(rngd\(\)\)$", source, flags=re.M)
    assert info.value.op is namespace[verified], f"{code}: the error blames another op than `{verified}`"
    assert info.value.code == code, f"{code}: refused by {info.value.code}: {info.value.message}"
    (d,) = example_diagnostics(code)
    assert (d.code, d.message) == (code, info.value.message)
    assert d.op is not None and any(n.startswith("in op `") for n in d.notes)


@pytest.mark.parametrize("code", OP_PAGES)
def test_op_example_is_a_self_contained_snippet(code):
    source = page(code).op_example
    tree = ast.parse(source)
    roots = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            roots |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            roots.add((node.module or "").split(".")[0])
    assert roots <= {"ir", "tu_ops"}, f"{code} imports {sorted(roots)}"
    assert re.search(r"^\w+\.verify\(rngd\(\)\)$", source, flags=re.M), f"{code}: no `<op>.verify(rngd())`"
    assert len([line for line in source.splitlines() if MARK in line]) == 1


# --- (b'') target files, compat mode and internal compiler errors ---------------------------

@pytest.mark.parametrize("code", sorted(c for c, p in PAGES.items() if p.target is not None))
def test_page_targets_are_valid_target_files(code):
    from tu_ops import parse_target_data

    target = parse_target_data(tomllib.loads(page(code).target))
    assert target.name != "rngd"
    text = render_page(page(code))
    assert f"Target description ({explain.TARGET_FILE})" in text
    assert f"npu-opt compile {explain.EXAMPLE_FILE} --target {explain.TARGET_FILE}" in text


def test_dtype_emu_pages_need_their_target():
    for code in ("DTYPE-EMU", "W-DTYPE-EMU"):
        p = page(code)
        assert p.target is not None and p.compat is True
        assert explain._compile_source(p.example) == (), f"{code}: rngd has every pair natively"


def test_w_dtype_emu_example_compiles_with_warnings_only():
    diagnostics = example_diagnostics("W-DTYPE-EMU")
    assert [d.code for d in diagnostics] == ["W-DTYPE-EMU", "W-DTYPE-EMU"]


def test_compat_false_refuses_the_emulated_path():
    p = attrs.evolve(page("W-DTYPE-EMU"), compat=False)
    (d,) = explain._run_example(p)
    assert d.code == "DTYPE-EMU" and "compat mode is off" in d.message
    assert "--no-compat)" in render_page(p)


def test_a_page_with_compat_off_is_read_from_toml():
    table = tomllib.loads('[X-1]\ntitle = "t"\nexample = "e"\ntarget = "schema = 1"\ncompat = false\n')["X-1"]
    p = explain._page_from("X-1", "x", table)
    assert (p.target, p.compat, p.lowers) == ("schema = 1", False, True)
    with pytest.raises(ValueError):
        explain._page_from("X-1", "x", {**table, "op_example": "pass"})
    with pytest.raises(ValueError):
        explain._page_from("X-1", "x", {**table, "compat": "no"})


def _tiny_kernel():
    source = (
        "from npu_opt import *\n\naxes(A=8, B=32)\n\n"
        "Chip = m(\"1\")\nCluster = m(\"1 # 2\")\nSlice = m(\"1 # 256\")\n\n"
        "@device(chip=1)\n"
        "def copy(ctx: Context, x: HbmTensor[i8, Chip, m(\"A, B\")]) -> HbmTensor[i8, Chip, m(\"A, B\")]:\n"
        "    x = x.to_dm(ctx.tdma, DmTensor[i8, Chip, Cluster, Slice, m(\"A, B\")])\n"
        "    y = ctx.main.begin(x.view()).fetch(m(\"A\"), m(\"B\")).collect(m(\"A\"), m(\"B\"))"
        ".commit_trim(m(\"B\")).commit()\n"
        "    return y.to_hbm(ctx.tdma)\n")
    return source


def test_forced_ice_is_reported_as_ice(monkeypatch):
    import backends.npu
    from npu_opt.compile_api import compile_kernel, npu_opt_version

    def broken(*args, **kwargs):
        raise RuntimeError("forced lowering failure")

    with explain._example_module(_tiny_kernel()) as (_, kernels):
        (kernel,) = kernels
        assert compile_kernel(kernel).status == "ok"
        monkeypatch.setattr(backends.npu, "lower_kernel", broken)
        outcome = compile_kernel(kernel)
    assert (outcome.status, outcome.code) == ("ice", "ICE")
    (d,) = outcome.diagnostics
    assert d.code == "ICE" and d.severity == "error"
    assert any("RuntimeError: forced lowering failure" in n for n in d.notes)
    assert d.help and "report" in d.help and npu_opt_version() in d.help
    assert page(d.code) is not None


def test_an_ice_names_a_rule_that_has_a_page(monkeypatch):
    import tu_ops.lower.build
    from npu_opt.compile_api import compile_kernel

    real = tu_ops.lower.build.lower_feed

    def bad_feed(*args, **kwargs):
        feed = real(*args, **kwargs)
        return attrs.evolve(feed, beats=feed.beats + 1)

    monkeypatch.setattr(tu_ops.lower.build, "lower_feed", bad_feed)
    with explain._example_module(_tiny_kernel()) as (_, kernels):
        outcome = compile_kernel(kernels[0])
    (d,) = outcome.diagnostics
    assert (outcome.status, d.code) == ("ice", "ICE")
    rules = [n.split(": ", 1)[1] for n in d.notes if n.startswith("failing rule: ")]
    assert rules == ["FEED-3"] and page(rules[0]).op_example is not None


@pytest.mark.parametrize("field, bad, rule", [
    ("beats=8", "beats=4", "FEED-3"), ("valid_bytes=32", "valid_bytes=12", "CMT-1"),
    ("packet_bytes=256, entries=[256:1:1]", "packet_bytes=4, entries=[64:4:4, 4:1:1]", "DMAOP-4"),
])
def test_a_damaged_artifact_names_a_rule_that_has_a_page(field, bad, rule):
    """`npu-opt visa --verify` reports a verifier failure under its rule ID."""
    from npu_opt.compile_api import compile_kernel
    from visa.artifact import VisaTextError
    from visa.verify import verify_text

    with explain._example_module(_tiny_kernel()) as (_, kernels):
        text = compile_kernel(kernels[0]).text
    verify_text(text)
    assert field in text
    with pytest.raises(VisaTextError) as info:
        verify_text(text.replace(field, bad, 1))
    assert (info.value.rule, info.value.code) == (rule, rule)
    assert page(rule).op_example is not None


def test_ice_page_has_no_example_to_run():
    p = page("ICE")
    assert p.example is None and p.op_example is None and p.command and p.note
    assert example_diagnostics("ICE") == ()
    text = render_page(p)
    assert "Example invocation" in text and "Output" not in text and "exit status 3" in text


# --- (c) every page is complete ------------------------------------------------------------

@pytest.mark.parametrize("code", sorted(PAGES))
def test_page_fields_are_filled(code):
    p = page(code)
    assert p.title and "\n" not in p.title
    assert p.rule and p.when
    assert p.fixes and all(f.strip() for f in p.fixes)
    assert p.example or p.op_example or p.command, f"{code} has no example and no command"
    if p.shadowed_by:
        assert p.shadowed_by in CODES and p.shadowed_by != code
        assert p.example is not None


def test_page_titles_match_the_index():
    """Besides the MAP- pages (whose index titles are generated), a page's title is its index title."""
    assert [c for c, p in PAGES.items() if not c.startswith("MAP-") and p.title != CODES[c].title] == []


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
        assert heading(p.expected_code) in text
        assert f"--> {explain.EXAMPLE_FILE}:" in text
    if p.op_example:
        assert "Output (the op verifier)" in text
        assert heading(code) in text and "in op `" in text
    assert "could not be" not in text and "reports nothing" not in text


@pytest.mark.parametrize("code", ["TYPE-1", "MEM-3", "DTYPE-EMU", "FEED-1"])
def test_render_page_without_output_does_not_run_the_example(monkeypatch, code):
    for runner in ("_trace_source", "_compile_source", "_verify_snippet"):
        monkeypatch.setattr(explain, runner, lambda *args, **kwargs: pytest.fail("ran the example"))
    text = render_page(page(code), with_example_output=False)
    assert code in text and "error[" not in text


def test_a_broken_example_does_not_break_the_page(monkeypatch):
    def broken(*args, **kwargs):
        raise RuntimeError("no")

    monkeypatch.setattr(explain, "_compile_source", broken)
    monkeypatch.setattr(explain, "_verify_snippet", broken)
    assert "(the example could not be compiled: RuntimeError: no)" in render_page(page("MEM-4"))
    assert "(the example could not be run: RuntimeError: no)" in render_page(page("COP-1"))


def test_rendered_output_quotes_the_faulty_source_line():
    text = render_page(page("TYPE-1"))
    assert re.search(r"\d+ \|\s+\.commit\(\)", text)
    assert "^^^^^^" in text


# --- lookup and the command ---------------------------------------------------------------

@pytest.mark.parametrize("spelling, code", [
    ("TYPE-1", "TYPE-1"), ("type-1", "TYPE-1"), (" fetch-10 ", "FETCH-10"),
    ("MAP-syntax", "MAP-syntax"), ("map-SYNTAX", "MAP-syntax"), ("Map-Unknown_Axis", "MAP-unknown_axis"),
    ("usage", "USAGE"), ("map-zero-size", "MAP-zero_size"), ("feed-11", "FEED-11"), ("Cop-7", "COP-7"),
    ("w-dtype-emu", "W-DTYPE-EMU"), ("dtype-emu", "DTYPE-EMU"), ("ice", "ICE"), ("dmaop-5", "DMAOP-5"),
])
def test_page_lookup_is_case_insensitive(spelling, code):
    assert page(spelling).code == code


@pytest.mark.parametrize("unknown", ["TYPE-99", "FEED-99", "COP-8", "LOWER-3", "W-FETCH-2", "nonsense",
                                     "MAP-overshoot"])
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


@pytest.mark.parametrize("code", ["cmt-5", "mem-3", "ice"])
def test_explain_command_prints_new_phase_pages(code):
    out, err = io.StringIO(), io.StringIO()
    assert explain.explain_command(code, out, err) == 0
    want = code.upper()
    assert out.getvalue().startswith(f"{want}: ") and err.getvalue() == ""
    assert ("\nOutput (" in out.getvalue()) == (want != "ICE")
    if want != "ICE":
        assert f"error[{want}]" in out.getvalue()


def test_explain_command_refuses_an_unknown_code():
    out, err = io.StringIO(), io.StringIO()
    assert explain.explain_command("COLECT-2", out, err) == 2
    assert out.getvalue() == ""
    assert "unknown code" in err.getvalue() and "COLLECT-2" in err.getvalue()
    err = io.StringIO()
    assert explain.explain_command("DMAOP-9", io.StringIO(), err) == 2
    assert "DMAOP-" in err.getvalue()


def test_wrapped_prose_never_splits_a_code_across_lines():
    """textwrap breaks at hyphens by default: VPAIR-4's page printed `PAIR-` at the end of a
    line and `REDUCE-1` at the start of the next (issue 58, found once the guide held the text)."""
    split = re.compile(r"\b[A-Z][A-Z0-9]*-\n\s*[A-Z0-9][A-Z0-9-]*\b")
    pages = {code: explain.render_page(page(code), with_example_output=False) for code in CODES if page(code)}
    assert [code for code, text in pages.items() if split.search(text)] == []
