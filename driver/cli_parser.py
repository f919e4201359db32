"""The argument parser of `npu-opt` and its commands other than a plain `compile`
(docs/reference/cli.md). Loaded only when a command line needs it: a warm `compile`
written plainly is read by `driver.cli` alone, without compiling this module's source."""

from __future__ import annotations

import argparse
import math
import json
from typing import Any, Callable

from ir.errors import MappingError
from driver.exit_codes import EXIT_OK, EXIT_USAGE
from driver.json_report import SCHEMA_HELP
from driver.search_parser import add_synth, add_tune, command_parser
import difflib
import re
import sys

__all__ = ["build_parser"]


class _VersionAction(argparse.Action):
    """`--version`, the installed version looked up only when asked for (importlib.metadata
    costs more than the rest of a warm `compile`)."""

    def __init__(self, option_strings: list[str], dest: str, **kwargs) -> None:
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS,
                         help="show program's version number and exit")

    def __call__(self, parser, namespace, values, option_string=None) -> None:
        from importlib.metadata import PackageNotFoundError, version

        try:
            print(f"npu-opt {version('npu-opt')}")
        except PackageNotFoundError:
            print("npu-opt 0+unknown")
        parser.exit()


def _axis_arg(text: str) -> tuple[str, int]:
    name, sep, size = text.partition("=")
    if not sep or not size.strip().isdigit():
        raise argparse.ArgumentTypeError(f"expected NAME=SIZE, got {text!r}")
    return name.strip(), int(size)


def _positive_jobs(text: str) -> int:
    """`--jobs N` of `compile`: a positive count (0 or -1 were taken, and meant one)."""
    try:
        jobs = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of worker processes, got {text!r}") from None
    if jobs < 1:
        raise argparse.ArgumentTypeError(f"--jobs takes a positive count, not {jobs}")
    return jobs


def _positive(parse: Callable[[str], float], unit: str) -> Callable[[str], float]:
    """A type for `lsp`'s limits: a finite number above 0 of `unit` (not 0, negative, nan or inf)."""
    def value(text: str) -> float:
        try:
            number = parse(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a number of {unit}, got {text!r}") from None
        if not math.isfinite(number) or number <= 0:
            raise argparse.ArgumentTypeError(f"takes a positive number of {unit}, not {text}")
        return number
    return value


def _out_dir(text: str) -> str:
    """`-o DIR` of `compile`: not empty (an empty name meant the working directory)."""
    if not text:
        raise argparse.ArgumentTypeError("-o takes a directory; an empty name would write into the working "
                                         "directory (write -o . for that)")
    return text


class _Parser(argparse.ArgumentParser):
    """argparse's parser, whose errors suggest the closest command or option ("did you mean")."""

    def error(self, message: str):  # type: ignore[override]
        super().error(message + _did_you_mean(message, self))


def _options(parser: Any) -> list[str]:
    """Every option string of `parser` and of its subcommands' parsers."""

    found = []
    for action in parser._actions:
        found += [o for o in action.option_strings if o.startswith("--")]
        if isinstance(action, argparse._SubParsersAction):
            for child in action.choices.values():
                found += _options(child)
    return found


def _did_you_mean(message: str, parser: Any) -> str:
    """`; did you mean ...?` for a mistyped command or option named in an argparse error."""

    choice = re.search(r"invalid choice: '([^']*)' \(choose from (.*)\)", message)
    if choice:
        close = difflib.get_close_matches(choice.group(1), re.findall(r"'([^']*)'", choice.group(2)), n=1)
        return f"; did you mean `{close[0]}`?" if close else ""
    unknown = re.search(r"unrecognized arguments: (.*)", message)
    if unknown:
        known = sorted(set(_options(parser)))
        hints = []
        for word in unknown.group(1).split():
            flag = word.split("=")[0]
            close = difflib.get_close_matches(flag, known, n=1) if flag.startswith("-") else []
            if close:
                hints.append(f"`{close[0]}` for `{flag}`")
        return f"; did you mean {', '.join(hints)}?" if hints else ""
    return ""


_MAX_ROWS = 10_000  # each end: --rows 10**8 would build every cell of a large mapping in memory


def _rows_arg(text: str) -> int:

    try:
        rows = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of rows, got {text!r}") from None
    if not 1 <= rows <= _MAX_ROWS:
        raise argparse.ArgumentTypeError(f"--rows must be between 1 and {_MAX_ROWS}, got {text}")
    return rows


def build_parser(command: str | None, run_compile: Callable[[Any], int]) -> argparse.ArgumentParser:
    """The argument parser with every subcommand, or with `command`'s alone when it names
    one (what parsing its arguments needs: building the others costs more than a warm
    `compile`)."""
    parser = _Parser(prog="npu-opt", description="Kernel compiler for the Furiosa RNGD tensor unit.")
    parser.add_argument("--version", action=_VersionAction)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    adders = {"explain-mapping": _add_explain_mapping, "compile": lambda s: _add_compile(s, run_compile),
              "check": _add_check,
              "visa": _add_visa, "targets": _add_targets, "explain": _add_explain, "run": _add_run,
              "schedule": _add_schedule, "tune": add_tune, "synth": add_synth, "lsp": _add_lsp}
    for name, add in adders.items():
        if command not in adders or name == command:
            add(sub)
    return parser


def _add_explain_mapping(sub) -> None:
    em = command_parser(sub, "explain-mapping", _explain_mapping,
                        help="explain a mapping expression: size, cells, normal form",
                        description="Print the size of a mapping expression, its first and last "
                                    "positions with their cells, its factor form and normalized form.")
    em.add_argument("expression", help='a mapping expression, e.g. "A / 8 # 256, A %% 8"')  # argparse: %% is %
    em.add_argument("--axes", nargs="+", type=_axis_arg, default=[], metavar="NAME=SIZE",
                    help="axis declarations, e.g. --axes A=2048 B=512")
    em.add_argument("--rows", type=_rows_arg, default=8, help=f"positions shown at each end (default 8, at most "
                                                              f"{_MAX_ROWS})")
    em.add_argument("--format", choices=["human", "json"], default="human")


# Options `compile` and `check` share, defined once so their help cannot drift apart.
_TARGET = dict(default=None, metavar="NAME|FILE", help="built-in target name or TOML/JSON file")
_FILTER = dict(default=None, metavar="GLOB", help="only kernels whose name matches GLOB")
_FORMAT = dict(choices=["human", "json", "github"], default="human", help=SCHEMA_HELP)
_COLOR = dict(choices=["auto", "always", "never"], default="auto",
              help="colour the diagnostics (auto: on a terminal unless NO_COLOR is set)")


def _add_deny(parser: Any) -> None:
    parser.add_argument("-D", dest="deny", action="append", default=[], choices=["warnings"],
                        help="-D warnings: treat every warning as an error (the kernel is refused, exit 1)")
    parser.add_argument("--deny-warnings", dest="deny", action="append_const", const="warnings",
                        help="the same as -D warnings")


def _add_compile(sub, run_compile: Callable[[Any], int]) -> None:
    co = command_parser(sub, "compile", run_compile, help="compile every @device kernel to a VISA artifact",
                        description="Compile every @device kernel found in PATH... into DIR: one "
                                    "<kernel>.visa per kernel that compiled, one <kernel>.fail per kernel "
                                    "that did not, and manifest.json (with -D warnings, a kernel with a warning is "
                                    "refused).")
    co.add_argument("paths", nargs="+", metavar="PATH")
    co.add_argument("-o", dest="out_dir", default=".", type=_out_dir, metavar="DIR",
                    help="output directory (default .)")
    co.add_argument("--backend", choices=["npu", "typecheck"], default="npu")
    co.add_argument("--target", **_TARGET)
    co.add_argument("--filter", **_FILTER)
    co.add_argument("--dump-ir", default=None, metavar="DIR", help="write the IR after every pass into DIR")
    co.add_argument("--jobs", type=_positive_jobs, default=None, metavar="N",
                    help="worker processes (default: CPU count)")
    co.add_argument("--no-compat", action="store_true", help="refuse every emulated dtype path (DTYPE-EMU)")
    co.add_argument("--format", **_FORMAT)
    co.add_argument("--color", **_COLOR)
    _add_deny(co)
    co.add_argument("--no-cache", action="store_true",
                    help="recompile every kernel: neither read nor write DIR/.npu-opt-cache (a cached result "
                         "is reused only while the kernel's file, the module search path, every module and data "
                         "file its import and trace read, every path they checked or listed, and every "
                         "environment variable they looked up are unchanged)")
    co.add_argument("--dump-schedule", default=None, metavar="DIR",
                    help="write each kernel's modelled schedule to DIR/<kernel>.schedule.json")


def _add_check(sub) -> None:
    ck = command_parser(sub, "check", _check, help="typecheck every @device kernel in files or directories",
                        description="Trace every @device kernel found in PATH... and check every "
                                    "trace-time rule.")
    ck.add_argument("paths", nargs="+", metavar="PATH")
    ck.add_argument("--filter", **_FILTER)
    ck.add_argument("--format", **_FORMAT)
    ck.add_argument("--color", **_COLOR)
    ck.add_argument("--target", **_TARGET)
    ck.add_argument("--jobs", type=int, default=None, metavar="N", help="worker processes (default 1)")
    _add_deny(ck)


def _add_visa(sub) -> None:
    vi = command_parser(sub, "visa", _visa, help="parse, verify, summarize or execute a VISA artifact",
                        description="Parse FILE (a .visa artifact) and print a summary. --verify runs every op "
                                    "verifier and re-derives every derived field; --exec verifies, then runs the "
                                    "artifact in the VISA interpreter and writes out.npy (out0.npy, ... for several "
                                    "results) and NAME.npy "
                                    "for each inout parameter into DIR.")
    vi.add_argument("file", metavar="FILE")
    vi.add_argument("--verify", action="store_true", help="run the op verifiers and re-derive every derived field")
    vi.add_argument("--exec", dest="exec_", action="store_true", help="execute the artifact on the --input arrays")
    vi.add_argument("--input", dest="inputs", action="append", default=[], metavar="NAME=FILE.npy",
                    help="bind a kernel parameter to a .npy file (repeat per parameter; needs --exec)")
    vi.add_argument("-o", dest="out_dir", default=".", metavar="DIR", help="output directory (default .)")
    vi.add_argument("--target", default=None, metavar="NAME|FILE",
                    help="the target the artifact was built for (default: the built-in target its `target` "
                         "line names; a target description file is read only when named here)")


def _add_targets(sub) -> None:
    tg = command_parser(sub, "targets", _targets, help="list the built-in targets and their capabilities",
                        description="Print every built-in target (or the target description FILE) "
                                    "with its counts, capacities and legal dtype pairs.")
    tg.add_argument("file", nargs="?", default=None, metavar="FILE", help="a TOML/JSON target description")


def _add_lsp(sub) -> None:
    ls = command_parser(sub, "lsp", _lsp, help="run the language server (stdio) for editors",
                        description="Serve the Language Server Protocol on stdin/stdout: diagnostics, "
                                    "hovers with mapping types, inlay hints, completion, signature help "
                                    "and quick fixes for kernel files (docs/editor.md). Kernel files run "
                                    "in a worker process with a time and a memory limit. Needs the lsp "
                                    "extra: pip install 'npu-opt[lsp]'.")
    ls.add_argument("--stdio", action="store_true", help="accepted for clients that pass it (stdio is the only "
                                                          "transport)")
    ls.add_argument("--time-limit", type=_positive(float, "seconds"), default=5.0, metavar="SECONDS",
                    help="seconds one check of a file may take before it is stopped (default 5)")
    ls.add_argument("--memory-limit", type=_positive(int, "MiB"), default=4096, metavar="MB",
                    help="address-space limit of the worker process, in MiB (default 4096)")


def _lsp(args: argparse.Namespace) -> int:
    from driver.lsp.supervisor import Limits, Worker

    worker = Worker(Limits(args.time_limit, args.memory_limit))
    worker.spawn()  # the worker imports npu-opt while this process loads the protocol libraries
    try:
        from driver.lsp.server import serve
    except ImportError as e:
        worker.stop()
        print(f"error[USAGE]: npu-opt lsp needs the lsp extra ({e.name or e} is missing): "
              "pip install 'npu-opt[lsp]'", file=sys.stderr)
        return EXIT_USAGE
    return serve(worker)


def _add_explain(sub) -> None:
    ex = command_parser(sub, "explain", _explain, help="print the documentation page of a diagnostic code",
                        description="Print the page of a diagnostic code: the rule, when it happens, "
                                    "an example with the real diagnostic it produces, and the fixes.")
    ex.add_argument("code", nargs="?", default=None,
                    help="a code such as COLLECT-2, MAP-syntax or USAGE (none: list every code by stage)")


def _add_run(sub) -> None:
    rn = command_parser(sub, "run", _run, help="execute a kernel on .npy inputs, write .npy outputs",
                        description="Run FILE::KERNEL on the given inputs and write out.npy (out0.npy, "
                                    "out1.npy, ... for a tuple) into DIR, and the final contents of each "
                                    "in-out (Mut) parameter as NAME.npy. bf16, f8 and f4 results are written "
                                    "as their unsigned bit patterns (uint16 for bf16, uint8 for f8/f4): view "
                                    "them with ml_dtypes, e.g. np.load('out.npy').view(ml_dtypes.bfloat16).")
    rn.add_argument("target", metavar="FILE::KERNEL")
    rn.add_argument("--input", dest="inputs", action="append", default=[], metavar="NAME=FILE.npy",
                    help="bind a kernel parameter to a .npy file (repeat per parameter)")
    rn.add_argument("--backend", default="cpu", metavar="cpu|visa", help="executing backend (default cpu)")
    rn.add_argument("--numerics", default="chip", metavar="chip|reference",
                    help="chip (default): what the chip computes; reference: float contractions folded "
                         "in furiosa-opt's host order, as a test ported from furiosa-opt expects (cpu "
                         "backend only; docs/numerics.md)")
    rn.add_argument("-o", dest="out_dir", default=".", metavar="DIR", help="output directory (default .)")


def _add_schedule(sub) -> None:
    sc = command_parser(sub, "schedule", _schedule,
                        help="model the schedule of a VISA artifact: makespan, bounds, critical path",
                        description="Schedule FILE (a .visa artifact) with npu-opt's model of the reference "
                                    "scheduler (a model, from the book's published rates): print the makespan, "
                                    "the lower bounds, the critical path and per-context utilisation. Two files: "
                                    "compare the candidates. Each is verified first (as `npu-opt visa --verify`).")
    sc.add_argument("files", nargs="+", metavar="FILE")
    sc.add_argument("--format", choices=["human", "json"], default="human")
    sc.add_argument("--trace", default=None, metavar="OUT.json", help="write a Chrome trace-event file")
    sc.add_argument("--html", default=None, metavar="OUT.html", help="write a self-contained timeline page")
    sc.add_argument("--rates", default=None, metavar="FILE", help="a scheduling rates TOML file")
    sc.add_argument("--target", default=None, metavar="NAME|FILE",
                    help="the target the artifacts were built for (default: the built-in target their "
                         "`target` line names)")
    sc.add_argument("--no-verify", action="store_true",
                    help="model an artifact the verifier refuses (a hand-written one) instead of refusing it")


def _schedule(args: argparse.Namespace) -> int:
    from driver.schedule_command import schedule_command

    return schedule_command(args.files, args.format, args.trace, args.html, args.rates, target_spec=args.target,
                            verify=not args.no_verify)


def _run(args: argparse.Namespace) -> int:
    from driver.run_command import run_command

    return run_command(args.target, args.inputs, args.backend, args.out_dir, numerics=args.numerics)


def _visa(args: argparse.Namespace) -> int:
    from driver.visa_command import visa_command

    return visa_command(args.file, args.verify, args.exec_, args.inputs, args.out_dir, target_spec=args.target)


def _targets(args: argparse.Namespace) -> int:
    from driver.targets_command import targets_command

    return targets_command(args.file)


def _explain(args: argparse.Namespace) -> int:
    from driver.explain import explain_command

    return explain_command(args.code)


def _check(args: argparse.Namespace) -> int:
    from driver.check_command import run_check

    return run_check(args.paths, args.filter, args.format, target=args.target, color=args.color, jobs=args.jobs,
                     deny_warnings="warnings" in args.deny)


def _explain_mapping(args: argparse.Namespace) -> int:
    from ir.mapping.api import m
    from driver.mapping_report import explain, render_text

    table: dict[str, int] = {}
    for name, size in args.axes:
        if name in table:
            raise MappingError("invalid_axis_decl", f"axis {name} is declared twice")
        table[name] = size
    mapping = m(args.expression, axes=table)
    info = explain(mapping, rows=max(args.rows, 1))
    print(json.dumps(info) if args.format == "json" else render_text(info))
    return EXIT_OK
