"""`npu-opt tune FILE`: tune the `npu_opt.tune.Space` a file declares (docs/tuning.md).

Exit 0: a winner (its artifact and the report written to `-o`); 1: no candidate compiled
and passed its check (the report is still written); 2: bad invocation or tune file;
3: a candidate hit an internal compiler error (the report names it).
"""

from __future__ import annotations

import json
import sys
from typing import Any, TextIO

from ir.errors import NpuOptError

from driver.tune import Candidate, tune
from driver.tune_exec import FactoryRef, load_space, space_names
from driver.tune_report import report_json, table, write_report

__all__ = ["tune_command"]


def _pick(path: str, name: str | None) -> FactoryRef:
    names = space_names(path)
    if name is None:
        if len(names) != 1:
            found = ", ".join(names) if names else "none"
            raise NpuOptError(f"{path} declares {len(names)} npu_opt.tune.Space object(s) ({found}): "
                              "name one with --space", code="USAGE")
        name = names[0]
    return FactoryRef(path, name)


def tune_command(args: Any, out: TextIO | None = None) -> int:
    """Run `npu-opt tune` for parsed `args`; the exit status."""
    out = out or sys.stdout
    try:
        ref = _pick(args.file, args.space)
        space = load_space(ref)
        progress = None if args.format == "json" else (lambda c: _progress(c, sys.stderr))
        result = tune(space, ref=ref, target=args.target, jobs=args.jobs, scheduler=args.scheduler, top=args.top,
                      prune=not args.no_prune, seed=args.seed, progress=progress)
    except NpuOptError as e:
        print(f"error[{e.code}]: {e}", file=sys.stderr)
        return 2
    write_report(result, args.out_dir)
    out.write(json.dumps(report_json(result)) + "\n" if args.format == "json" else table(result))
    if result.count("ice"):
        return 3
    return 0 if result.winner is not None else 1


def _progress(c: Candidate, err: TextIO) -> None:
    shown = f"makespan {c.makespan}" if c.makespan is not None else (c.code or c.status)
    err.write(f"{c.status:8} #{c.index} {c.label()}: {shown}\n")
