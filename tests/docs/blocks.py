"""Extracting and running the code blocks of the guide (docs/**/*.md) and of README.md.

Kinds of fenced block, by the first word of the fence's info string:

- `python`: executed, in page order, in one namespace per page, with the page's own
  temporary directory as the working directory (and on `sys.path`). Two markers on
  the block's first line change that:
  - `# file: NAME.py` writes the block to `NAME.py` in that directory and imports it
    (so later blocks and console commands can use it);
  - `# planned: ...` marks surface npu-opt does not offer yet. The block is NOT run
    as an example; instead it must FAIL when executed, so the marker is dropped as
    soon as the feature lands. Planned blocks are counted.
- `pycon`: a doctest (`>>>` lines and their expected output, `...` elides), run in the
  page's namespace.
- `console`: every `$ ` line is a shell command run in the page's directory; the lines
  up to the next `$ ` are its expected stdout+stderr, compared exactly except that a
  line `...` (or `...` inside a line) matches anything.
  A plain `npu-opt ...` command (no shell syntax outside quotes) runs in this process
  (driver.cli.main), saving an interpreter's start-up and its imports; every other
  command runs in a shell.
- every other language (`sh`, `text`, `rust`, `toml`, `json`, `lua`) is shown only.

The page directory holds a link `examples` to the repository's examples/.
"""

from __future__ import annotations

import contextlib
import doctest
import importlib
import io
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import textwrap
import tomllib
from pathlib import Path

import attrs

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
RUN_KINDS = ("python", "pycon", "console")
_FENCE = re.compile(r"^(?P<indent>[ ]*)```(?P<info>[^\n`]*)\n(?P<body>.*?)^(?P=indent)```[ ]*$",
                    re.MULTILINE | re.DOTALL)
_CHECKER_FLAGS = doctest.ELLIPSIS
# `npu-opt ARGS` with no shell syntax outside quotes: run through driver.cli.main in this process.
_IN_PROCESS = re.compile(r"npu-opt(?: .+)?")
_SHELL = set(";&|<>$`()*?[]{}~#!\\\n")
"""Characters the shell acts on outside quotes (a command holding one runs in a shell)."""


def _plain(command: str) -> bool:
    """Whether the shell would pass `command`'s words on unchanged: no shell syntax outside
    quotes, nothing expanded inside double quotes (`$`, a backquote, a backslash)."""
    quote = None
    for ch in command:
        if quote == "'":
            quote = None if ch == "'" else quote
        elif quote == '"':
            if ch in '$`\\':
                return False
            quote = None if ch == '"' else quote
        elif ch in "'\"":
            quote = ch
        elif ch in _SHELL:
            return False
    return quote is None


@attrs.frozen
class Block:
    page: Path
    line: int
    kind: str
    body: str

    @property
    def where(self) -> str:
        page = self.page.relative_to(ROOT) if self.page.is_relative_to(ROOT) else self.page
        return f"{page}:{self.line}"

    @property
    def marker(self) -> str | None:
        first = self.body.split("\n", 1)[0]
        match = re.match(r"# (file|planned):", first)
        return match.group(1) if match else None


def pages() -> list[Path]:
    """Every page of the guide, and the README (its taste of a kernel is checked too)."""
    return sorted(p for p in DOCS.rglob("*.md") if "_hooks" not in p.parts) + [ROOT / "README.md"]


def blocks(page: Path) -> list[Block]:
    text = page.read_text()
    found = []
    for match in _FENCE.finditer(text):
        info = match.group("info").strip()
        kind = info.split()[0] if info else ""
        body = textwrap.dedent(match.group("body"))
        found.append(Block(page, text.count("\n", 0, match.start()) + 2, kind, body))
    return found


class PageRunner:
    """Runs the blocks of one page in order; records what ran."""

    def __init__(self, page: Path, workdir: Path):
        self.page, self.workdir = page, workdir
        self.namespace: dict = {"__name__": f"docs_{page.stem.replace('-', '_')}"}
        self.counts = {"python": 0, "pycon": 0, "console": 0, "planned": 0, "file": 0}
        (workdir / "examples").symlink_to(ROOT / "examples")
        self._bin: Path | None = None

    def run(self, block: Block) -> None:
        getattr(self, "_" + block.kind)(block)

    def _python(self, block: Block) -> None:
        if block.marker == "planned":
            self._planned(block)
            return
        if block.marker == "file":
            name = block.body.split("\n", 1)[0].split(":", 1)[1].strip()
            assert name.endswith(".py"), f"{block.where}: '# file:' needs a NAME.py"
            (self.workdir / name).write_text(block.body)
            importlib.invalidate_caches()
            importlib.import_module(name[:-3])
            self.counts["file"] += 1
            return
        path = self.workdir / f"block_{block.line}.py"
        path.write_text(block.body)
        exec(compile(block.body, str(path), "exec"), self.namespace)  # noqa: S102 - the guide's own code
        self.counts["python"] += 1

    def _planned(self, block: Block) -> None:
        namespace = dict(self.namespace)
        try:
            exec(compile(block.body, f"{block.where} (planned)", "exec"), namespace)  # noqa: S102
        except Exception:  # noqa: BLE001 - any failure shows the surface is still missing
            self.counts["planned"] += 1
            return
        raise AssertionError(f"{block.where}: a '# planned:' block runs now; drop the marker "
                             "and make it a real example")

    def _pycon(self, block: Block) -> None:
        test = doctest.DocTestParser().get_doctest(block.body, self.namespace, block.where, str(self.page),
                                                   block.line)
        assert test.examples, f"{block.where}: pycon block without >>> examples"
        runner = doctest.DocTestRunner(optionflags=_CHECKER_FLAGS)
        out: list[str] = []
        runner.run(test, out=out.append, clear_globs=False)
        self.namespace.update(test.globs)  # DocTest copies its globals; later blocks see its names
        assert runner.failures == 0, f"{block.where}: stale example\n" + "".join(out)
        self.counts["pycon"] += 1

    def _console(self, block: Block) -> None:
        commands = _split_console(block)
        assert commands, f"{block.where}: console block without a '$ ' command"
        for command, expected in commands:
            actual = self.shell(command)
            if not _matches(expected, actual):
                raise AssertionError(f"{block.where}: output of `{command}` differs from the page\n"
                                     f"--- page\n{expected}\n--- real\n{actual}")
        self.counts["console"] += 1

    def shell(self, command: str) -> str:
        if _IN_PROCESS.fullmatch(command) and _plain(command):
            return self._in_process(shlex.split(command)[1:])
        env = dict(os.environ, COLUMNS="88", PYTHONPATH=os.pathsep.join([str(self.workdir), str(ROOT)]),
                   PATH=os.pathsep.join([self._scripts(), str(Path(sys.executable).parent),
                                         os.environ.get("PATH", "")]))
        env.pop("CI", None)  # a nested pytest run must not inherit CI behaviour
        proc = subprocess.run(command, shell=True, cwd=self.workdir, env=env, capture_output=True, text=True,
                              timeout=120)
        return proc.stdout + proc.stderr

    def _scripts(self) -> str:
        """A directory holding `npu-opt` as pyproject.toml's [project.scripts] declares it, run
        from this checkout: the installed script is whatever the last `pip install` wrote."""
        if self._bin is None:
            self._bin = Path(tempfile.mkdtemp(prefix="npu-opt-bin-"))
            entry = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]["npu-opt"]
            module, function = entry.split(":")
            script = self._bin / "npu-opt"
            script.write_text(f"#!{sys.executable}\nimport sys\nfrom {module} import {function}\n"
                              f"sys.exit({function}())\n")
            script.chmod(0o755)
        return str(self._bin)

    def _in_process(self, argv: list[str]) -> str:
        """A plain `npu-opt ...` command runs in this process (no interpreter start-up)."""
        from driver.cli import main

        return self._captured(lambda: main(argv))

    def _captured(self, run) -> str:
        """What `run()` prints (stdout, then stderr, as a shell shows a command's), run in the
        page's directory with `sys.argv` restored after."""
        out, err = io.StringIO(), io.StringIO()
        cwd, argv = os.getcwd(), sys.argv[:]
        os.chdir(self.workdir)
        try:
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                try:
                    run()
                except SystemExit:  # argparse exits on --help and on usage errors
                    pass
        finally:
            os.chdir(cwd)
            sys.argv[:] = argv
        return out.getvalue() + err.getvalue()

    def close(self) -> None:
        if self._bin is not None:
            shutil.rmtree(self._bin, ignore_errors=True)
        for name, module in list(sys.modules.items()):
            if str(getattr(module, "__file__", "") or "").startswith(str(self.workdir)):
                del sys.modules[name]


def _split_console(block: Block) -> list[tuple[str, str]]:
    commands: list[tuple[str, list[str]]] = []
    for line in block.body.rstrip("\n").split("\n"):
        if line.startswith("$ "):
            commands.append((line[2:], []))
        else:
            assert commands, f"{block.where}: output before the first '$ ' command"
            commands[-1][1].append(line)
    return [(c, "\n".join(out)) for c, out in commands]


def _matches(expected: str, actual: str) -> bool:
    want = "\n".join(line.rstrip() for line in expected.strip("\n").split("\n")) + "\n"
    got = "\n".join(line.rstrip() for line in actual.strip("\n").split("\n")) + "\n"
    if want.strip() == "":
        return got.strip() == ""
    return doctest.OutputChecker().check_output(want, got, _CHECKER_FLAGS)
