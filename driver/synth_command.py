"""`npu-opt synth "<einsum>" --dtype --sizes -o DIR`: the command line of driver/synth.py.

Exit 0: a winner (its source, artifact and report written to `-o`); 1: no candidate compiled
and passed its check (the report, with the count of candidates each rule refused, is still
written); 2: a bad spec or invocation (USAGE); 3: a candidate hit an internal compiler error.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import Any, TextIO

from ir.errors import NpuOptError

from driver.synth import summary, synthesize
from driver.tune_command import _progress
from synth import contraction, parse_sizes
from tu_ops.target import get_target

__all__ = ["synth_command", "with_estimate"]


def with_estimate(total: int, err: TextIO, clock: Callable[[], float] = time.monotonic) -> Callable[[Any], None]:
    """tune's progress line for each finished candidate, after the count done of `total`, the
    time so far and an estimate of the time left (the mean time a candidate took so far)."""
    start, done = clock(), [0]

    def progress(c: Any) -> None:
        done[0] += 1
        spent = clock() - start
        left = spent / done[0] * (total - done[0])
        err.write(f"[{done[0]}/{total}, {spent:.0f} s, about {left:.0f} s left] ")
        _progress(c, err)
    return progress


def synth_command(args: Any) -> int:
    """Run `npu-opt synth` for parsed `args`; the exit status."""
    try:
        if args.out_dir == "":
            raise NpuOptError("-o takes a directory (write -o . for the working directory)", code="USAGE")
        if args.jobs < 1:
            raise NpuOptError(f"--jobs takes a positive count, not {args.jobs}", code="USAGE")
        if args.top < 1:
            raise NpuOptError(f"--top takes a positive count of candidates to check, not {args.top}", code="USAGE")
        if args.seed < 0:  # numpy's generator takes no negative seed
            raise NpuOptError(f"--seed takes a non-negative integer, not {args.seed}", code="USAGE")
        chips = max(get_target(args.target).chips)
        spec = contraction(args.einsum, dtype=args.dtype, sizes=parse_sizes(args.sizes), name=args.name,
                           pe=args.pe, chips=chips, split=args.split, transpose=args.transpose)
        space = spec.space()
        count = len(space.points())
        print(f"synthesizing {spec.name}: {count} candidate(s) ("
              + " x ".join(f"{len(v)} {k}" for k, v in space.params) + ")", file=sys.stderr)
        result = synthesize(spec, args.out_dir, target=args.target, jobs=args.jobs, scheduler=args.scheduler,
                            top=args.top, seed=args.seed, progress=with_estimate(count, sys.stderr))
    except NpuOptError as e:
        print(f"error[{e.code}]: {e}", file=sys.stderr)
        return 2
    tuned = result.tune
    sys.stdout.write(result.text)
    if tuned.count("ice"):
        return 3
    if tuned.winner is None:  # the summary's last line counts the refusals by rule
        print("synth: no candidate compiled and passed its check; " + summary(spec, tuned)[-1], file=sys.stderr)
        return 1
    sys.stdout.write(f"wrote {result.source_path} and its artifact {result.source_path.with_suffix('.visa')}\n")
    return 0
