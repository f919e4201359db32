"""Lower bounds of the makespan model, and the shipped rates file."""

from __future__ import annotations

import re
import tomllib
from importlib import resources

import pytest

from tests.visa.schedule.handmade import RATES, RATES_DATA, artifact, dma_in, dma_out, program
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
    data = {"schema": 1, "target": "t", "clock": {"ghz": 1.0}, "hbm": {}, "dm": {}, "dma": {}, "tensor_unit": {},
            "kernel": {}}
    with pytest.raises(TargetSchemaError, match="hbm"):
        parse_rates(data)
    with pytest.raises(TargetSchemaError, match="unknown key"):
        parse_rates({**data, "extra": 1})


def test_only_the_fixed_costs_may_be_zero():
    # a hand-made rates file may leave the command start-up and the launch out (0); a rate
    # that divides may not be 0, and nothing may be negative
    data = {k: dict(v) if isinstance(v, dict) else v for k, v in tomllib.loads(shipped_text()).items()}
    data["tensor_unit"]["command_startup_cycles"] = 0
    data["kernel"]["launch_cycles"] = 0
    assert parse_rates(data)("kernel", "launch_cycles") == 0
    with pytest.raises(TargetSchemaError, match="kernel.launch_cycles.*non-negative"):
        parse_rates({**data, "kernel": {"launch_cycles": -1}})
    with pytest.raises(TargetSchemaError, match="dma.startup_cycles.*positive"):
        parse_rates({**data, "dma": {**data["dma"], "startup_cycles": 0}})


def test_a_program_pays_the_command_start_up_and_nothing_runs_before_the_launch():
    data = {k: dict(v) if isinstance(v, dict) else v for k, v in tomllib.loads(shipped_text()).items()}
    rates = parse_rates({**RATES_DATA, "tensor_unit": {**RATES_DATA["tensor_unit"], "command_startup_cycles": 7},
                         "kernel": {"launch_cycles": 1000}})
    s = schedule_artifact(artifact(dma_in(1), program(0, 2, 1), dma_out(4, 3), result=4), rates=rates)
    assert [(x.start, x.end) for x in s.slots] == [(1000, 1356), (1356, 1379), (1379, 1483)]
    assert s.slots[1].step.startup == 7 and s.slots[0].wait.kind == "none"
    assert bounds(s)["chain"] == 1000 + 356 + 23 + 104 == s.makespan
    assert all(b.cycles >= 1000 for b in s.bounds)
    assert [c.step.label for c in s.critical_path()] == ["%1", "program 0", "%4"]
    assert data["kernel"]["launch_cycles"] > 0
