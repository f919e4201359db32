"""Issue 58.1: a re-check traces only the kernels an edit could change (driver/lsp/reuse.py),
and shows exactly what a full check of the same text shows.

Each check runs as the worker runs it: `analyse` in a forked child of this process, given
what the last check left (`merged`), reporting the kernels it traced through `progress`.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from driver.lsp.facts import analyse
from driver.lsp.isolation import run_forked
from driver.lsp.reuse import merged

HELPER = '''from npu_opt import *


def load(ctx, src, tile):
    return src.to_dm(ctx.tdma, DmTensor[i8, m("1"), m("1 # 2"), m("1 # 256"), tile])
'''

_KERNEL = '''

@device(chip=1)
def {name}(ctx: Context, src: HbmTensor[i8, Chip, m("N")]) -> HbmTensor[i8, Chip, m("N")]:
    d = load(ctx, src, m("N"))
    out = (ctx.main.begin(d.view())
           .fetch(m("N / {t}"), m("N % {t}"))
           .collect(m("N / 32"), m("N % 32"))
           .commit_trim(m("N % 32"))
           .commit(m("N")))
    return out.to_hbm(ctx.tdma)
'''


def kernels(tiles: dict[str, int], head: str = "axes(N=2048)") -> str:
    """A file of copy kernels importing the helper, one per name, with its fetch tile."""
    return ("from npu_opt import *\nfrom reuse_helper import load\n\n" + head + "\nChip = m(\"1\")\n" +
            "".join(_KERNEL.format(name=name, t=t) for name, t in tiles.items()))


class Checks:
    """The worker's loop over one file: each check is given the last one's `known`."""

    def __init__(self, path: Path) -> None:
        self.path, self.known, self.count = str(path), None, 0

    def check(self, source: str, keep: bool = True) -> tuple[dict, list[str]]:
        """The facts (without `reuse`) and the kernels traced, in order."""
        self.count += 1
        traced: list[str] = []

        def work(send):
            return analyse(self.path, source, f"_reuse_test_{self.count}", None,
                           lambda kernel, line: send({"at": kernel}), self.known if keep else None)

        outcome = run_forked(work, lambda m: traced.append(m["at"]), 60)
        assert outcome.result is not None, outcome.status
        facts = outcome.result
        found = facts.pop("reuse")
        self.known = merged(self.known if keep else None, found, facts)
        return facts, [k for k in traced if k is not None]


def _same(a: dict, b: dict) -> bool:
    return json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)


def test_an_edit_of_one_kernel_traces_that_kernel_only_and_shows_what_a_full_check_shows(tmp_path):
    (tmp_path / "reuse_helper.py").write_text(HELPER)
    checks, full = Checks(tmp_path / "edited.py"), Checks(tmp_path / "edited.py")
    facts, traced = checks.check(kernels({"one": 32, "two": 32, "three": 32}))
    assert traced == ["one", "two", "three"]
    edited = kernels({"one": 32, "two": 16, "three": 32})  # two's fetch tile: half a flit (a refusal)
    facts, traced = checks.check(edited)
    assert traced == ["two"]
    assert {d["kernel"] for d in facts["diagnostics"]} == {"two"}
    expected, _ = full.check(edited, keep=False)
    assert _same(facts, expected)
    assert facts["stages"] and facts["variables"] and facts["mappings"] and facts["tensors"]
    facts, traced = checks.check(kernels({"one": 32, "two": 32, "three": 32}))  # fixed again
    assert traced == ["two"] and facts["diagnostics"] == []


def test_an_edit_outside_the_kernels_or_of_the_helper_traces_every_kernel(tmp_path):
    (tmp_path / "reuse_helper.py").write_text(HELPER)
    checks = Checks(tmp_path / "context.py")
    tiles = {"one": 32, "two": 32}
    checks.check(kernels(tiles))
    facts, traced = checks.check(kernels(tiles, head="axes(N=4096)"))
    assert traced == ["one", "two"]
    (tmp_path / "reuse_helper.py").write_text(HELPER.replace('tile])', 'm("N / 0"), tile])'))
    facts, traced = checks.check(kernels(tiles, head="axes(N=4096)"))
    assert traced == ["one", "two"]
    assert facts["diagnostics"] and all(d["kernel"] in ("one", "two") for d in facts["diagnostics"])


def test_a_line_added_above_a_kernel_traces_it_again(tmp_path):
    """Its facts' lines moved: they are traced, not shifted."""
    (tmp_path / "reuse_helper.py").write_text(HELPER)
    checks = Checks(tmp_path / "moved.py")
    before, _ = checks.check(kernels({"one": 32, "two": 16}))
    source = kernels({"one": 32, "two": 16}).replace("    d = load(ctx, src, m(\"N\"))\n",
                                                      "    d = load(ctx, src, m(\"N\"))\n    pass\n", 1)
    facts, traced = checks.check(source)
    assert traced == ["one", "two"]
    (refusal,), (earlier,) = facts["diagnostics"], before["diagnostics"]
    assert refusal["line"] == earlier["line"] + 1


def test_a_kernel_that_names_an_edited_kernel_is_traced_with_it(tmp_path):
    (tmp_path / "reuse_helper.py").write_text(HELPER)
    checks = Checks(tmp_path / "named.py")
    naming = kernels({"one": 32, "two": 32}).replace("    return out.to_hbm(ctx.tdma)\n",
                                                      "    assert one is not None\n    return out.to_hbm(ctx.tdma)\n")
    checks.check(naming)
    facts, traced = checks.check(naming.replace('m("N / 32"), m("N % 32"))\n           .collect', 'm("N / 64"), '
                                                'm("N % 64"))\n           .collect', 1))
    assert traced == ["one", "two"]


def test_a_helper_a_kernel_imports_only_while_it_runs_is_watched_too(tmp_path):
    (tmp_path / "reuse_helper.py").write_text(HELPER)
    (tmp_path / "late_helper.py").write_text("TILE = 32\n")
    checks = Checks(tmp_path / "late.py")

    def late(two: int) -> str:  # kernel one imports the late helper in its body
        return kernels({"one": 32, "two": two}).replace(
            "    d = load(ctx, src, m(\"N\"))\n",
            "    from late_helper import TILE\n    assert TILE == 32, 'the late helper changed'\n"
            "    d = load(ctx, src, m(\"N\"))\n", 1)

    checks.check(late(32))
    checks.check(late(64))  # an edit of two (the first check saw no late helper)
    late_helper = tmp_path / "late_helper.py"
    before = late_helper.stat().st_mtime_ns
    late_helper.write_text("TILE = 64\n")
    # a save a few seconds later: Python trusts a module's bytecode while the source's size and
    # whole-second mtime match, so this same-length rewrite within one second would be stale to
    # Python itself in a process that keeps bytecode (the suite's do: tests/conftest.py)
    os.utime(late_helper, ns=(before + 3_000_000_000,) * 2)
    facts, traced = checks.check(late(32))  # two edited back; one's late helper changed on disk
    assert "one" in traced
    assert any("the late helper changed" in d["message"] for d in facts["diagnostics"])
