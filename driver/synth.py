"""`npu-opt synth`: from a contraction in einsum form to the fastest verified kernel, as
editable Python (docs/synth.md).

`synthesize(spec, out_dir)` writes the candidate space as an ordinary tune file
(`synth_space.py`: `npu-opt tune` runs it unchanged), runs `driver.tune.tune` on it (so
`jobs` processes and a dask `scheduler` work as for tune: the workers load that file),
then writes the winner's source `<name>.py`, its artifact `<name>.visa` and the ranked
table (`synth.txt`, `synth.json`, `synth.svg`). The candidates' source locations name the
emitted file, so compiling `<name>.py` gives the winner's artifact byte for byte; the
command checks it before it returns.
"""

from __future__ import annotations

import collections
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import attrs

from backends.npu import compile_kernel
from driver.discover import load_file  # the emitted file, imported as `check` imports it
from driver.tune import Candidate, TuneResult, with_text, tune
from driver.tune_bits import Runs
from driver.tune_exec import FactoryRef, load_space
from driver.replay import write_atomic
from driver.synth_explain import efficiency, explanation, spec_roofline
from driver.tune_report import plot_svg, report_json, table
from ir.errors import InternalError
from synth import Contraction, contraction
from synth.space import points, source, space_of
from synth.offer import proxy_sizes
from tu_ops.target import get_target
from visa.schedule.bounds import Roofline

__all__ = ["SynthResult", "proxy_checked", "refusals", "space_file", "synthesize"]


@attrs.frozen
class SynthResult:
    """The tune result of the contraction's space and the winner's source path (None when no
    candidate won)."""

    tune: TuneResult
    source_path: Path | None
    text: str = ""  # synth.txt: the summary, the table with each candidate's efficiency, the explanation


def refusals(result: TuneResult) -> dict[str, int]:
    """How many candidates each rule refused (rule ID -> count), most first."""
    counts = collections.Counter(c.code or c.status for c in result.candidates if c.status in ("refused", "error"))
    return dict(sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))


def space_file(spec: Contraction, out_dir: Path, target: str = "rngd") -> Path:
    """Write the tune file that declares the contraction's space; its path."""
    path = out_dir / "synth_space.py"
    kernel = out_dir / f"{spec.name}.py"
    again = f"npu-opt tune {path}" + ("" if target == "rngd" else f" --target {target}")
    text = (f'"""The candidates `npu-opt synth` searched for {spec.text} ({spec.dtype_in}:{spec.dtype_out}).\n\n'
            f"Search them again with `{again}`.\n"
            '"""\n\n'
            "from synth import contraction\n\n"
            f"SPACE = contraction({spec.text!r}, dtype={spec.dtype_in + ':' + spec.dtype_out!r},\n"
            f"                    sizes={spec.sizes!r}, name={spec.name!r}{_placement(spec)})"
            f".space(filename={str(kernel)!r})\n")
    write_atomic(path, text)
    return path


def _placement(spec: Contraction) -> str:
    """The `contraction(...)` arguments of a pe or chip count other than the default's."""
    return (f", pe={spec.pe}" if spec.pe != 8 else "") + \
        (f", chips={spec.chips}, split={spec.split!r}" if spec.chips > 1 else "") + \
        (f", transpose={spec.transpose!r}" if spec.transpose != "host" else "")


def synthesize(spec: Contraction, out_dir: str | Path, *, target: str = "rngd", jobs: int = 1,
               scheduler: str | None = None, top: int = 3, seed: int = 0,
               progress: Callable[[Candidate], None] | None = None) -> SynthResult:
    """Search the contraction's space and write the outputs into `out_dir` (the module docstring)."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    ref = FactoryRef(str(space_file(spec, out, target)), "SPACE")
    space = load_space(ref)
    result = tune(space, ref=ref, target=target, jobs=jobs, scheduler=scheduler, top=top, seed=seed,
                  progress=progress)
    if not space.checks:  # too large to run: the best candidates are checked at a proxy size
        result = proxy_checked(spec, space, result, top=top, seed=seed, target=target)
    src = None
    if result.winner is not None:
        src = out / f"{spec.name}.py"
        write_atomic(src, source(spec, result.winner.params))
        _same_artifact(src, spec.name, result.winner.text, target)
        write_atomic(out / f"{spec.name}.visa", result.winner.text)
    roof = spec_roofline(spec, target)
    lines, explained = explanation(spec, space, result, roof, target)
    texts = {out / "synth.txt": report_text(spec, result, roof, lines),
             out / "synth.json": json.dumps({**report(spec, result, roof), **explained}, indent=2) + "\n",
             out / "synth.svg": plot_svg(result)}
    for path, text in texts.items():
        write_atomic(path, text)
    return SynthResult(result, src, texts[out / "synth.txt"])


def proxy_checked(spec: Contraction, space: Any, result: TuneResult, *, top: int, seed: int,
                  target: str) -> TuneResult:
    """The tune result of a space too large to run, its best `top` candidates checked at
    proxy sizes (synth.offer.proxy_sizes: the same mapping, tiles and `k` split
    on a smaller result and `k`) on the cpu backend and in the interpreter against the
    numpy oracle; the winner is the fastest that passed (None: none did)."""
    candidates = list(result.candidates)
    winner = None
    for c in result.ranked()[:max(top, 1)]:
        sizes = proxy_sizes(spec, c.params)
        proxy = contraction(spec.text, dtype=f"{spec.dtype_in}:{spec.dtype_out}", sizes=sizes, name=spec.name)
        verdict = Runs(space_of(proxy, run=True), seed).check(c.params)
        at = ",".join(f"{i}={n}" for i, n in sizes.items())
        candidates[c.index] = attrs.evolve(c, checked=verdict if verdict != "pass" else f"pass at {at}")
        if verdict == "pass":
            winner = candidates[c.index]
            break
    if winner is not None and result.winner is not None and winner.index != result.winner.index:
        winner = candidates[winner.index] = with_text(space, winner, target)
    elif winner is not None and result.winner is not None:
        winner = candidates[winner.index] = attrs.evolve(winner, text=result.winner.text)
    return attrs.evolve(result, candidates=tuple(candidates), winner=winner)


def _same_artifact(path: Path, name: str, text: str | None, target: str) -> None:
    """The emitted file must compile to the winner's artifact, byte for byte (else: our bug)."""
    module, error = load_file(path)
    if error is not None:
        raise InternalError(f"synth: the emitted {path} does not load: {error.message}")
    outcome = compile_kernel(getattr(module, name), get_target(target))
    if outcome.status != "ok" or outcome.text != text:
        raise InternalError(f"synth: the emitted {path} compiles to another artifact than the search's winner "
                            f"({outcome.status})")


def summary(spec: Contraction, result: TuneResult) -> list[str]:
    """The lines synth adds above tune's table: the contraction, the space, the refusals."""
    space = points(spec)
    counts = refusals(result)
    return [f"synth of {spec.text} ({spec.dtype_in} -> {spec.dtype_out}), sizes "
             + ", ".join(f"{i}={n}" for i, n in spec.sizes.items())
             + (f" (padded to {', '.join(f'{i}={n}' for i, n in spec.padded.items())})"
                if spec.padded != spec.sizes else "")
             + (f"; {spec.split} split over {spec.chips} chips (the padded sizes are a chip's)" if spec.chips > 1
                else "") + (f"; pe={spec.pe}" if spec.pe != 8 else ""),
             f"space: {len(result.candidates)} candidate(s) from the levers "
             + ", ".join(f"{k} {v}" for k, v in space.items()),
             "refused by rule: " + (", ".join(f"{code} x{n}" for code, n in counts.items()) if counts else "none")]


def report_text(spec: Contraction, result: TuneResult, roof: Roofline | None = None,
                explained: list[str] | tuple[str, ...] = ()) -> str:
    """synth.txt: the summary, the ranked table (with each candidate's efficiency against
    `roof`, the contraction's roofline) and the explanation's lines."""
    extra = None if roof is None else ("efficiency", lambda c: "" if c.makespan is None else
                                       f"{efficiency(c, roof):.2f}")
    return "\n".join(summary(spec, result)) + "\n" + table(result, extra) + "".join(f"{x}\n" for x in explained)


def report(spec: Contraction, result: TuneResult, roof: Roofline | None = None) -> dict[str, Any]:
    data = report_json(result)
    if roof is not None:
        for c, one in zip(result.candidates, data["candidates"]):
            e = efficiency(c, roof)
            one["efficiency"] = None if e is None else round(e, 4)
    data["contraction"] = {"text": spec.text, "form": spec.form, "dtype": f"{spec.dtype_in}:{spec.dtype_out}",
                           "sizes": spec.sizes, "padded": spec.padded, "pe": spec.pe, "chips": spec.chips,
                           "split": spec.split, "transpose": spec.transpose}
    data["levers"] = points(spec)
    data["refused_by_rule"] = refusals(result)
    data["source"] = f"{spec.name}.py" if result.winner is not None else None
    return data
