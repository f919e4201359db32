"""The parsed VISA artifact record and the positioned format error (visa/visa.lark).

`VisaArtifact` is what `parse_visa` returns: the format version, the target line, the
lowered kernel (the same `tu_ops` records the lowering builds) and the cost section.
`VisaTextError` is the `VisaFormatError` every parser and `--verify` failure raises; it
carries the 1-based `line` and `column` of the offending text.
"""

from __future__ import annotations

from types import MappingProxyType
from typing import Any, Mapping

import attrs

from ir.errors import VisaFormatError
from tu_ops.program import LoweredKernel

__all__ = ["VisaArtifact", "VisaTextError", "COST_KEYS", "FORMAT_VERSION", "FORMAT_CODE"]

FORMAT_VERSION = 2  # 2: the signature records in-out parameters (`inout`, `final` lines)

# The cost counters of visa/visa.lark, in their printed order.
COST_KEYS: tuple[str, ...] = (
    "dma_commands", "dma_bytes", "feed_flits", "dm_read_bytes", "dm_write_bytes",
    "trf_load_bytes", "mac_ops", "dm_peak_bytes", "trf_peak_bytes",
)

# The diagnostic code of a syntactic or structural format error (a corrupt input file,
# exit 2); a record refused by an op verifier keeps the verifier's rule ID instead.
FORMAT_CODE = "USAGE"


class VisaTextError(VisaFormatError):
    """A VISA text that cannot be read or does not verify, at `line`:`column` (1-based).

    `detail` is the bare message; `str(e)` is `line L, column C: detail` followed by the
    offending source line and a caret when the text is known. `rule` is the docs/machine/index.md
    rule ID for a verifier failure, else None."""

    def __init__(self, detail: str, *, line: int, column: int, source: str | None = None,
                 rule: str | None = None) -> None:
        self.detail = detail
        self.line = max(int(line), 1)
        self.column = max(int(column), 1)
        self.rule = rule
        super().__init__(_render(detail, self.line, self.column, source), code=rule or FORMAT_CODE)


def _render(detail: str, line: int, column: int, source: str | None) -> str:
    head = f"line {line}, column {column}: {detail}"
    if source is None:
        return head
    lines = source.split("\n")
    if not 1 <= line <= len(lines):
        return head
    shown = lines[line - 1].replace("\t", " ").replace("\r", "")
    return f"{head}\n  | {shown}\n  | {' ' * (column - 1)}^"


def _frozen_dict(value: Mapping[str, Any]) -> Mapping[str, Any]:
    return MappingProxyType(dict(value))


@attrs.frozen(kw_only=True)
class VisaArtifact:
    """One `.visa` file: `version`, `target` (name), `target_sha256`, `kernel` (the lowered
    kernel, values numbered canonically), `cost` (counter name -> int, in file order).

    `lines` maps `%n` (canonical numbering) and `cost.<key>` to the 1-based line of that
    record or counter in the text it was parsed from; it is empty for an artifact built in
    code and is not part of equality."""

    version: int = FORMAT_VERSION
    target: str
    target_sha256: str
    kernel: LoweredKernel
    cost: Mapping[str, int] = attrs.field(converter=_frozen_dict, hash=False)
    lines: Mapping[str, int] = attrs.field(factory=dict, converter=_frozen_dict, eq=False, hash=False,
                                           repr=False)

    def __attrs_post_init__(self) -> None:
        if not isinstance(self.kernel, LoweredKernel):
            raise TypeError(f"kernel must be a LoweredKernel, not {type(self.kernel).__name__}")
