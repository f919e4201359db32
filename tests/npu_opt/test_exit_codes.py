"""The exit statuses are declared once (`driver.exit_codes`): every subcommand is in the
table, its help says exactly its statuses, the guide's tables are rendered from it, and what
the commands really return on good and bad input is among the statuses declared for them."""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import pytest

from driver import exit_codes
from driver.cli import build_parser, main
from driver.exit_codes import COMMANDS, exit_sentence, statuses_of

ROOT = Path(__file__).resolve().parents[2]


def _subcommands() -> dict[str, argparse.ArgumentParser]:
    parser = build_parser()
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    raise AssertionError("npu-opt has no subcommands")


def test_every_subcommand_is_declared():
    assert sorted(_subcommands()) == sorted(COMMANDS)


@pytest.mark.parametrize("command", COMMANDS)
def test_help_states_the_declared_statuses(command):
    description = " ".join(_subcommands()[command].description.split())
    assert description.endswith(exit_sentence(command)), description


def test_artifact_commands_never_refuse_a_kernel():
    """`visa` and `schedule` read artifacts, not kernels: they never return 1."""
    for command in ("visa", "schedule", "explain", "explain-mapping", "targets"):
        assert exit_codes.EXIT_REFUSED not in [s.code for s in statuses_of(command)]


def test_the_guide_renders_the_table():
    for page in ("docs/ci.md", "docs/reference/cli.md", "docs/troubleshooting.md"):
        assert "<!-- npu-opt:exit-codes -->" in (ROOT / page).read_text(encoding="utf-8"), page
    table = exit_codes.markdown_table()
    for s in exit_codes.STATUSES:
        assert f"| {s.code} |" in table


REFUSED = '''from npu_opt import *
axes(K=1024)
@device(chip=1)
def bad(ctx: Context, x: HbmTensor[i8, m("1"), m("K")]) -> HbmTensor[i8, m("1"), m("K")]:
    x = x.to_dm(ctx.tdma, DmTensor[i8, m("1"), m("1 # 2"), m("1 # 256"), m("K")])
    y = ctx.main.begin(x.view()).fetch(m("K / 16"), m("K % 16")).collect(m("K / 16"), m("K % 16"))
    return y.commit_trim(m("K % 16")).commit(m("K")).to_hbm(ctx.tdma)
'''


@pytest.mark.parametrize("argv, status", [
    (["check", "{tmp}/missing.py"], 2),
    (["check", "{tmp}/refused.py"], 1),
    (["check", "{tmp}/broken.py"], 2),
    (["compile", "{tmp}/refused.py", "-o", "{tmp}/out"], 1),
    (["visa", "{tmp}/missing.visa"], 2),
    (["visa", "{tmp}/broken.py"], 2),
    (["schedule", "{tmp}/missing.visa"], 2),
    (["explain", "NOPE-99"], 2),
    (["explain", "COLLECT-2"], 0),
    (["explain-mapping", "A +", "--axes", "A=8"], 2),
    (["targets"], 0),
    (["targets", "{tmp}/missing.toml"], 2),
    (["run", "{tmp}/refused.py::bad", "--input", "x={tmp}/x.npy", "-o", "{tmp}/out"], 1),
])
def test_observed_status_is_declared(tmp_path, capsys, argv, status):
    (tmp_path / "refused.py").write_text(REFUSED)
    (tmp_path / "broken.py").write_text("x = (\n")
    np.save(tmp_path / "x.npy", np.zeros(1024, np.int8))
    got = main([a.replace("{tmp}", str(tmp_path)) for a in argv])
    capsys.readouterr()
    assert got == status
    assert got in [s.code for s in statuses_of(argv[0])]
