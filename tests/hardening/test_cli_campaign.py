"""The CLI papercuts of issue 28 (item 17) and a bounded campaign of hostile invocations:
each one exits with a documented status (0-3) and never prints a traceback. The default
run is small (in-process, a few kernels); `-m slow` adds the same invocations through a
fresh interpreter."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from driver.cli import main
from tests.hardening.kernels import write

ROOT = Path(__file__).parents[2]
FETCH_WARNING = '''from npu_opt import *

axes(A=64, B=128)

Chip = m("1")
Cluster = m("1 # 2")
Slice = m("1 # 256")

@device(chip=1)
def warned_kernel(ctx: Context, x: HbmTensor[i8, Chip, m("A, B")]) -> HbmTensor[i8, Chip, m("B, A")]:
    x = x.to_dm(ctx.tdma, DmTensor[i8, Chip, Cluster, Slice, m("A, B")])
    y = (ctx.main.begin(x.view())
         .fetch(m("B"), m("A"))
         .collect(m("B, A / 32"), m("A % 32"))
         .commit_trim(m("A % 32"))
         .commit())
    return y.to_hbm(ctx.tdma)
'''


def test_check_takes_jobs_and_gives_the_same_report(tmp_path, capsys):
    for n in range(3):
        write(tmp_path, f"k{n}.py", name=f"k{n}_kernel", body="pass" if n != 1 else "raise ValueError('no')")
    reports = []
    for jobs in ("1", "2"):
        assert main(["check", str(tmp_path), "--jobs", jobs]) == 2
        reports.append(capsys.readouterr().out)
    assert reports[0] == reports[1] and "checked 3 kernel(s): 2 ok, 1 refused" in reports[0]
    assert main(["check", str(tmp_path), "--jobs", "0"]) == 2
    assert "--jobs 0" in capsys.readouterr().out


@pytest.mark.parametrize("argv, hint", [
    (["compil", "x.py"], "did you mean `compile`?"),
    (["chek", "x.py"], "did you mean `check`?"),
    (["compile", "x.py", "--no-cahce"], "did you mean `--no-cache` for `--no-cahce`?"),
    (["check", "x.py", "--filtr=a*"], "did you mean `--filter` for `--filtr`?"),
])
def test_a_mistyped_command_or_option_gets_a_suggestion(capsys, argv, hint):
    with pytest.raises(SystemExit) as stop:
        main(argv)
    assert stop.value.code == 2
    assert hint in capsys.readouterr().err


def test_compiling_a_subset_leaves_no_other_files_fail(tmp_path, capsys):
    good = write(tmp_path, "good.py", name="good_kernel")
    write(tmp_path, "bad.py", name="bad_kernel", body="raise ValueError('refused')")
    out = tmp_path / "out"
    assert main(["compile", str(tmp_path), "-o", str(out), "--jobs", "1"]) == 2
    assert (out / "bad_kernel.fail").is_file()
    assert main(["compile", str(good), "-o", str(out), "--jobs", "1"]) == 0
    assert sorted(p.name for p in out.glob("*.fail")) == []
    assert (out / "good_kernel.visa").is_file()


def test_a_directory_walk_does_not_import_test_files(tmp_path, capsys):
    write(tmp_path)
    for name in ("test_kern.py", "kern_test.py", "conftest.py"):
        (tmp_path / name).write_text("raise RuntimeError('a test module must not be imported')\n")
    assert main(["check", str(tmp_path)]) == 0
    assert "checked 1 kernel(s): 1 ok" in capsys.readouterr().out
    assert main(["check", str(tmp_path / "test_kern.py")]) == 2  # named on the command line: loaded
    assert "RuntimeError" in capsys.readouterr().out


@pytest.mark.parametrize("flag", [["-D", "warnings"], ["--deny-warnings"]])
def test_deny_warnings_refuses_a_kernel_with_a_warning(tmp_path, capsys, flag):
    path = tmp_path / "warned.py"
    path.write_text(FETCH_WARNING)
    out = tmp_path / "out"
    assert main(["compile", str(path), "-o", str(out), "--jobs", "1"]) == 0
    assert "warning[W-FETCH-1]" in capsys.readouterr().out
    assert main(["compile", str(path), "-o", str(out), "--jobs", "1", *flag]) == 1
    assert (out / "warned_kernel.fail").is_file() and not (out / "warned_kernel.visa").exists()
    assert "-D warnings" in (out / "warned_kernel.fail").read_text()
    manifest = json.loads((out / "manifest.json").read_text())
    assert [(e["status"], e["code"]) for e in manifest["kernels"]] == [("refused", "W-FETCH-1")]
    capsys.readouterr()
    assert main(["compile", str(path), "-o", str(out), "--jobs", "1"]) == 0  # the run record knows the flag
    assert (out / "warned_kernel.visa").is_file() and not (out / "warned_kernel.fail").exists()


def test_explain_mapping_refuses_a_huge_row_count_quickly(capsys):
    start = time.perf_counter()
    with pytest.raises(SystemExit) as stop:
        main(["explain-mapping", "A", "--axes", "A=1000000000", "--rows", str(10**8)])
    assert stop.value.code == 2 and time.perf_counter() - start < 5
    assert "--rows must be between 1 and 10000" in capsys.readouterr().err
    assert main(["explain-mapping", "A", "--axes", "A=1000000000", "--rows", "10000", "--format", "json"]) == 0
    assert len(json.loads(capsys.readouterr().out)["cells"]) == 20000


def test_a_5000_digit_visa_version_is_a_format_error(tmp_path, capsys):
    (tmp_path / "v.visa").write_text("visa " + "9" * 5000 + "\n")
    assert main(["visa", str(tmp_path / "v.visa")]) == 2
    err = capsys.readouterr().err
    assert "error[USAGE]" in err and "5000 digits" in err and "Traceback" not in err


# --- the campaign: hostile invocations, each with its documented exit status -------------

def _campaign(tmp: Path) -> list[tuple[str, list[str], set[int]]]:
    src = tmp / "src"
    src.mkdir()
    write(src)
    write(src, "raises.py", name="raising_kernel", body="raise ValueError('x')")
    (tmp / "bad.py").write_text("x = (\n")
    (tmp / "empty.visa").write_text("")
    (tmp / "junk.visa").write_bytes(b"\xff\xfe\x00junk")
    (tmp / "notes.txt").write_text("hello\n")
    out = str(tmp / "out")
    return [
        ("compile ok+usage", ["compile", str(src), "-o", out, "--jobs", "1"], {2}),
        ("compile jobs 2", ["compile", str(src), "-o", out + "2", "--jobs", "2"], {2}),
        ("compile syntax error", ["compile", str(tmp / "bad.py"), "-o", out], {2}),
        ("compile missing path", ["compile", str(tmp / "missing.py"), "-o", out], {2}),
        ("compile -o a file", ["compile", str(src), "-o", str(tmp / "notes.txt")], {2}),
        ("compile bad target", ["compile", str(src), "-o", out, "--target", str(tmp / "notes.txt")], {2}),
        ("compile target /dev/zero", ["compile", str(src), "-o", out, "--target", "/dev/zero"], {2}),
        ("check text file", ["check", str(tmp / "notes.txt")], {2}),
        ("check jobs 2 deny", ["check", str(src), "--jobs", "2", "-D", "warnings"], {2}),
        ("visa empty", ["visa", str(tmp / "empty.visa")], {2}),
        ("visa junk", ["visa", str(tmp / "junk.visa")], {2}),
        ("visa directory", ["visa", str(tmp)], {2}),
        ("visa /dev/zero", ["visa", "/dev/zero"], {2}),
        ("visa input without exec", ["visa", str(tmp / "empty.visa"), "--input", "x=y.npy"], {2}),
        ("schedule three files", ["schedule", "a.visa", "b.visa", "c.visa"], {2}),
        ("schedule junk", ["schedule", str(tmp / "junk.visa")], {2}),
        ("run missing kernel", ["run", f"{src / 'kern.py'}::nothing"], {2}),
        ("run no separator", ["run", str(src / "kern.py")], {2}),
        ("explain unknown code", ["explain", "NOPE-1"], {2}),
        ("explain-mapping syntax", ["explain-mapping", "A /"], {2}),
        ("targets a text file", ["targets", str(tmp / "notes.txt")], {2}),
        ("compile jobs 0", ["compile", str(src), "-o", out, "--jobs", "0"], {2}),
        ("compile jobs -1", ["compile", str(src), "-o", out, "--jobs", "-1"], {2}),
        ("compile -o empty", ["compile", str(src), "-o", ""], {2}),
        ("run -o empty", ["run", f"{src / 'kern.py'}::copy_kernel", "--input", f"x={tmp / 'x.npy'}", "-o", ""], {2}),
        ("run input fifo", ["run", f"{src / 'kern.py'}::copy_kernel", "--input", f"x={tmp / 'fifo'}", "-o", out], {2}),
        ("explain-mapping axis 10**20", ["explain-mapping", "A", "--axes", f"A={10 ** 20}"], {2}),
        *_tune_campaign(tmp, out),
    ]


def _tune_campaign(tmp: Path, out: str) -> list[tuple[str, list[str], set[int]]]:
    """Hostile `npu-opt tune` invocations (issue 39): bad paths and options, spaces whose
    code fails or exits."""
    from tests.hardening.test_tune_inputs import space_file

    spaces = tmp / "spaces"
    spaces.mkdir()
    (spaces / "loop1").symlink_to("loop2")
    (spaces / "loop2").symlink_to("loop1")
    os.mkfifo(spaces / "fifo.py")
    np.save(tmp / "x.npy", np.zeros((4096, 8), np.int8))
    if not (tmp / "fifo").exists():
        os.mkfifo(tmp / "fifo")
    good = str(space_file(spaces))
    bad = {name: str(space_file(spaces, f"{name}.py", at=at, code=code)) for name, at, code in [
        ("inputs_raise", "INPUTS", "raise ValueError('x')"),
        ("inputs_array", "INPUTS", "return np.zeros((4096, 8), np.int8)"),
        ("inputs_two", "INPUTS", "return (np.zeros((4096, 8), np.int8),) * 2"),
        ("inputs_exit3", "INPUTS", "import os; os._exit(3)"),
        ("oracle_raise", "ORACLE", "raise ValueError('x')"),
        ("oracle_exit0", "ORACLE", "import sys; sys.exit(0)"),
        ("factory_exit0", "FACTORY", "import sys; sys.exit(0)"),
        ("factory_os_exit0", "FACTORY", "import os; os._exit(0)"),
    ]}
    text = space_file(spaces, "string_choice.py", replace=('{"pick": ["a", "b"]}', '{"pick": "ab"}'))
    return [
        ("tune .", ["tune", ".", "-o", out], {2}),
        ("tune /", ["tune", "/", "-o", out], {2}),
        ("tune empty path", ["tune", "", "-o", out], {2}),
        ("tune symlink loop", ["tune", str(spaces / "loop1"), "-o", out], {2}),
        ("tune fifo", ["tune", str(spaces / "fifo.py"), "-o", out], {2}),
        ("tune a text file", ["tune", str(tmp / "notes.txt"), "-o", out], {2}),
        ("tune seed -1", ["tune", good, "--seed", "-1", "-o", out], {2}),
        ("tune top 0", ["tune", good, "--top", "0", "-o", out], {2}),
        ("tune jobs 0", ["tune", good, "--jobs", "0", "-o", out], {2}),
        ("tune -o empty", ["tune", good, "-o", ""], {2}),
        ("tune string choice", ["tune", str(text), "-o", out], {2}),
        *[(f"tune {name}", ["tune", path, "-o", out], {1} if name.startswith("factory") else {2})
          for name, path in bad.items()],
    ]


def _run_in_process(argv: list[str]) -> int:
    try:
        return main(argv)
    except SystemExit as e:  # argparse refusing the command line
        return int(e.code)


def test_the_campaign_in_process(tmp_path, capsys):
    failures = []
    for name, argv, statuses in _campaign(tmp_path):
        status = _run_in_process(argv)
        text = capsys.readouterr()
        if status not in statuses or "Traceback" in text.out + text.err:
            failures.append((name, status, (text.out + text.err)[-400:]))
    assert failures == []


@pytest.mark.slow
def test_the_campaign_in_fresh_processes(tmp_path):
    failures = []
    for name, argv, statuses in _campaign(tmp_path):
        done = subprocess.run([sys.executable, "-m", "npu_opt", *argv], capture_output=True, text=True, timeout=300,
                              env=os.environ | {"PYTHONPATH": str(ROOT)})
        if done.returncode not in statuses or "Traceback" in done.stdout + done.stderr:
            failures.append((name, done.returncode, (done.stdout + done.stderr)[-400:]))
    assert failures == []
