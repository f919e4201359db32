"""Lower bounds of the makespan model, and the shipped rates file."""

from __future__ import annotations

import re
from importlib import resources

import pytest

from tests.visa.schedule.handmade import RATES, artifact, dma_in, dma_out, program
from tu_ops.target import TargetSchemaError
from visa.schedule import builtin_rates, parse_rates, schedule_artifact


def bounds(s):
    return {b.name: b.cycles for b in s.bounds}


def test_a_pure_chain_is_bound_by_its_chain():
    s = schedule_artifact(artifact(dma_in(1), program(0, 2, 1), dma_out(4, 3), result=4), rates=RATES)
    b = bounds(s)
    assert b["chain"] == 356 + 16 + 104 == s.makespan
    assert b["context"] == 356 + 104          # tdma
    # HBM: 32768 + 512 bytes over 1e9 B/cycle; per slice: 128 fetched + 16 x 32 committed over 128
    assert b["hbm"] == 1 and b["dm_slice"] == (128 + 512) // 128
    assert s.binding.name == "chain"


def test_a_busy_dma_context_binds_and_every_bound_is_below_the_makespan():
    s = schedule_artifact(artifact(dma_in(1), dma_in(2, 1024), program(0, 3, 1), dma_out(5, 4), result=5),
                          rates=RATES)
    assert bounds(s)["context"] == 356 * 2 + 104 == s.makespan
    assert bounds(s)["chain"] == 356 + 16 + 104
    assert s.binding.name == "context"
    assert all(b.cycles <= s.makespan for b in s.bounds)


def shipped_text():
    return (resources.files("tu_ops") / "targets" / "rngd.schedule.toml").read_text(encoding="utf-8")


def test_every_shipped_rate_names_its_book_page_or_says_it_is_a_model_choice():
    rates = builtin_rates("rngd")
    assert rates is not None and rates("dma", "startup_cycles") == 500
    assert rates("hbm", "chip_bytes_per_cycle") == 1500 and rates("dm", "chip_bytes_per_cycle") == 2000
    for line in shipped_text().splitlines():
        if re.match(r"\s*[a-z_]+\s*=\s*[0-9]", line) and not line.startswith("schema"):
            assert re.search(r"# ([a-z-]+/)+[a-z-]+\.md|# model:", line), line


def test_a_misspelt_rate_is_an_error_naming_its_key():
    data = {"schema": 1, "target": "t", "clock": {"ghz": 1.0}, "hbm": {}, "dm": {}, "dma": {}, "tensor_unit": {}}
    with pytest.raises(TargetSchemaError, match="hbm"):
        parse_rates(data)
    with pytest.raises(TargetSchemaError, match="unknown key"):
        parse_rates({**data, "extra": 1})
