"""Bounds of the makespan model above a whole contraction and a kernel's work, in cycles.

`roofline(rates, Demand(...))`: the fewest cycles the schedule model allows ANY kernel of a
contraction, from what every such kernel must do and the model's own rates (no second
copy of a machine number):

- `compute`: the MACs on the contraction engines of every slice it may use, at their peak
  (`mac_peak`, the number a program step's `mac_peak` is); the contraction runs inside a
  program (its command start-up), after a DMA loaded its operands and before a DMA stores
  its result (each paying the DMA start-up), all after the launch;
- `dma`: every operand byte enters DM and every result byte leaves it through a DMA, and
  the model runs the DMAs one after another on one context; each moves its bytes at the
  slowest of the DMA engine, HBM and DM rates and pays its start-up per command (one per
  tensor at the least). On several chips that context is still one: a DMA record holds a
  command per chip and the model runs them in turn, its cycles the sum of every chip's
  bytes (tu_ops/dma_cost.py; docs/tuning.md "Why one DMA lane"). However the kernel shares
  the work between the chips, each operand byte must reach the DM of some chip and each
  result byte leave some chip's DM, so the whole contraction's bytes pass the one lane:
  the bound counts them all, not a chip's share. To that the bound adds `gap`, the least
  time the DMA context waits on a program (`program_gap`): a kernel that moves each tensor
  in one command (the fewest) cannot start its store before a program has read the last
  load's bytes and computed from them, and a kernel of more commands pays a start-up more.
  On one chip the wait counts the MACs on one cluster's slices: a kernel on both clusters
  waits at least as long (`cluster_commands`).
  On several chips a tensor split over them needs a command per chip holding a part of it
  (`Demand.parts`, `chip_commands`), and the bound is the larger of the two counts;
- `fetch`: every operand byte is fetched from DM once at the least (into the TRF or as
  the stream), by the slices at the fetch rate, main and sub fetching at once, inside a
  program, after a DMA loaded it.

Each is a real lower bound of the model's makespan of every candidate (tests/synth pins
it on a handful of spaces); the largest is the roofline.

`work(kernel, rates, target)`: what one kernel's steps cost, per context and per kind
(start-ups, DMA movement, contraction, other engine time), each step counted as many times
as its rolled loops run it; `launch + busiest context` is a lower bound of its makespan.
"""

from __future__ import annotations

import itertools
import math
from typing import TYPE_CHECKING, Any

import attrs

from visa.schedule.command_counts import chip_commands, cluster_commands
from visa.schedule.loops import step_repeats
from visa.schedule.model import Bound, launch_cycles
from visa.schedule.rates import Rates
from visa.schedule.steps import DMA_CONTEXT, Step, build_steps, mac_peak

if TYPE_CHECKING:
    from tu_ops.program import LoweredKernel
    from tu_ops.target import Target

__all__ = ["Demand", "KINDS", "Layout", "Roofline", "Work", "chip_commands", "cluster_commands", "gap_without_y",
           "program_gap", "roofline", "work"]


@attrs.frozen
class Layout:
    """Where a tensor's given elements lie in its host array: a row-major array of `shape`
    whose first `given[d]` positions along each dimension `d` are given, `itemsize` bytes
    each (the rest is padding)."""

    shape: tuple[int, ...] = attrs.field(converter=tuple)
    given: tuple[int, ...] = attrs.field(converter=tuple)
    itemsize: int

    def requests(self, request: int, limit: int = 1 << 20) -> int:
        """The fewest DMA requests of at most `request` bytes whose HBM bytes cover every given
        byte: a DMA packet is contiguous in HBM (tu_ops/dma_commands.py) and the model cuts it
        into requests of `request` bytes (tu_ops/dma_cost.py), so each request reads or writes
        one interval of at most `request` bytes, and every given byte of an operand is read,
        every given byte of the result written. The given bytes are runs (the innermost
        dimensions held whole, then the first one that is not), in address order; covering
        points of a line by intervals of one length, starting each interval at the first
        byte not yet covered covers the most, so this greedy count is the fewest. Past `limit`
        runs it counts the bytes alone (a smaller bound)."""
        run, d = self.itemsize, len(self.shape) - 1
        while d >= 0 and self.given[d] == self.shape[d]:
            run, d = run * self.shape[d], d - 1
        nbytes = run * math.prod(self.given[:d + 1])
        if d < 0 or nbytes == 0 or math.prod(self.given[:d]) > limit:
            return -(-nbytes // request)
        stride = run
        run *= self.given[d]
        strides = [stride * math.prod(self.shape[e + 1:d + 1]) for e in range(d)]  # of the outer dimensions
        count = covered = 0
        for index in itertools.product(*(range(g) for g in self.given[:d])):
            start = sum(i * s for i, s in zip(index, strides))
            first = max(start, covered)
            n = -(-(start + run - first) // request)
            count, covered = count + n, first + n * request
        return count


@attrs.frozen
class Demand:
    """What every kernel of a contraction must do: `macs` products of `bits`-bit operands over
    at most `slices` slices of each of `chips` chips, the bytes of each tensor it loads
    (`loads`) and stores (`stores`), all of them over the chips together."""

    macs: int
    bits: int
    slices: int
    loads: tuple[int, ...] = attrs.field(converter=tuple)
    stores: tuple[int, ...] = attrs.field(converter=tuple)
    chips: int = 1
    late_loads: int = 0     # the last loads only the epilogue reads, after the contraction (a bias)
    # per tensor (loads, then stores): how many chips' HBM hold a part of its given elements
    # (a tensor split over the chips); 1 for a tensor on one chip or copied whole to each
    parts: tuple[int, ...] = attrs.field(default=(), converter=tuple)
    # per tensor (loads, then stores): where its given elements lie in its host array, when the
    # host array is known (`Layout`); empty: each tensor's bytes counted as one contiguous run
    layouts: tuple[Layout, ...] = attrs.field(default=(), converter=tuple)
    # how many clusters of each chip the `slices` span (each cluster holding `slices / clusters`)
    clusters: int = 1


@attrs.frozen
class Roofline:
    """The bounds of a contraction, each counting the launch; `cycles` is the largest."""

    bounds: tuple[Bound, ...]

    @property
    def binding(self) -> Bound:
        return max(self.bounds, key=lambda b: b.cycles)

    @property
    def cycles(self) -> int:
        return self.binding.cycles


def _ceil(a: float, b: float) -> int:
    return int(-(-a // b)) if a > 0 else 0


def program_gap(dma_start: int, prog_start: int, mac_cycles: int, late_loads: int, widest: float = math.inf,
                slack: float = 0.0) -> int:
    """The fewest cycles the DMA context of any kernel spends beyond its DMAs' own: its
    start-ups and movement (`dma`) are those of one command per tensor at the least (`T`
    commands, one per tensor: no command counts for two, `chip_commands`). `widest`: the
    cycles the largest tensor's bytes take at the slowest mover (no larger tensor: `inf`,
    which drops the refinement of the `T + 1` case below); `slack`: how far the bound's
    movement is above the bytes at the slowest mover (the requests of padded host arrays).

    Let `L` be the command that ends last (at `t`) among those writing DM bytes some program
    reads on its way to a stored result (one exists: operand bytes reach DM only by DMA, and
    only programs compute), and `S` the first store, in the DMA context's order, of bytes
    computed from `L`'s. A program reading a DMA's tensor starts after that DMA ends and runs
    `prog_start` cycles at the least, and `S` starts after the programs that computed its
    bytes end: `S` starts `prog_start` after `t` at the least. `W` is `prog_start`, plus
    `mac_cycles` when the last load is one of the contraction's operands (no `late_loads`):
    every MAC reads a byte of each operand, and every MAC runs in a main-context program,
    one program at a time (only the main context has a Contraction Engine: rule CTX-2,
    docs/machine/contraction.md), at the peak of every slice at most.

    - `T` commands: each operand moves whole in one command, which is also the one that
      brings it to its programs (no command is left for a second hop), and the result in one,
      `S`; every MAC reads `L`'s bytes, so `S` starts `W` after `t` at the least, and no
      other command runs between (there is none): the context idles `W`.
    - `T + 1` commands: a command `Y` running between `t` and `S`'s start either depends on
      `L` (it moves bytes computed from `L`'s: it starts `prog_start` after `t` at the least)
      or does not. A `Y` that does not is none of the `T`: an operand's first command after
      `t` would bring bytes that reach the result through a command ending after `t` (not `L`
      then), and the result's one store is `S`. So the `T` are one command per operand, each
      its operand's only one, and the one store `S`: every result byte depends on `L` (no
      second store runs before `S`), `S` starts `W` after `t`, and `Y`, one start-up and
      bytes beyond the `T`'s, covers `dma_start` of the wait at most: `max(0, W - dma_start)`
      idles still. Without such a `Y` the context idles `V` at the least (`gap_without_y`),
      one start-up more: the gap is one start-up more and the smaller of the two idles.
    - `T + 2` commands or more: two start-ups more.
    The smallest of the three is the gap every kernel pays."""
    wait = prog_start + (mac_cycles if not late_loads else 0)
    alone = prog_start if late_loads else gap_without_y(dma_start, prog_start, mac_cycles, widest, slack)
    return int(min(wait, dma_start + min(alone, max(0, wait - dma_start)), 2 * dma_start))


def gap_without_y(dma_start: int, prog_start: int, mac_cycles: int, widest: float, slack: float) -> float:
    """What the DMA context of a kernel of `T + 1` commands (`program_gap`), none of which
    runs between `t` and `S` without depending on `L`, idles at the least (or moves beyond
    the bound's movement): `P` = `prog_start`, `D` = `dma_start`, `M` = `mac_cycles`, `W` =
    `P + M`, `Z` = `widest`, `s` = `slack`. The last operand byte is an operand's (the case
    `late_loads` is `prog_start` alone). Every given element of an operand is read by the
    same number of MACs, and every given result element needs the same number.

    After `t` the context runs only stores (a load after `t` would not reach a result: a
    `Y`). The extra command is a second store, or a second command of one operand `X`, or a
    command that reads no operand's and writes no result's HBM tensor (a copy between DMs):
    its bytes are all beyond the bound's; before `L` it leaves the `T` commands' case (`W`),
    as `L` it is case (b) below with no given bytes of its own, and after `t` it runs beside
    the one store's wait of `W` (a `Y`'s `max(D, W)` at the least, dependent on `L` or not).

    (a) Each operand in one command, two stores `S1` (= `S`), `S2`, a fraction `f` of the
    given results in `S1`. Every MAC reads `L`'s operand, so every MAC program starts after
    `t`, one after another on main. With `f > 0`: `S1` waits for the programs that computed
    its results, `P + f M` after `t` at the least. If the last MAC program computed results
    of `S1`, `S1` starts `W` after `t`; else `S2` waits for a second MAC program, `2 P + M`
    after `t`, and between them the context runs `S1` alone: its start-up and its movement,
    `f Z` at most for its share of the given bytes (the result's bytes are `Z` at most)
    plus what it moves beyond them, which the bound's movement does not count (`s` of it
    may already be counted there): it idles `max(P + f M, 2 P + M - D - f Z - s)` at least.
    With `f = 0`, `S1` holds no given result (only bytes beyond them) and `S2` starts `W`
    after `t`: `max(P, W - D - s)`.
    (b) `X` in two commands, `L` the second (`L` the single command of another operand
    makes every MAC read it: `W`), one store `S`. Let `g M` be the MAC cycles of the given
    MACs in programs starting after `t`; the MACs that read given elements of `X` only `L`
    brings run there, so `L` moves `g Z` of given bytes at most, plus bytes beyond. Every
    MAC program starts after the command before `L` ends, `D` and `L`'s movement before
    `t` (what the context idles between them only adds). With `0 < g < 1` there are two MAC
    programs at least, one starting after `t`: `S` starts `max(P + g M, 2 P + M - D - g Z
    - s)` after `t` at the least; with `g = 1`, `W`; with `g = 0`, `max(P, W - D - s)`.

    The smaller of `P + M f*` (`f* = (P + M - D - s) / (M + Z)`, within 0 and 1, where the
    two terms meet) and `max(P, W - D - s)` is what (a) and (b) idle at the least."""
    p, m = prog_start, mac_cycles
    meet = min(1.0, max(0.0, (p + m - dma_start - slack) / (m + widest))) if m + widest > 0 else 0.0
    return min(p + m * meet, max(p, p + m - dma_start - slack))


def roofline(rates: Rates, c: Demand) -> Roofline:
    """The lower bounds of every kernel of `c` (the module docstring)."""
    launch = launch_cycles(rates)
    dma_start = int(rates("dma", "startup_cycles"))
    prog_start = int(rates("tensor_unit", "command_startup_cycles"))
    peak = mac_peak(rates, c.bits)
    slices = c.slices * c.chips  # the MACs and the fetches spread over every chip's slices, the DMAs do not
    mac_cycles = _ceil(c.macs, peak * slices)
    moved = sum(c.loads) + sum(c.stores)
    # a DMA's cycles are its start-up plus the slowest of the engine (a request of `request_bytes`
    # at most per `request_bytes / engine_bytes_per_cycle` cycles), HBM and DM: per byte, the slowest rate
    movers = {"the DMA engine": rates("dma", "engine_bytes_per_cycle"), "HBM": rates("hbm", "chip_bytes_per_cycle"),
              "DM": rates("dm", "chip_bytes_per_cycle")}
    slowest = min(movers, key=lambda k: movers[k])
    movement = _ceil(moved, movers[slowest])
    if c.layouts:  # the engine's requests over the host arrays' layouts (`Layout.requests`), the others' bytes
        request = int(rates("dma", "request_bytes"))
        cover = sum(t.requests(request) for t in c.layouts)
        times = {"the DMA engine": _ceil(cover * request, movers["the DMA engine"]),
                 **{k: _ceil(moved, v) for k, v in movers.items() if k != "the DMA engine"}}
        slowest = max(times, key=lambda k: times[k])
        movement = times[slowest]
    commands = len(c.loads) + len(c.stores)
    rate = movers[min(movers, key=lambda k: movers[k])]
    widest = max((*c.loads, *c.stores), default=math.inf) / rate  # the largest tensor's cycles at the slowest mover
    # the wait counts the MACs on one cluster's slices: on one chip, a kernel whose MACs run on two
    # clusters waits at least as long (`cluster_commands`)
    gap_macs = _ceil(c.macs, peak * (c.slices // c.clusters)) if c.chips == 1 and c.clusters > 1 else mac_cycles
    gap = program_gap(dma_start, prog_start, gap_macs, c.late_loads, widest=widest, slack=movement - moved / rate)
    waits = (f"{gap} cycles waiting on a program between the last load and the store (or the start-ups of more "
             f"commands)")
    if chip_commands(c) * dma_start > commands * dma_start + gap:  # a command per chip part of a split tensor
        commands, gap = chip_commands(c), 0
        waits = "a command per chip holding a part of a tensor split over the chips"
    fetch_rate = rates("tensor_unit", "fetch_bytes_per_cycle") * slices * 2  # main and sub contexts
    fetched = sum(c.loads)
    return Roofline((
        Bound("compute", launch + dma_start + prog_start + mac_cycles + dma_start,
              f"{c.macs:,} MACs at {peak} per cycle on each of {slices} slices: {mac_cycles:,} cycles, in a program "
              f"(start-up {prog_start}) between a DMA load and a DMA store (start-up {dma_start} each), "
              f"after the {launch}-cycle launch"),
        Bound("dma", launch + commands * dma_start + movement + gap,
              f"{moved:,} bytes between HBM and DM at {slowest}'s {movers[slowest]:g} B per cycle"
              f"{_requests(c, rates) if slowest == 'the DMA engine' else ''}: "
              f"{movement:,} cycles, {commands} DMA commands' start-ups ({dma_start} each), "
              f"{waits}, the launch ({launch})"),
        Bound("fetch", launch + dma_start + prog_start + _ceil(fetched, fetch_rate),
              f"{fetched:,} operand bytes fetched from DM at {fetch_rate:g} B per cycle (main and sub on "
              f"{slices} slices): {_ceil(fetched, fetch_rate):,} cycles, after a DMA load and a program start-up"),
    ))


def _requests(c: Demand, rates: Rates) -> str:
    """How many requests the engine's share counts, where padding in a host array adds some."""
    if not c.layouts:
        return ""
    request = int(rates("dma", "request_bytes"))
    cover = sum(t.requests(request) for t in c.layouts)
    plain = sum(-(-t.itemsize * math.prod(t.given) // request) for t in c.layouts)
    return "" if cover == plain else f" ({cover:,} requests of {request} B: padding between the given elements)"


KINDS = ("launch", "dma start-up", "dma movement", "program start-up", "contraction", "engines", "other")
"""What a kernel's cycles go to (`Work.parts`): the launch; the DMA commands' start-ups and
their bytes' movement; the MAIN/SUB programs' command start-ups, their contraction engine at
its peak, and the rest of their engines' time (fetch, commit, vector passes beyond the
contraction); other steps (runtime scalars)."""


@attrs.frozen
class Work:
    """One kernel's busy cycles per context and kind (`KINDS`), every step counted once per
    iteration of the rolled loops around it; `commands` the DMA commands it issues, `programs`
    the programs, `dma_bytes` the bytes its DMAs move, `penalty` the DMA cycles spent on HBM's
    alignment penalties."""

    launch: int
    contexts: dict[str, dict[str, int]]
    commands: int
    programs: int
    dma_bytes: int
    penalty: int

    def busy(self, context: str) -> int:
        return sum(self.contexts.get(context, {}).values())

    @property
    def busiest(self) -> str:
        return max(self.contexts, key=self.busy)

    @property
    def bound(self) -> int:
        """No schedule of the kernel is shorter: a context runs its steps one at a time."""
        return self.launch + self.busy(self.busiest)

    def parts(self) -> dict[str, int]:
        """Cycles per kind over all contexts (the launch once)."""
        out = {"launch": self.launch}
        for parts in self.contexts.values():
            for k, v in parts.items():
                out[k] = out.get(k, 0) + v
        return out


def _add(parts: dict[str, int], times: int, cycles: dict[str, int]) -> None:
    for kind, n in cycles.items():
        if times * n:
            parts[kind] = parts.get(kind, 0) + times * n


def work(kernel: LoweredKernel, rates: Rates, target: Target, steps: list[Step] | None = None) -> Work:
    """The work of a lowered kernel's steps (the module docstring); `steps`: the kernel's
    `build_steps`, when the caller already built them."""
    steps = build_steps(kernel, rates, target) if steps is None else steps
    contexts: dict[str, dict[str, int]] = {}
    commands = programs = moved = penalty = 0
    for step, n in zip(steps, step_repeats(kernel)):
        parts = contexts.setdefault(step.context, {})
        if step.dma is not None:
            d = step.dma
            _add(parts, n, {"dma start-up": d.startup, "dma movement": step.duration - d.startup})
            commands += n * (d.startup // max(int(rates("dma", "startup_cycles")), 1))
            moved += n * d.bytes
            if d.hbm_penalty:
                penalty += n * max(0, d.hbm_cycles - max(d.engine_cycles, d.dm_cycles))
        elif step.context != DMA_CONTEXT:
            mac = _ceil(step.macs, step.mac_peak) if step.macs and step.mac_peak else 0
            _add(parts, n, {"program start-up": step.startup, "contraction": min(mac, step.duration - step.startup),
                            "engines": max(0, step.duration - step.startup - mac)})
            programs += n
        else:
            _add(parts, n, {"other": step.duration})
    return Work(launch=launch_cycles(rates), contexts=contexts, commands=commands, programs=programs, dma_bytes=moved,
                penalty=penalty)


