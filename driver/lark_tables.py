"""Write the LALR tables shipped beside npu-opt's grammars: `python -m driver.lark_tables`.

Run it after changing a grammar or its options (tests/ir/test_lark_tables.py fails until
then) or after moving to another lark version (the tables of the old one are ignored, so a
first parse builds again). The tables are lark's own serialized parsers with their SHA-256 (ir/lark_cache.py).
lark's numbering of states and rules differs from one run to the next, so two runs write
different bytes for the same parser: the test compares what the parsers parse.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from ir.lark_cache import table_bytes, table_file
from ir.mapping import syntax
from synth import spec as synth
from visa import parser as visa_parser

__all__ = ["GRAMMARS", "main"]

# Every grammar npu-opt parses with, and the options its parser is built with.
GRAMMARS: tuple[tuple[Path, dict[str, Any]], ...] = (
    (syntax.GRAMMAR_FILE, syntax.OPTIONS),
    (visa_parser.GRAMMAR_FILE, visa_parser.OPTIONS),
    (synth.GRAMMAR_FILE, synth.OPTIONS),
)


def main() -> int:
    for grammar, options in GRAMMARS:
        table = table_file(grammar)
        table.write_bytes(table_bytes(grammar, **options))
        print(f"wrote {table} ({table.stat().st_size} bytes)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
