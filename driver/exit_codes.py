"""The exit statuses of `npu-opt`, declared once: the commands return these constants, the
argument parser's help says them (`exit_sentence`), and the guide's tables are rendered from
`STATUSES` (docs/reference/cli.md and docs/ci.md, through `markdown_table`)."""

from __future__ import annotations

from typing import NamedTuple

__all__ = ["EXIT_OK", "EXIT_REFUSED", "EXIT_USAGE", "EXIT_ICE", "EXIT_INTERRUPTED", "EXIT_PIPE",
           "ExitStatus", "STATUSES", "COMMANDS", "statuses_of", "exit_sentence", "markdown_table"]

EXIT_OK, EXIT_REFUSED, EXIT_USAGE, EXIT_ICE = 0, 1, 2, 3
EXIT_INTERRUPTED, EXIT_PIPE = 130, 141  # 128 + SIGINT / SIGPIPE, as shells report them

# Every subcommand; `statuses_of` says which statuses each can return.
COMMANDS = ("check", "compile", "run", "visa", "schedule", "tune", "synth", "explain", "explain-mapping", "targets",
            "lsp")
_KERNELS = ("check", "compile", "run", "tune", "synth")  # commands that trace a user's kernels
_ALL = COMMANDS


class ExitStatus(NamedTuple):
    """One exit status: its number, the short words of a help line, the guide's meaning, and
    the commands that return it (every other command never does). A NamedTuple, not attrs:
    `driver.cli` reads this module on every start."""

    code: int
    short: str
    meaning: str
    commands: tuple[str, ...]


STATUSES: tuple[ExitStatus, ...] = (
    ExitStatus(EXIT_OK, "ok", "everything passed: every kernel compiled or checked, the artifact verified "
               "or ran, tune or synth found a winner", _ALL),
    ExitStatus(EXIT_REFUSED, "some kernel refused",
               "at least one kernel was refused by a rule (a `.fail` was written by `compile`; with "
               "`-D warnings` a warning refuses too); `tune` or `synth` found no candidate that compiles and passes its checks", _KERNELS),
    ExitStatus(EXIT_USAGE, "bad invocation or input",
               "a bad invocation or an input that cannot be used: a missing path, a Python syntax error, a "
               "module that raises while importing, a kernel's own Python code that raised, exited, closed "
               "npu-opt's output or crashed the process (a segmentation fault in native code) (USAGE), "
               "a corrupt or unverifiable artifact, an unknown code, an unwritable output, launch values a "
               "run-time check refuses (RUNTIME-10, GATHER-6) under `run` and `visa --exec` alike", _ALL),
    ExitStatus(EXIT_ICE, "internal compiler error",
               "an internal compiler error (ICE): npu-opt's own bug; the diagnostic (and a `.fail`) asks you "
               "to report it", _ALL),
    ExitStatus(EXIT_INTERRUPTED, "interrupted", "interrupted (Ctrl-C, SIGINT, or an exception a signal handler "
               "raised); `compile` leaves no partial artifact", _ALL),
    ExitStatus(EXIT_PIPE, "output pipe closed", "the reader of the output went away (`npu-opt check ...` "
               "piped into `head`); nothing more is printed", _ALL),
)


def statuses_of(command: str) -> tuple[ExitStatus, ...]:
    if command not in COMMANDS:
        raise KeyError(command)
    return tuple(s for s in STATUSES if command in s.commands)


def exit_sentence(command: str) -> str:
    """The closing sentence of a command's help: `Exit 0 ok, 2 bad invocation or input, ...`."""
    return "Exit " + ", ".join(f"{s.code} {s.short}" for s in statuses_of(command)) + "."


def markdown_table() -> str:
    """The guide's table: every status, what it means, and the commands that return it."""
    rows = ["| exit | meaning | returned by |", "| --- | --- | --- |"]
    for s in STATUSES:
        who = "every command" if s.commands == _ALL else ", ".join(f"`{c}`" for c in s.commands)
        rows.append(f"| {s.code} | {s.meaning} | {who} |")
    return "\n".join(rows)
