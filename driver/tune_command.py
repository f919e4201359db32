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

__all__ = ["add_tune", "tune_command"]


def add_tune(sub: Any) -> None:
    """The `tune` subcommand of the `npu-opt` parser."""
    tu = sub.add_parser("tune", help="compile every candidate of a kernel factory and keep the fastest",
                        description="Compile every point of the npu_opt.tune.Space declared in FILE, rank the "
                                    "candidates by the schedule model's makespan (pruning those whose lower bound "
                                    "exceeds the best so far), check the best against the cpu backend, the VISA "
                                    "interpreter and the space's oracle, and write the winner's artifact and "
                                    "tune.txt / tune.json / tune.svg into DIR. Exit 0 a winner, 1 none, 2 bad "
                                    "invocation or input, 3 internal error.")
    tu.add_argument("file", metavar="FILE")
    tu.add_argument("--space", default=None, metavar="NAME",
                    help="the Space to tune (default: the only one the file declares)")
    tu.add_argument("-o", dest="out_dir", default=".", metavar="DIR", help="output directory (default .)")
    tu.add_argument("--target", default="rngd", metavar="NAME", help="built-in target name (default rngd)")
    tu.add_argument("--jobs", type=int, default=1, metavar="N", help="worker processes (default 1)")
    tu.add_argument("--scheduler", default=None, metavar="ADDRESS",
                    help="a dask.distributed scheduler (tcp://host:8786) to spread the candidates over")
    tu.add_argument("--top", type=int, default=3, metavar="K", help="candidates checked against the oracle")
    tu.add_argument("--no-prune", action="store_true", help="compile and schedule every candidate")
    tu.add_argument("--seed", type=int, default=0, help="seed of the check's inputs")
    tu.add_argument("--format", choices=["human", "json"], default="human")
    tu.set_defaults(run=tune_command)


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
