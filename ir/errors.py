"""The single error hierarchy of npu-opt: every refusal the compiler raises is an NpuOptError."""

from __future__ import annotations


class NpuOptError(Exception):
    """Base of every error npu-opt raises on purpose; `code` is a stable diagnostic code."""

    code: str = "ICE"

    def __init__(self, message: str, *, code: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        if code is not None:
            self.code = code


class MappingError(NpuOptError):
    """A mapping expression or axis declaration is ill-formed (docs/mapping-language.md).

    `category` is one of docs/mapping-language.md's categories; `column` is the 1-based column of the
    fault in `text` (None when the error did not come from a text)."""

    def __init__(self, category: str, message: str, *, text: str | None = None,
                 column: int | None = None) -> None:
        self.category = category
        self.text = text
        self.column = column
        self.detail = message
        super().__init__(_render_with_caret(message, text, column), code=f"MAP-{category}")


class OvershootError(MappingError):
    """A legal mapping position that cannot be decoded to an in-range index (docs/mapping-language.md)."""

    def __init__(self, message: str, *, text: str | None = None) -> None:
        super().__init__("overshoot", message, text=text)


class RunTimeRefusal(NpuOptError):
    """A rule that only the data can break, refused while a kernel runs (a gather index that
    selects no row, a runtime tile start past its range, a read of unwritten memory): its
    text starts with the rule code, as `npu-opt explain CODE` names it; `.message` is the
    sentence alone."""

    def __str__(self) -> str:
        return f"{self.code}: {self.message}"


class TypeCheckError(NpuOptError):
    """A stage rule tagged [T] refused the kernel while tracing."""


class VerifyError(NpuOptError):
    """A lowered op's verifier refused it."""


class LoweringError(NpuOptError):
    """Lowering could not build ops for a traced kernel."""


class VisaFormatError(NpuOptError):
    """A VISA text could not be parsed."""


class InternalError(NpuOptError):
    """An internal compiler error (ICE): a bug in npu-opt, never the user's fault."""


class CompileError(NpuOptError):
    """Raised by compile()/run() for a refused kernel or an ICE; `.diagnostics` says why."""

    def __init__(self, diagnostics: tuple = (), message: str | None = None) -> None:
        self.diagnostics = tuple(diagnostics)
        text = message or "\n\n".join(d.render() for d in self.diagnostics) or "kernel refused"
        code = self.diagnostics[0].code if self.diagnostics else "ICE"
        super().__init__(text, code=code)


def _render_with_caret(message: str, text: str | None, column: int | None) -> str:
    """Quote the expression and put a caret under the faulty column."""
    if text is None:
        return message
    shown = text.replace("\n", " ").replace("\t", " ").replace("\r", " ")
    lines = [message, f"  | {shown}"]
    if column is not None:
        lines.append("  | " + " " * (column - 1) + "^")
    return "\n".join(lines)


def exception_text(e: BaseException) -> str:
    """`str(e)`, even for an exception of the user's whose `__str__` raises or returns
    something other than a string (then a note saying so): reporting it must not fail."""
    try:
        text = e.__str__()
    except BaseException as inner:  # noqa: BLE001 - the user's __str__ may raise anything
        return f"<its __str__ raised {type(inner).__name__}>"
    if not isinstance(text, str):
        return f"<its __str__ returned {type(text).__name__}, not str>"
    return text
