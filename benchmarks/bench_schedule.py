"""Scheduling time versus the number of ops: the list scheduler should be linear.

A kernel of n blocks (load a tensor into one of 8 DM slots, a MAIN or SUB program
fetching and committing it, a store of the result) is written as VISA text, parsed
once, then scheduled (`visa.schedule.schedule_artifact`: steps, hazards, list schedule,
bounds). Printed: the time of n = 100 blocks (the baseline, measured in this run) and of
10x the blocks, and their ratio; the target is a ratio of at most 12.
Run: python benchmarks/bench_schedule.py
"""

from __future__ import annotations

import sys
import timeit
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.visa.schedule.handmade import COST, HEAD, dma_in, dma_out, program  # noqa: E402
from visa import parse_visa  # noqa: E402
from visa.schedule import schedule_artifact  # noqa: E402

SLOTS = 8          # DM slots the blocks cycle through (memory is reused, as kernels do)
SLOT_BYTES = 1024


def kernel_text(blocks: int) -> str:
    """VISA text of `blocks` load / program / store blocks (3 steps, 4 records each)."""
    steps, n = [], 1
    for b in range(blocks):
        base = (b % SLOTS) * SLOT_BYTES
        steps.append(dma_in(n, base))
        steps.append(program(b, n + 1, n, context="SUB" if b % 2 else "MAIN", dest=base + 8192))
        steps.append(dma_out(n + 3, n + 2))
        n += 4
    last = n - 1
    return HEAD.replace("RES", str(last)) + "\n" + "\n".join(steps) + f"\nreturn %{last}\n" + COST


def best(artifact, number: int) -> float:
    return min(timeit.repeat(lambda: schedule_artifact(artifact), number=number, repeat=5)) / number


def main() -> None:
    small, large = parse_visa(kernel_text(100)), parse_visa(kernel_text(1000))
    ops_small = sum(1 for _ in small.kernel.ops())
    ops_large = sum(1 for _ in large.kernel.ops())
    t_small, t_large = best(small, 5), best(large, 1)
    print(f"{'kernel':24} {'ops':>7} {'schedule ms':>12}")
    print(f"{'100 blocks (baseline)':24} {ops_small:>7} {1000 * t_small:>12.2f}")
    print(f"{'1000 blocks':24} {ops_large:>7} {1000 * t_large:>12.2f}")
    ratio = t_large / t_small
    print(f"ratio for {ops_large / ops_small:.0f}x the ops: {ratio:.2f} (target <= 12: "
          f"{'ok' if ratio <= 12 else 'NOT MET'})")


if __name__ == "__main__":
    main()
