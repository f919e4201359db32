"""The canonical VISA text printer (visa/visa.lark): deterministic, hand-written.

`print_visa(lowered, target)` renumbers the kernel's values, prints the header, target,
signature, body (records through the `tu_ops` record text) and the cost summary computed
from the records; `print_artifact(artifact)` prints a parsed artifact as it stands, so
`print_artifact(parse_visa(t)) == t` for every canonical text `t`.
"""

from __future__ import annotations

from typing import Any, Mapping

from tu_ops.base import Ref
from tu_ops.printing import type_text
from tu_ops.program import LoweredKernel
from tu_ops.target import RNGD_SHA256, target_sha256
from visa.artifact import COST_KEYS, FORMAT_VERSION, VisaArtifact
from visa.cost import compute_cost
from visa.facts import renumber

__all__ = ["print_visa", "print_artifact", "target_hash", "artifact_of", "record_lines"]


def target_hash(target: Any) -> str:
    """The hash of the `target` line: the SHA-256 of the description file's bytes (for a
    built-in target, of the text it ships); a target built in code hashes its canonical JSON."""
    if target.file_sha256:
        return target.file_sha256
    if target.name == "rngd":
        return RNGD_SHA256
    return target_sha256(target)


def artifact_of(lowered: LoweredKernel, target: Any) -> VisaArtifact:
    """The artifact `print_visa` writes: canonical numbering, target line, computed cost."""
    kernel = renumber(lowered)
    return VisaArtifact(version=FORMAT_VERSION, target=target.name, target_sha256=target_hash(target),
                        kernel=kernel, cost=compute_cost(kernel, target))


def print_visa(lowered: LoweredKernel, target: Any, *, locs: bool = True) -> str:
    """The canonical `.visa` text of a lowered kernel on `target` (locations unless `locs=False`)."""
    return print_artifact(artifact_of(lowered, target), locs=locs)


def print_artifact(artifact: VisaArtifact, *, locs: bool = True) -> str:
    """The canonical text of an artifact: its kernel renumbered, its own target line and cost."""
    return "\n".join(_lines(artifact, locs=locs)[0]) + "\n"


def record_lines(artifact: VisaArtifact) -> dict[str, int]:
    """`%n` / `cost.<key>` -> 1-based line of the artifact's canonical text (for messages)."""
    return _lines(artifact, locs=False)[1]


def _lines(artifact: VisaArtifact, *, locs: bool) -> tuple[list[str], dict[str, int]]:
    kernel = renumber(artifact.kernel)
    out = [f"visa {artifact.version}", "",
           f'target "{artifact.target}" sha256 "{artifact.target_sha256}"', ""]
    where: dict[str, int] = {"target": 3}
    out += _signature(kernel)
    out.append("")
    for step in kernel.steps:
        if not hasattr(step, "ops"):
            where[str(step.result)] = len(out) + 1
            out.append(step.text(locs=locs))
            continue
        head, *body, tail = step.text(locs=locs).split("\n")
        out.append(head)
        for op, line in zip(step.ops, body):
            where[str(op.result)] = len(out) + 1
            out.append(line)
        out.append(tail)
    out.append("return" + "".join(("," if i else "") + f" {r}" for i, r in enumerate(kernel.results)))
    out += ["", "cost {"]
    for key, value in _cost_items(artifact.cost):
        where[f"cost.{key}"] = len(out) + 1
        out.append(f"  {key}={value}")
    out.append("}")
    return out, where


def _cost_items(cost: Mapping[str, int]) -> list[tuple[str, int]]:
    known = [(k, cost[k]) for k in COST_KEYS if k in cost]
    return known + [(k, v) for k, v in cost.items() if k not in COST_KEYS]


def _signature(kernel: LoweredKernel) -> list[str]:
    axes = ", ".join(f"{name}={size}" for name, size in kernel.axes)
    pe = "" if kernel.pe == 8 else f" pe {kernel.pe}"
    lines = [f'signature "{kernel.name}" chip {kernel.chip}{pe} {{', "  axes" + (f" {axes}" if axes else "")]
    lines += ["  " + p.text() for p in kernel.params]
    lines += [f"  result {r} : {type_text(_value_type(kernel, r))}" for r in kernel.results]
    inout = [p for p in kernel.params if p.inout]
    lines += [f"  final {p.ref} = {r}" for p, r in zip(inout, kernel.finals)]
    return lines + ["}"]


def _value_type(kernel: LoweredKernel, ref: Ref) -> Any:
    for p in kernel.params:
        if p.ref == ref:
            return p.type
    for op in kernel.ops():
        if op.result == ref:
            return op.output_type
    raise ValueError(f"result {ref} is not a value of kernel {kernel.name}")
