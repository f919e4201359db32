"""A warm `npu-opt compile` is answered from DIR's run record (driver/replay.py) with the
same report, status, artifacts and manifest as the compile it stands for, and only while
nothing it depended on changed: kernel files, their modules and environment, npu-opt's
own sources, the target, the directory walk and the outputs themselves."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from pathlib import Path

import pytest

import driver.compile_command as compile_command
from driver import fingerprint, replay
from driver.cli import main

ROOT = Path(__file__).parents[2]
EXAMPLES = ROOT / "examples"
HELPER = 'import os\nMODE = os.environ.get("NPU_OPT_REPLAY_TEST_MODE")\n'


@pytest.fixture
def project(tmp_path, monkeypatch):
    """Three example kernel files in a directory of their own, one of which imports a module
    beside it that reads an environment variable; and a target description file."""
    src = tmp_path / "kernels"
    src.mkdir()
    for name in ("gemv.py", "row_sum.py"):
        shutil.copy(EXAMPLES / name, src / name)
    (src / "leaky.py").write_text("import helper  # noqa: F401\n" + (EXAMPLES / "leaky_relu.py").read_text())
    (src / "helper.py").write_text(HELPER)
    shutil.copy(ROOT / "tu_ops" / "targets" / "rngd.toml", tmp_path / "target.toml")
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("NPU_OPT_REPLAY_TEST_MODE", raising=False)
    return tmp_path


ARGV = ["compile", "kernels", "-o", "out", "--target", "target.toml", "--jobs", "1"]


def _replayed() -> int | None:
    return replay.replay(["kernels"], "out", "target.toml", None, True, "human", None)


def _outputs(out: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(out.iterdir()) if p.is_file()}


def _compile_must_not_run(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("the run record should have answered")

    monkeypatch.setattr(compile_command, "run_compile", refuse)


def test_a_warm_compile_replays_the_slow_warm_compile(project, monkeypatch, capsys):
    assert main(ARGV) == 0
    cold = capsys.readouterr().out
    assert "compiled 3 kernel(s): 3 ok" in cold
    with monkeypatch.context() as m:  # the ordinary warm compile: every kernel a cache hit
        m.setattr(replay, "replay", lambda *a: None)
        assert main(ARGV) == 0
    slow = capsys.readouterr().out
    slow_outputs = _outputs(project / "out")
    manifest = json.loads(slow_outputs["manifest.json"])
    assert [e["timings_ms"] for e in manifest["kernels"]] == [{}, {}, {}]
    with monkeypatch.context() as m:
        _compile_must_not_run(m)
        assert main(ARGV) == 0
    assert capsys.readouterr().out == slow == cold
    assert _outputs(project / "out") == slow_outputs
    for entry in manifest["kernels"]:
        data = (project / "out" / entry["artifact"]).read_bytes()
        assert hashlib.sha256(data).hexdigest() == entry["sha256"]


def test_the_replay_leaves_the_manifest_a_cache_hit_writes(project, capsys):
    assert main(ARGV) == 0
    first = json.loads((project / "out" / "manifest.json").read_text())
    assert all(e["timings_ms"] for e in first["kernels"])  # the cold run timed each kernel
    assert _replayed() == 0
    after = json.loads((project / "out" / "manifest.json").read_text())
    assert after == first | {"kernels": [e | {"timings_ms": {}} for e in first["kernels"]]}


def _edit_kernel(p: Path) -> None:
    path = p / "kernels" / "gemv.py"
    path.write_text(path.read_text() + "\n# edited\n")


def _edit_module(p: Path) -> None:
    (p / "kernels" / "helper.py").write_text(HELPER + "EXTRA = 1\n")


def _edit_target(p: Path) -> None:
    path = p / "target.toml"
    path.write_text(path.read_text() + "\n# edited\n")


def _new_file(p: Path) -> None:
    (p / "kernels" / "notes.py").write_text("X = 1\n")


def _new_name_beside(p: Path) -> None:
    (p / "kernels" / "data.bin").write_bytes(b"\0")


def _lost_artifact(p: Path) -> None:
    (p / "out" / "gemv_kernel.visa").unlink()


def _tampered_artifact(p: Path) -> None:
    path = p / "out" / "row_sum_kernel.visa"
    path.write_text(path.read_text() + "\n")


def _stale_fail(p: Path) -> None:
    (p / "out" / "gemv_kernel.fail").write_text("old\n")


def _other_manifest(p: Path) -> None:
    path = p / "out" / "manifest.json"
    path.write_text(path.read_text().replace('"ok"', '"ok" ', 1))


def _damaged_record(p: Path) -> None:
    (p / "out" / ".npu-opt-cache" / replay.RECORD).write_text("{not json")


@pytest.mark.parametrize("change", [_edit_kernel, _edit_module, _edit_target, _new_file, _new_name_beside,
                                    _lost_artifact, _tampered_artifact, _stale_fail, _other_manifest,
                                    _damaged_record])
def test_any_change_falls_back_to_the_compile(change, project, capsys):
    assert main(ARGV) == 0
    assert _replayed() == 0
    change(project)
    assert _replayed() is None
    assert main(ARGV) == 0  # the ordinary compile repairs the outputs and records again
    assert not (project / "out" / "gemv_kernel.fail").exists()
    assert _replayed() == 0


def test_an_environment_variable_the_import_read_is_part_of_it(project, monkeypatch, capsys):
    assert main(ARGV) == 0
    assert _replayed() == 0
    monkeypatch.setenv("NPU_OPT_REPLAY_TEST_MODE", "fast")
    assert _replayed() is None


@pytest.fixture
def own_sources(tmp_path, monkeypatch):
    """npu-opt's sources stood for by a tree of two files, older than the racy window."""
    tree = tmp_path / "own"
    tree.mkdir()
    for name, text in (("a.py", "A = 1\n"), ("g.lark", "start: X\n")):
        (tree / name).write_text(text)
        os.utime(tree / name, ns=(1_000_000_000, 1_000_000_000))
    os.utime(tree, ns=(1_000_000_000, 1_000_000_000))
    monkeypatch.setattr(fingerprint, "_roots", lambda: [str(tree)])
    fingerprint._compiler_identity.cache_clear()
    yield tree
    fingerprint._compiler_identity.cache_clear()


def test_a_change_of_npu_opts_own_code_falls_back(project, own_sources, capsys):
    assert main(ARGV) == 0
    record = replay.load_record(project / "out")
    assert record["sources_stamp"] is not None
    assert _replayed() == 0
    os.utime(own_sources / "a.py")  # touched, the same contents: read again, still the same compiler
    fingerprint._compiler_identity.cache_clear()
    assert _replayed() == 0
    (own_sources / "a.py").write_text("A = 2\n")  # the same size
    fingerprint._compiler_identity.cache_clear()
    assert _replayed() is None


def test_a_source_file_added_to_npu_opt_falls_back(project, own_sources, capsys):
    assert main(ARGV) == 0
    assert _replayed() == 0
    (own_sources / "new.py").write_text("B = 1\n")  # a module a declaration table would load
    os.utime(own_sources / "new.py", ns=(1_000_000_000, 1_000_000_000))
    fingerprint._compiler_identity.cache_clear()
    assert _replayed() is None


def test_a_source_newer_than_the_racy_window_leaves_no_stamp(project, own_sources, capsys):
    (own_sources / "a.py").write_text("A = 3\n")
    fingerprint._compiler_identity.cache_clear()
    assert main(ARGV) == 0
    record = replay.load_record(project / "out")
    assert record["sources_stamp"] is None
    assert _replayed() == 0  # by contents
    os.utime(own_sources / "a.py", ns=(1_000_000_000, 1_000_000_000))
    (own_sources / "a.py").write_text("A = 4\n")
    os.utime(own_sources / "a.py", ns=(1_000_000_000, 1_000_000_000))  # size and time as before
    fingerprint._compiler_identity.cache_clear()
    assert _replayed() is None


def test_the_fingerprint_hashes_every_source_file(tmp_path):
    pkg = tmp_path / "pkg"
    (pkg / "sub" / "__pycache__").mkdir(parents=True)
    (pkg / "a.py").write_text("A = 1\n")
    (pkg / "sub" / "g.lark").write_text("start: X\n")
    (pkg / "sub" / "__pycache__" / "a.cpython.pyc").write_bytes(b"\1")
    (pkg / "notes.txt").write_text("not a source\n")
    before = fingerprint.source_digest([str(pkg)])
    (pkg / "sub" / "__pycache__" / "a.cpython.pyc").write_bytes(b"\2")
    (pkg / "notes.txt").write_text("still not a source\n")
    assert fingerprint.source_digest([str(pkg)]) == before
    (pkg / "sub" / "g.lark").write_text("start: Y\n")
    edited = fingerprint.source_digest([str(pkg)])
    assert edited != before
    (pkg / "sub" / "t.toml").write_text("")
    assert fingerprint.source_digest([str(pkg)]) not in (before, edited)


@pytest.mark.parametrize("argv", [
    ["--format", "json"], ["--filter", "gemv*"], ["--no-compat"], ["--color", "always"],
])
def test_another_invocation_is_not_answered_by_the_record(argv, project, capsys):
    assert main(ARGV) == 0
    key = replay.load_record(project / "out")["key"]
    main(ARGV + argv)
    capsys.readouterr()
    assert replay.load_record(project / "out")["key"] != key
    assert _replayed() is None  # the record now answers the other invocation


def test_a_run_with_an_input_error_records_nothing(project, capsys):
    (project / "kernels" / "broken.py").write_text("def (:\n")
    assert main(ARGV) == 2
    assert not (project / "out" / ".npu-opt-cache" / replay.RECORD).exists()


def _argparse_reading(words: list[str]) -> dict | None:
    from driver.cli import build_parser

    try:
        args = build_parser().parse_args(words)
    except SystemExit:
        return None
    return vars(args)


TOKENS = ["kernels", "more.py", "-o", "out", "--target", "rngd", "--filter", "g*", "--jobs", "2", "x",
          "--format", "json", "github", "--color", "never", "--no-compat", "--no-cache", "-", "--", "-oout",
          "--jobs=2", "--tar", "-h", "--dump-ir", "--backend", "npu"]


def test_the_plain_compile_reading_is_the_parsers():
    """Wherever the argparse-free reading of a compile command line answers, it reads what
    argparse reads (all of it: a value is never dropped or defaulted differently)."""
    from driver.cli import _plain_compile

    import random

    rng = random.Random(18)
    answered = 0
    for _ in range(3000):
        words = ["compile"] + [rng.choice(TOKENS) for _ in range(rng.randrange(0, 9))]
        plain = _plain_compile(words)
        if plain is None:
            continue
        answered += 1
        parsed = _argparse_reading(words)
        assert parsed is not None, words
        assert vars(plain) == parsed, words
    assert answered > 200  # the generator does reach plain command lines
    assert _plain_compile(["compile", "a", "-o", "d", "b"]) is None  # argparse refuses the second run
    assert _argparse_reading(["compile", "a", "-o", "d", "b"]) is None
