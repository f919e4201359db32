"""`npu-opt tune FILE`: tune the `npu_opt.tune.Space` a file declares (docs/tuning.md).

Exit 0: a winner (its artifact and the report written to `-o`); 1: no candidate compiled
and passed its check (the report is still written); 2: bad invocation or tune file;
3: a candidate hit an internal compiler error (the report names it).
"""

from __future__ import annotations

import json
import math
import os
import stat
import sys
from typing import Any, TextIO

from ir.errors import NpuOptError

from driver.tune import Candidate, tune
from driver.tune_exec import FactoryRef, load_space, space_names
from driver.tune_report import report_json, table, write_report

__all__ = ["tune_command", "MAX_CANDIDATES"]

MAX_CANDIDATES = 10_000  # a space above it is refused unless --max-candidates raises the cap


def _pick(path: str, name: str | None) -> FactoryRef:
    names = space_names(path)
    if name is None:
        if len(names) != 1:
            found = ", ".join(names) if names else "none"
            raise NpuOptError(f"{path} declares {len(names)} npu_opt.tune.Space object(s) ({found}): "
                              "name one with --space", code="USAGE")
        name = names[0]
    return FactoryRef(path, name)


def _tune_file(path: str) -> None:
    """USAGE unless `path` names a regular file (a FIFO would block the load forever, a
    directory or a link loop would fail inside the import machinery)."""
    if not path:
        raise NpuOptError("no tune file given: `npu-opt tune FILE.py`", code="USAGE")
    try:
        mode = os.stat(path).st_mode
    except OSError as e:
        raise NpuOptError(f"{path}: {e.strerror or e}", code="USAGE") from None
    except ValueError as e:  # a NUL in the path
        raise NpuOptError(f"{path!r}: {e}", code="USAGE") from None
    if stat.S_ISDIR(mode):
        raise NpuOptError(f"{path} is a directory; `npu-opt tune` takes the .py file declaring the space",
                          code="USAGE")
    if not stat.S_ISREG(mode):
        raise NpuOptError(f"{path} is not a regular file; `npu-opt tune` takes a .py file", code="USAGE")


def _options(args: Any) -> None:
    """USAGE for option values the search cannot use, before it starts."""
    if args.out_dir == "":
        raise NpuOptError("-o takes a directory; an empty name would write into the working directory "
                          "(write -o . for that)", code="USAGE")
    if args.seed < 0:
        raise NpuOptError(f"--seed takes a non-negative integer, not {args.seed}", code="USAGE")
    if args.top < 1:
        raise NpuOptError(f"--top takes a positive count of candidates to check, not {args.top}", code="USAGE")
    if args.jobs < 1:
        raise NpuOptError(f"--jobs takes a positive count, not {args.jobs}", code="USAGE")
    if getattr(args, "max_candidates", 1) < 1:
        raise NpuOptError(f"--max-candidates takes a positive count, not {args.max_candidates}", code="USAGE")


def _size(space: Any, limit: int) -> int:
    """The space's candidate count (USAGE above `limit`: refused before anything compiles)."""
    count = len(space.points()) if space.distinct is not None else math.prod(len(v) for _, v in space.params)
    if count > limit:
        sizes = " x ".join(f"{len(values)} {name}" for name, values in space.params)
        raise NpuOptError(f"the space has {count} candidates ({sizes}); at a fraction of a second to seconds each "
                          f"that is too many to try one by one: narrow its choices, or raise the cap "
                          f"(--max-candidates {count}, default {MAX_CANDIDATES})", code="USAGE")
    return count


def tune_command(args: Any) -> int:
    """Run `npu-opt tune` for parsed `args`; the exit status."""
    try:
        _options(args)
        _tune_file(args.file)
        ref = _pick(args.file, args.space)
        space = load_space(ref)
        count = _size(space, getattr(args, "max_candidates", MAX_CANDIDATES))
        if args.format != "json":
            print(f"tuning {count} candidate(s) of {ref.attr} in {ref.path}", file=sys.stderr)
        progress = None if args.format == "json" else (lambda c: _progress(c, sys.stderr))
        result = tune(space, ref=ref, target=args.target, jobs=args.jobs, scheduler=args.scheduler, top=args.top,
                      prune=not args.no_prune, seed=args.seed, progress=progress)
    except NpuOptError as e:
        print(f"error[{e.code}]: {e}", file=sys.stderr)
        return 2
    write_report(result, args.out_dir)
    sys.stdout.write(json.dumps(report_json(result)) + "\n" if args.format == "json" else table(result))
    if result.count("ice"):
        return 3
    return 0 if result.winner is not None else 1


def _progress(c: Candidate, err: TextIO) -> None:
    shown = f"makespan {c.makespan}" if c.makespan is not None else (c.code or c.status)
    err.write(f"{c.status:8} #{c.index} {c.label()}: {shown}\n")
