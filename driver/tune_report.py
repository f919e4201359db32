"""What `npu-opt tune` writes: the winner's artifact, a table, a JSON report and a plot.

`write_report(result, directory)` writes `<kernel>.visa` (the winner's VISA text, when
there is one), `tune.txt` (the table `table()` prints), `tune.json` (`report_json()`) and
`tune.svg` (`plot_svg()`: one bar per candidate, its makespan; pruned, refused and failed
candidates drawn as marks). Each file is written to a temporary name in the directory and
renamed, so an interrupted run never leaves a half-written file under the final name.
"""

from __future__ import annotations

import json
from html import escape
from pathlib import Path
from typing import Any, Callable

from driver.replay import write_atomic
from driver.tune import Candidate, TuneResult

__all__ = ["plot_svg", "report_json", "table", "write_report"]

NOTE = ("makespans are the schedule model's (a model of the reference scheduler, from the book's "
        "published rates): estimates for comparing candidates, not device measurements")


def _status(c: Candidate, winner: Candidate | None) -> str:
    mark = " *" if winner is not None and c.index == winner.index else ""
    if c.status == "ok":
        notes = [n for n in (c.checked, c.bits if c.bits and c.bits != "same" else None) if n]
        return f"ok{mark}" + "".join(f" ({n})" for n in notes)
    if c.status in ("refused", "ice", "error"):
        return f"{c.status} {c.code or ''}".rstrip()
    return c.status


def table(result: TuneResult, extra: tuple[str, Callable[[Candidate], str]] | None = None) -> str:
    """The candidates as a text table, fastest first, then the rest in candidate order;
    `extra` (a heading, a candidate's cell) adds a column after the bound (synth's efficiency)."""
    ranked = result.ranked()
    rest = [c for c in result.candidates if c.status != "ok"]
    rows = [(str(c.index), c.label(), "" if c.makespan is None else str(c.makespan),
             "" if c.bound is None else str(c.bound), *((extra[1](c),) if extra else ()), _status(c, result.winner))
            for c in ranked + rest]
    head = ("#", "parameters", "makespan", "bound", *((extra[0],) if extra else ()), "status")
    widths = [max(len(r[k]) for r in [head, *rows]) for k in range(len(head))]
    lines = [f"tune of {result.kernel} on {result.target}: {len(result.candidates)} candidate(s), "
             f"{result.count('ok')} compiled, {result.count('pruned')} pruned, "
             f"{result.count('refused') + result.count('error')} refused, {result.count('ice')} internal error(s); "
             f"{result.executor}, {result.seconds:.2f} s",
             f"note: {NOTE}"]
    for r in [head, *rows]:
        lines.append("  ".join(cell.rjust(w) if k in (0, 2, 3) or (extra and k == 4) else cell.ljust(w)
                               for k, (cell, w) in enumerate(zip(r, widths))).rstrip())
    w = result.winner
    lines.append(f"winner: #{w.index} {w.label()} (makespan {w.makespan})" if w is not None else
                 "winner: none (no candidate compiled" + (" and passed its check)" if any(
                     c.checked for c in result.candidates) else ")"))
    if w is not None and any(c.bits for c in result.candidates):
        lines.append(_bits_line(result, w))
    return "\n".join(lines) + "\n"


def _bits_line(result: TuneResult, w: Candidate) -> str:
    """What the comparison of the winner's bits with its ties' and the checked candidates' found."""
    def name(c: Candidate) -> str:
        return f"#{c.index}" + (" (same makespan)" if c.makespan == w.makespan else "")
    other = [name(c) for c in result.other_bits()]
    if other:
        return "other bits than the winner: " + ", ".join(other)
    same = [name(c) for c in result.ranked() if c.bits == "same" and c.index != w.index]
    if not same:
        return "bits: no other candidate ties with the winner or was checked, so none was compared with it"
    return f"bits: {', '.join(same)} {'gives' if len(same) == 1 else 'give'} the same bits as the winner"


def report_json(result: TuneResult) -> dict[str, Any]:
    """The whole result as JSON data (the artifacts' texts left out)."""
    def one(c: Candidate) -> dict[str, Any]:
        return {"index": c.index, "params": c.params, "status": c.status, "makespan": c.makespan, "bound": c.bound,
                "code": c.code, "message": c.message, "checked": c.checked, "bits": c.bits}
    return {"kernel": result.kernel, "target": result.target, "executor": result.executor,
            "seconds": result.seconds, "note": NOTE, "candidates": [one(c) for c in result.candidates],
            "winner": None if result.winner is None else result.winner.index,
            "other_bits": [c.index for c in result.other_bits()]}


def plot_svg(result: TuneResult) -> str:
    """A bar chart of the makespan per candidate (candidate order), the winner highlighted."""
    cands = result.candidates
    top = max((c.makespan or c.bound or 0 for c in cands), default=0) or 1
    bar, gap, height, left, base = 28, 8, 240, 70, 270
    width = max(520, left + len(cands) * (bar + gap) + 20)
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="330" font-family="sans-serif" '
             f'font-size="11">',
             f'<title>makespan per candidate: {escape(result.kernel)}</title>',
             f'<text x="{left}" y="14">makespan per candidate of {escape(result.kernel)} (cycles, schedule model)</text>',
             f'<text x="{left}" y="28" fill="#666">orange: the winner; dashed: the bound of a pruned candidate</text>',
             f'<line x1="{left - 4}" y1="{base}" x2="{width - 10}" y2="{base}" stroke="black"/>',
             f'<text x="{left - 8}" y="{base - height + 4}" text-anchor="end">{top}</text>',
             f'<text x="{left - 8}" y="{base + 4}" text-anchor="end">0</text>']
    for k, c in enumerate(cands):
        x = left + k * (bar + gap)
        tip = escape(f"#{c.index} {c.label()}: {c.status}" + (f", makespan {c.makespan}" if c.makespan else ""))
        if c.makespan:
            h = max(1, round(height * c.makespan / top))
            colour = "#d9822b" if result.winner is not None and c.index == result.winner.index else "#4a78b0"
            parts.append(f'<rect x="{x}" y="{base - h}" width="{bar}" height="{h}" fill="{colour}">'
                         f'<title>{tip}</title></rect>')
        elif c.bound:  # pruned (or failed after lowering): its bound, drawn hollow
            h = max(1, round(height * c.bound / top))
            parts.append(f'<rect x="{x}" y="{base - h}" width="{bar}" height="{h}" fill="none" stroke="#888" '
                         f'stroke-dasharray="4 3"><title>{tip}, bound {c.bound}</title></rect>')
        else:
            parts.append(f'<text x="{x + bar / 2}" y="{base - 6}" text-anchor="middle" fill="#888">'
                         f'{escape(c.status[:3])}<title>{tip}</title></text>')
        parts.append(f'<text x="{x + bar / 2}" y="{base + 16}" text-anchor="middle">#{c.index}</text>')
    parts.append("</svg>")
    return "\n".join(parts) + "\n"


def write_report(result: TuneResult, directory: str | Path) -> list[Path]:
    """Write the report files (and the winner's artifact) into `directory`; their paths."""
    out = Path(directory)
    out.mkdir(parents=True, exist_ok=True)
    files = {out / "tune.txt": table(result), out / "tune.json": json.dumps(report_json(result), indent=2) + "\n",
             out / "tune.svg": plot_svg(result)}
    if result.winner is not None and result.winner.text:
        files[out / f"{result.kernel}.visa"] = result.winner.text
    for path, text in files.items():
        write_atomic(path, text)
    return list(files)
