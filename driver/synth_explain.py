"""How good `npu-opt synth`'s winner is and why it won (docs/synth.md, "How good is the winner").

- `spec_roofline(spec, target)`: the fewest cycles the schedule model allows any kernel of
  the contraction (`visa.schedule.bounds.roofline`, from the contraction's MACs and bytes
  and the machine's slices);
- `explanation(spec, space, result, roof, target)`: the winner's work per kind (start-ups,
  DMA movement, contraction, the other engines), which of them binds it, the bytes its DMAs
  move of each tensor against the tensor's size (`tensor_bytes`: an operand copied to
  several slices shows as moved more than once), and what the runner-up (the fastest
  candidate with a longer makespan) spends more on; as lines for synth.txt and as data for
  synth.json.
"""

from __future__ import annotations

import math
from typing import Any

from backends.npu import compile_kernel
from driver.tune import Candidate, TuneResult
from driver.tune_eval import target_rates
from ir.dtypes import DType
from ir.topology import pe_space
from synth import Contraction
from tu_ops.dma import DmaOp
from tu_ops.program import LoweredKernel
from tu_ops.target import Target, for_chips, get_target
from visa.schedule.bounds import Demand, Layout, Roofline, Work, roofline, work
from visa.schedule.loops import step_repeats
from visa.schedule.rates import Rates
from visa.schedule.steps import Step, build_steps

__all__ = ["CLASSES", "demand", "efficiency", "explanation", "spec_roofline", "tensor_bytes"]

CLASSES = {"dma movement": "HBM<->DM movement", "dma start-up": "start-up", "program start-up": "start-up",
           "launch": "start-up", "contraction": "compute", "engines": "DM/TRF movement", "other": "start-up"}
"""The kind of a kernel's cycles (visa.schedule.bounds.KINDS) -> the bound it counts toward."""


def _bytes(dtype: str) -> int:
    return DType(dtype).bits // 8


def demand(spec: Contraction) -> Demand:
    """What every kernel of `spec` must do: the given sizes' MACs and tensors (the padding is
    a choice of the kernel, not of the contraction), over all of its chips; and where the
    given elements lie in the host arrays every synth kernel takes (`Contraction.pad`: a
    padded row of results is written in whole 256-byte requests, padding included)."""
    sizes = spec.kernel_sizes  # a merged row index (docs/synth.md) by its parts' product

    def nbytes(indices: tuple[str, ...], dtype: str) -> int:
        return math.prod(sizes[i] for i in indices) * _bytes(dtype)
    def parts(indices: tuple[str, ...]) -> int:
        """The chips whose HBM holds given elements of a tensor indexed `indices` (the host
        tensor's part c of the split index is chip c's; a tensor without it is copied whole)."""
        if spec.chips == 1 or spec.split not in indices:
            return 1
        return min(spec.chips, -(-sizes[spec.split] // spec.padded[spec.split]))
    tensors = [idx for _, idx in spec.operands]
    loads = [nbytes(idx, spec.dtype_in) for idx in tensors]
    late = 0
    if spec.epilogue is not None and spec.epilogue.bias:  # read by the epilogue only, after the contraction
        loads.append(nbytes((spec.epilogue.bias[1],), spec.dtype_out))
        tensors.append((spec.epilogue.bias[1],))
        late = 1
    clusters, per_cluster = pe_space(spec.pe)
    # where each tensor's given elements lie in its host array (`Contraction.pad`); several chips'
    # host arrays (synth/target.to_host) are counted as contiguous bytes
    given = {**spec.sizes, **sizes}
    stored = [spec.stored(name) for name, _ in spec.operands] + tensors[2:] + [spec.result[1]]
    dtypes = [spec.dtype_in] * 2 + [spec.dtype_out] * (len(tensors) - 2) + [spec.result_dtype]
    layouts = [] if spec.chips != 1 else [
        Layout(spec.shape(idx), tuple(given[i] for i in idx), _bytes(dt)) for idx, dt in zip(stored, dtypes)]
    return Demand(macs=math.prod(sizes.values()), bits=DType(spec.dtype_in).bits, slices=clusters * per_cluster,
                  loads=loads, stores=[nbytes(spec.result[1], spec.result_dtype)], chips=spec.chips, late_loads=late,
                  parts=[parts(idx) for idx in tensors + [spec.result[1]]], layouts=layouts,
                  clusters=clusters)


def spec_roofline(spec: Contraction, target: str = "rngd") -> Roofline:
    return roofline(target_rates(target), demand(spec))


def efficiency(c: Candidate, roof: Roofline) -> float | None:
    """A candidate's makespan over the contraction's roofline (1.0: no kernel could be faster)."""
    return None if c.makespan is None else c.makespan / roof.cycles


def _lowered(space: Any, c: Candidate, target: str) -> tuple[Any, Any, Any]:
    """A candidate's kernel compiled once more, lowered, with the rates and the target (of its
    chips) that `work` and `tensor_bytes` count it under."""
    kernel = space.factory(**c.params)
    tgt = get_target(target)
    outcome = compile_kernel(kernel, tgt)
    return outcome.artifact.kernel, target_rates(target), for_chips(tgt, kernel.chips)


def tensor_bytes(kernel: LoweredKernel, rates: Rates, target: Target,
                 steps: list[Step] | None = None) -> dict[str, int]:
    """The bytes a lowered kernel's DMAs move of each HBM tensor (by parameter name; "other"
    for an HBM tensor that is no parameter), counted as `work` counts `dma_bytes` (each DMA
    as many times as its rolled loops run it; on several chips every chip's bytes): a load
    counts for the tensor it reads, a store for the tensor it writes (a `dma_into` writes a
    new version of its `into` tensor, the same parameter), an HBM -> HBM copy for its source, a
    DM -> DM copy for "other". `steps`: the kernel's `build_steps`, when the caller built them."""
    names = {p.ref.id: p.name for p in kernel.params}
    out: dict[str, int] = {}
    for op, step, n in zip(kernel.steps, build_steps(kernel, rates, target) if steps is None else steps,
                            step_repeats(kernel)):
        if not isinstance(op, DmaOp) or step.dma is None:
            continue
        into = getattr(op, "into", None)
        if into is not None and into.id in names:  # the stored version is the same tensor
            names[op.result.id] = names[into.id]
        src, dst = op.kind.value
        ref = op.src if src == "hbm" else op.result if dst == "hbm" else None  # DM -> DM: no HBM tensor
        name = names.get(ref.id, "other") if ref is not None else "other"
        out[name] = out.get(name, 0) + n * step.dma.bytes
    return out


def _classes(w: Work, context: str | None = None) -> dict[str, int]:
    """Cycles per bound class, of one context (default: all, the launch included)."""
    out: dict[str, int] = {}
    parts = w.parts() if context is None else w.contexts.get(context, {})
    for kind, n in parts.items():
        out[CLASSES[kind]] = out.get(CLASSES[kind], 0) + n
    return out


_CONTEXT = {"tdma": "DMA context", "main": "main context", "sub": "sub context"}
_WORDS = {"dma start-up": "DMA start-ups", "dma movement": "DMA movement", "program start-up": "program start-ups",
          "contraction": "the contraction", "engines": "fetch, commit and the other engines", "other": "other steps"}


def _binding(w: Work) -> str:
    """The bound class that takes most of the busiest context's cycles."""
    parts = _classes(w, w.busiest)
    return max(parts, key=lambda k: parts[k])


def _kinds_text(parts: dict[str, int]) -> str:
    return ", ".join(f"{_WORDS.get(k, k)} {v:,}" for k, v in sorted(parts.items(), key=lambda kv: (-kv[1], kv[0])) if v)


def _per_tensor(moved: dict[str, int], sizes: dict[str, int]) -> str:
    """`name bytes (Nx its size)` for each tensor the contraction moves, in its order, then any
    other HBM tensor the kernel moves."""
    parts = [f"{name} {moved.get(name, 0):,} ({moved.get(name, 0) / size:.2f}x its {size:,})"
             for name, size in sizes.items()]
    return ", ".join(parts + [f"{name} {b:,}" for name, b in moved.items() if name not in sizes])


def _tensor_sizes(spec: Contraction, need: Demand) -> dict[str, int]:
    """Each tensor's bytes the contraction moves (`need`, its `demand`: loads and stores), by name."""
    names = [name for name, _ in spec.operands]
    if spec.epilogue is not None and spec.epilogue.bias:
        names.append(spec.epilogue.bias[0])
    return dict(zip(names + [spec.result[0]], list(need.loads) + list(need.stores)))


def _winner_lines(c: Candidate, w: Work, needed: int) -> list[str]:
    ctx = w.busiest
    return [f"why: the winner is bound by {_binding(w)}: its {_CONTEXT.get(ctx, ctx)} is busy {w.busy(ctx):,} cycles "
            f"({_kinds_text(w.contexts[ctx])}); with the {w.launch:,}-cycle launch that is {w.bound:,} of its "
            f"{c.makespan:,}, the other {c.makespan - w.bound:,} are waits between dependent steps",
            f"  it issues {w.commands} DMA command(s) moving {w.dma_bytes:,} bytes ({w.dma_bytes / needed:.2f}x the "
            f"{needed:,} the contraction needs) and runs {w.programs} program(s)"
            + (f"; {w.penalty:,} DMA cycles are HBM alignment penalties" if w.penalty else "")]


def _because(cls: str, w: Work, rw: Work) -> str:
    """Why the runner-up spends more cycles of bound class `cls` than the winner, in words."""
    if cls == "HBM<->DM movement":
        if rw.penalty - w.penalty > (rw.dma_bytes - w.dma_bytes) / 256:
            return (f"its HBM accesses are partial or unaligned ({rw.penalty:,} cycles of penalties to the "
                    f"winner's {w.penalty:,})")
        return (f"it moves {rw.dma_bytes - w.dma_bytes:,} more bytes between HBM and DM (operands copied to more "
                "slices, or moved more than once)")
    if cls == "start-up":
        return (f"it issues {rw.commands} DMA commands and {rw.programs} programs to the winner's {w.commands} and "
                f"{w.programs}, each paying its start-up")
    if cls == "compute":
        return "its contraction runs longer on each slice (fewer slices, or shorter packets)"
    return "its slices fetch and commit more (operands re-read, narrower commits)"


def _versus(c: Candidate, w: Work, r: Candidate, rw: Work) -> list[str]:
    """Why `c` (work `w`) beats `r` (work `rw`): the bound classes `r` spends more cycles on, and why."""
    mine, theirs = _classes(w), _classes(rw)
    diff = {k: theirs.get(k, 0) - mine.get(k, 0) for k in set(mine) | set(theirs)}
    order = sorted(diff, key=lambda k: (-abs(diff[k]), k))  # largest first, ties by name: the same text every run
    more = {k: diff[k] for k in order if diff[k] > 0}
    less = {k: -diff[k] for k in order if diff[k] < 0}
    span = (f"makespan {r.makespan:,}, {r.makespan / c.makespan:.2f}x the winner's" if r.makespan is not None else
            f"pruned: its bound {rw.bound:,} alone is {rw.bound / c.makespan:.2f}x the winner's makespan")
    lines = [f"vs the runner-up #{r.index} ({r.label()}, {span}): it is bound by {_binding(rw)} "
             f"(its {_CONTEXT.get(rw.busiest, rw.busiest)} busy {rw.busy(rw.busiest):,})"]
    if more:
        top = max(more, key=lambda k: more[k])
        lines.append(f"  it loses on {top}: {_because(top, w, rw)}")
        lines.append("  cycles it spends beyond the winner's: " + ", ".join(f"{k} +{v:,}" for k, v in more.items())
                     + ("; fewer: " + ", ".join(f"{k} -{v:,}" for k, v in less.items()) if less else ""))
    return lines


def _runner_up(result: TuneResult) -> Candidate | None:
    """The fastest compiled candidate slower than the winner; when every other one ties or was
    pruned, the pruned one of the lowest bound."""
    w = result.winner
    slower = [c for c in result.ranked() if w is not None and c.makespan is not None and c.makespan > w.makespan]
    pruned = sorted((c for c in result.candidates if c.status == "pruned" and c.bound is not None),
                    key=lambda c: (c.bound, c.index))
    return (slower or pruned or [None])[0]


def explanation(spec: Contraction, space: Any, result: TuneResult, roof: Roofline,
                target: str = "rngd") -> tuple[list[str], dict[str, Any]]:
    """The lines synth.txt adds after its table and the same as data (the module docstring)."""
    b = roof.binding
    lines = [f"roofline: no kernel of this contraction runs in under {roof.cycles:,} cycles in the schedule model; "
             f"binding: {b.name} ({b.detail})",
             "  other bounds: " + "; ".join(f"{x.name} {x.cycles:,}" for x in roof.bounds if x is not b)]
    data: dict[str, Any] = {"roofline": {"cycles": roof.cycles, "binding": b.name,
                                         "bounds": [{"name": x.name, "cycles": x.cycles, "detail": x.detail}
                                                    for x in roof.bounds]},
                            "efficiency": None, "explanation": None}
    c = result.winner
    if c is None or c.makespan is None:
        return lines, data
    need = demand(spec)
    lowered = _lowered(space, c, target)
    steps = build_steps(*lowered)  # once: both counts walk the same steps
    w, moved = work(*lowered, steps=steps), tensor_bytes(*lowered, steps=steps)
    data["efficiency"] = round(c.makespan / roof.cycles, 4)
    lines.append(f"efficiency: the winner's makespan {c.makespan:,} is {c.makespan / roof.cycles:.2f}x the roofline "
                 "(1.00: no kernel could be faster)")
    lines += _winner_lines(c, w, sum(need.loads) + sum(need.stores))  # the DMAs of every chip
    # which tensor's copies make the bytes beyond the contraction's (an operand moved to each
    # slice of its row or column of the tile, not once)
    lines.append("  bytes moved per tensor: " + _per_tensor(moved, _tensor_sizes(spec, need)))
    entry: dict[str, Any] = {"winner": _work_json(c, w) | {"tensor_bytes": moved}, "runner_up": None}
    r = _runner_up(result)
    if r is not None:
        rw = work(*_lowered(space, r, target))  # its work only: the bytes per tensor are the winner's
        lines += _versus(c, w, r, rw)
        entry["runner_up"] = _work_json(r, rw)
    else:
        lines.append("vs the runner-up: none (every other candidate ties with the winner or was refused)")
    entry["text"] = lines[2:]
    data["explanation"] = entry
    return lines, data


def _work_json(c: Candidate, w: Work) -> dict[str, Any]:
    return {"index": c.index, "makespan": c.makespan, "bound_by": _binding(w), "busiest": w.busiest,
            "contexts": w.contexts, "launch": w.launch, "commands": w.commands, "programs": w.programs,
            "dma_bytes": w.dma_bytes, "penalty": w.penalty}
