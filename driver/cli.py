"""The `npu-opt` command line (docs/reference/cli.md)."""

from __future__ import annotations

import contextlib
import gc
import os
import sys
import types
from typing import TYPE_CHECKING, Any

from driver.bytecode_home import keep_bytecode_in_cache
from driver.crash_guard import USER_CODE, child_exit, supervised
from driver.exit_codes import EXIT_ICE, EXIT_INTERRUPTED, EXIT_PIPE, EXIT_USAGE
from ir.errors import MappingError, exception_text

if TYPE_CHECKING:
    import argparse

__all__ = ["main", "build_parser"]


def _quiet_stdout() -> None:
    """Point stdout at /dev/null so the interpreter's final flush cannot fail again."""
    with contextlib.suppress(OSError, ValueError):
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The argument parser with every subcommand, or with `command`'s alone when it names
    one (driver/cli_parser.py: its source is not even compiled by a plain warm `compile`)."""
    from driver.cli_parser import build_parser as build

    return build(command, _compile)


def _compile(args: argparse.Namespace) -> int:
    if args.backend == "npu" and not (args.no_cache or args.dump_ir or args.dump_schedule):
        from driver.replay import replay  # a warm rebuild: no compiler loaded (driver/replay.py)

        status = replay(args.paths, args.out_dir, args.target, args.filter, not args.no_compat, args.format,
                        args.color, **({"deny_warnings": True} if "warnings" in args.deny else {}))
        if status is not None:
            return status
    from npu_opt.fault_owner import install_sigint
    from driver.compile_command import run_compile

    install_sigint()  # here, not in `main`: a replay runs no user code and need not load `signal`

    return run_compile(args.paths, args.out_dir, backend=args.backend, target=args.target,
                       pattern=args.filter, dump_ir=args.dump_ir, jobs=args.jobs,
                       compat=not args.no_compat, fmt=args.format, cached=not args.no_cache, color=args.color,
                       dump_schedule=args.dump_schedule, deny_warnings="warnings" in args.deny)


def _fewer_collections() -> None:
    """Let the cyclic garbage collector run after 200,000 more live container objects, not
    700: a compile's start-up creates some 150,000 that live to the end (modules, classes,
    the traced and lowered kernel), and with the default threshold collecting them over and
    over was about a tenth of compiling one kernel (issue 29). Objects freed by reference
    counting never count toward the threshold, so garbage cannot pile up unbounded."""
    gc.set_threshold(200_000, *gc.get_threshold()[1:])


# `compile`'s options a plain command line uses, parsed without argparse (`_plain_compile`).
_VALUED = {"-o": "out_dir", "--target": "target", "--filter": "filter", "--jobs": "jobs", "--format": "format",
           "--color": "color"}
_FLAGS = {"--no-compat": "no_compat", "--no-cache": "no_cache"}
_CHOICES = {"format": ("human", "json", "github"), "color": ("auto", "always", "never")}
_DEFAULTS = dict(out_dir=".", backend="npu", target=None, filter=None, dump_ir=None, jobs=None, no_compat=False,
                 format="human", color="auto", no_cache=False, dump_schedule=None, deny=[])


def _plain_compile(words: list[str]) -> Any:
    """The arguments of `npu-opt compile PATH... [-o DIR] [--target T] [--filter G] [--jobs N]
    [--format F] [--color C] [--no-compat] [--no-cache]`, exactly as the argument parser reads them, when
    `words` is such a command line written plainly (the paths in one run, each option once
    and spelt out, no value starting with `-`); else None, and the parser reads `words`.
    A warm compile is then answered without importing argparse (driver/replay.py)."""
    if words[:1] != ["compile"]:
        return None
    got: dict[str, Any] = {}
    at: list[int] = []  # where the paths are
    i = 1
    while i < len(words):
        word = words[i]
        if not word.startswith("-"):
            at.append(i)
            i += 1
            continue
        dest = _VALUED.get(word) or _FLAGS.get(word)
        if dest is None or dest in got:
            return None
        if word in _FLAGS:
            got[dest] = True
            i += 1
            continue
        if i + 1 >= len(words) or words[i + 1].startswith("-"):
            return None
        value: Any = words[i + 1]
        if dest == "jobs":
            try:
                value = int(value)
            except ValueError:
                return None
        if value not in _CHOICES.get(dest, (value,)) or value == "" or (dest == "jobs" and value < 1):
            return None  # the parser refuses it
        got[dest] = value
        i += 2
    if not at or at != list(range(at[0], at[0] + len(at))):
        return None  # the parser reads one run of paths (and refuses a second one)
    return types.SimpleNamespace(**(_DEFAULTS | got), command="compile", paths=[words[k] for k in at],
                                 run=_compile)


def _usable_environment() -> str | None:
    """Why this process cannot run a command (None: it can): standard output closed, or a
    working directory that was deleted. Also lets stdout and stderr write any character
    (a `PYTHONIOENCODING=ascii` terminal gets `\\xe9` escapes, not a UnicodeEncodeError)."""

    if sys.stdout is None:
        return "standard output is closed; redirect it (e.g. > /dev/null) instead of closing it"
    for stream in (sys.stdout, sys.stderr):
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None:
            with contextlib.suppress(ValueError, OSError, TypeError):
                reconfigure(errors="backslashreplace")
    try:
        os.getcwd()
    except OSError as e:
        return f"the working directory cannot be read ({e.strerror or e}): was it deleted? cd to an existing one"
    return None


# Commands that never call a multi-threaded BLAS (the interpreter's matmuls run on one
# thread anyway: visa/interp/contract.py). Their process starts numpy's BLAS with one
# thread: OpenBLAS starting a pool of one thread per CPU costs about a third of `import
# numpy`'s CPU time (issue 38 item 6), for a pool these commands never use.
_BLAS_FREE = frozenset({"compile", "check", "explain", "explain-mapping", "targets", "schedule", "visa", "lsp"})
# The commands that may run the cpu backend's BLAS matmuls: numpy's pool as the user set it.
# Every command is in one of the two (tests/npu_opt/test_blas_threads.py).
_USES_BLAS = frozenset({"run", "tune", "synth"})


def _one_blas_thread(words: list[str]) -> None:
    """Ask numpy's OpenBLAS, not loaded yet, for one thread when the command is BLAS-free and
    the user has not chosen a thread count."""
    if words and words[0] in _BLAS_FREE and "numpy" not in sys.modules:
        os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")


def main(argv: list[str] | None = None) -> int:
    """Entry point of the console script; returns the exit status."""
    problem = _usable_environment()
    if problem is not None:
        print(f"error[USAGE]: {problem}", file=sys.stderr)
        return EXIT_USAGE
    own = argv is None  # the process's own command line (console script, `python -m`): it exits after
    words = sys.argv[1:] if argv is None else argv
    if own:
        _fewer_collections()
        _one_blas_thread(words)
        keep_bytecode_in_cache()
    args = _plain_compile(words)
    if args is None:
        parser = build_parser(words[0] if words else None)
        args = parser.parse_args(argv)
        if not hasattr(args, "run"):
            parser.print_help()
            return EXIT_USAGE
    if own and args.command in USER_CODE:  # a crash of the user's native code is reported (driver/crash_guard.py)
        status = supervised()
        if status is not None:
            gc.freeze()
            return status
        child_exit(_run(args, own))
    return _run(args, own)


def _run(args: Any, own: bool) -> int:
    """Run the parsed command; its exit status."""
    if args.run is not _compile:  # `_compile` installs it once it compiles (no replay)
        from npu_opt.fault_owner import install_sigint

        install_sigint()
    try:
        status = args.run(args)
        sys.stdout.flush()  # a closed pipe shows here, not in the interpreter's final flush
        if own:  # the interpreter's exit then skips searching every object for cycles (~0.1 s, issue 29)
            gc.freeze()
        return status
    except MappingError as e:
        print(f"error[{e.code}]: {e}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print("npu-opt: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except BrokenPipeError:  # `npu-opt check ... | head`: the reader left; say nothing more
        _quiet_stdout()
        return EXIT_PIPE
    except OSError as e:  # the report cannot be written (stdout on /dev/full...), a file cannot be read
        if e.filename is not None:
            print(f"error[USAGE]: {e.strerror or e}: {e.filename}", file=sys.stderr)
            return EXIT_USAGE
        _quiet_stdout()
        print(f"error[USAGE]: cannot write the output: {e.strerror or e}", file=sys.stderr)
        return EXIT_USAGE
    except Exception as e:  # noqa: BLE001 - an interruption, or npu-opt's own failure (an ICE)
        from npu_opt.fault_owner import interrupted  # loaded already: only a traced file installs handlers

        if not interrupted(e):
            print(f"error[ICE]: internal compiler error: {type(e).__name__}: {exception_text(e)}; please report "
                  "this npu-opt bug with the command line and this message", file=sys.stderr)
            return EXIT_ICE
        print(f"npu-opt: interrupted: a signal handler raised {type(e).__name__}", file=sys.stderr)
        return EXIT_INTERRUPTED


if __name__ == "__main__":
    sys.exit(main())
