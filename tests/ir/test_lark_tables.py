"""The LALR tables shipped beside npu-opt's grammars (driver/lark_tables.py writes them):
one for every grammar, made from its current text and options, and, loaded, a parser that
parses (and refuses) every text as one built from the grammar does."""

from __future__ import annotations

import marshal
from pathlib import Path
from typing import Any

import lark
import pytest

from driver.lark_tables import GRAMMARS
from ir import lark_cache
from ir.mapping import syntax
from synth import spec as synth
from visa import parser as visa_parser

ROOT = Path(__file__).resolve().parents[2]
VISA_TEXT = (ROOT / "tests" / "visa" / "data" / "gemm_i8_kernel.visa").read_text(encoding="utf-8")

# (grammar, start rule or None, texts): accepted and refused ones alike
CORPUS: dict[Path, list[tuple[str | None, str]]] = {
    syntax.GRAMMAR_FILE: [
        ("mapping_expr", "A / 8 # 256, A % 8"), ("mapping_expr", "[M = 4, N] / (K / 2) #{*} 3"),
        ("mapping_expr", "{x}, 7, B % {y}"), ("mapping_expr", "(A, B),"), ("mapping_expr", "A / / 2"),
        ("mapping_expr", "A # {0 }"), ("index_expr", "A / 2: 3, B: {k}"), ("index_expr", "A: "),
        ("axes_decl", "A = 8, b2 = 16,"), ("axes_decl", "A = x"), ("mapping_expr", "A ? 2"),
    ],
    visa_parser.GRAMMAR_FILE: [(None, VISA_TEXT), (None, VISA_TEXT.replace("}", "", 1)),
                               (None, VISA_TEXT.replace("(", "[", 1))],
    synth.GRAMMAR_FILE: [
        (None, "out[m, n] = a[m, k] * w[n, k]"), (None, "q[m,n] = requant(relu(a[m,k] * w[n,k] + b[n]), 0.5)"),
        (None, "o[] = x[k] * y[k]"), (None, "o[m] = a[m k] * x[k]"), (None, "o[m] = relu(a[m,k], 1e-3 * x[k])"),
    ],
}


def _outcome(parser: lark.Lark, start: str | None, text: str) -> Any:
    """The tree (with every node's and token's position) or the refusal (where, what was expected)."""
    try:
        tree = parser.parse(text, start=start) if start else parser.parse(text)
    except lark.exceptions.UnexpectedInput as e:
        return "refused", type(e).__name__, e.line, e.column, sorted(getattr(e, "expected", None) or getattr(e, "allowed", ()))
    return "tree", _positions(tree)


def _positions(node: Any) -> Any:
    if node is None:  # an optional part left out (maybe_placeholders)
        return None
    if isinstance(node, lark.Token):
        return node.type, str(node), node.line, node.column
    meta = (node.meta.line, node.meta.column, node.meta.end_column) if not node.meta.empty else None
    return node.data, meta, [_positions(c) for c in node.children]


def test_every_grammar_has_tables_listed() -> None:
    shipped = {path for package in ("ir", "visa", "npu_opt", "synth", "tu_ops", "backends", "driver")
               for path in (ROOT / package).rglob("*.lark")}
    assert shipped == {grammar for grammar, _ in GRAMMARS} and set(CORPUS) == shipped


@pytest.mark.parametrize("grammar, options", GRAMMARS, ids=lambda g: getattr(g, "name", ""))
def test_shipped_tables_are_made_for_the_current_grammar(grammar: Path, options: dict[str, Any]) -> None:
    version, key, _digest, _tables = marshal.loads(lark_cache.table_file(grammar).read_bytes())
    assert key == lark_cache.table_key(grammar.read_text(encoding="utf-8"), options, version), (
        f"{lark_cache.table_file(grammar).name} was made for another text or options of {grammar.name}: "
        "run python -m driver.lark_tables")


@pytest.mark.parametrize("grammar, options", GRAMMARS, ids=lambda g: getattr(g, "name", ""))
def test_shipped_tables_parse_as_the_grammar_does(grammar: Path, options: dict[str, Any],
                                                  monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    built = lark.Lark(grammar.read_text(encoding="utf-8"), parser="lalr", **options)
    version, key, _digest, _tables = marshal.loads(lark_cache.table_file(grammar).read_bytes())
    shipped = lark.Lark.load(lark_cache.read_tables(lark_cache.table_file(grammar), key))
    outcomes = [(_outcome(built, start, text), _outcome(shipped, start, text)) for start, text in CORPUS[grammar]]
    assert all(a == b for a, b in outcomes)
    assert {a[0] for a, _ in outcomes} == {"tree", "refused"}  # the corpus holds both kinds
    # and `lalr_parser` takes them, without building, whenever this lark made them
    monkeypatch.setenv("NPU_OPT_CACHE_DIR", str(tmp_path))
    if version == lark.__version__:
        monkeypatch.setattr(lark.Lark, "__init__", lambda *a, **k: pytest.fail("built from the grammar"))
    loaded = lark_cache.lalr_parser(grammar, **options)
    assert [_outcome(loaded, start, text) for start, text in CORPUS[grammar]] == [a for a, _ in outcomes]
