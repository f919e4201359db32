"""The VISA text reader: `parse_visa(text) -> VisaArtifact` (visa/visa.lark).

The lark grammar (`visa.lark`, LALR, positions) is built once, lazily. A `Transformer`
builds the `tu_ops` records directly, checking field names, order, arities and value
references as it goes; the kernel is then renumbered canonically (any unique numbering is
accepted) and its unprinted allocation facts re-derived. Every lark `UnexpectedInput` and
every semantic problem becomes a `VisaTextError` (a `VisaFormatError`) with line and column.
"""

from __future__ import annotations

import functools
import re
from pathlib import Path
from typing import Any

import attrs
import lark
from lark import Transformer, v_args

from ir.errors import NpuOptError
from ir.fetch_lift import lifted_space
from ir.lark_cache import lalr_parser
from ir.location import Location
from tu_ops import OP_CLASSES, BUILTIN_TARGETS, rngd
from tu_ops.stage_record import record_class
from tu_ops.base import Ref
from tu_ops.enums import TuContext
from tu_ops.program import KernelParam, LoweredKernel, TuProgram
from visa.artifact import COST_KEYS, FORMAT_VERSION, VisaArtifact, VisaTextError
from visa.decode import Decoder, RawType, Val, build_type, check_fields, optional_fields, printed_fields
from visa.facts import canonical_numbering, renumber, with_facts
from visa.signature import FinalLine, check_final_types, check_finals, signature_param, version_message
from visa.syntax import syntax_error

__all__ = ["parse_visa", "visa_parser"]

OPS: dict[str, type] = {cls.MNEMONIC: cls for cls in OP_CLASSES}
_CONVERTED = (TypeError, ValueError, ArithmeticError, KeyError, IndexError, RecursionError, NpuOptError)
_LOC = re.compile(r";[ \t]*loc[ \t]+(?P<file>.+):(?P<line>[0-9]+):(?P<col>[0-9]+)[ \t\r]*$")
_HEADER = re.compile(r"[ \t]*visa[ \t]+(-?[0-9]+)")


GRAMMAR_FILE = Path(__file__).with_name("visa.lark")  # its tables beside it: visa.lalr
OPTIONS = {"propagate_positions": True}


@functools.cache
def visa_parser() -> lark.Lark:
    """The LALR parser of `visa/visa.lark`, loaded (or built) on first use."""
    return lalr_parser(GRAMMAR_FILE, **OPTIONS)


def parse_visa(text: str, *, target: Any = None) -> VisaArtifact:
    """Read a `.visa` text. `target` supplies the widths and row sizes the unprinted allocation
    facts are derived with (default: the built-in target the text names, else `rngd`)."""
    if not isinstance(text, str):
        raise VisaTextError(f"a VISA text is a str, not {type(text).__name__}", line=1, column=1)
    _check_version(text)
    try:
        tree = visa_parser().parse(text)
    except lark.exceptions.UnexpectedInput as e:
        raise syntax_error(text, e, visa_parser()) from None
    try:
        artifact = _Builder(text).transform(tree)
    except lark.exceptions.VisitError as e:
        if isinstance(e.orig_exc, VisaTextError):
            raise e.orig_exc from None
        meta = getattr(e.obj, "meta", None)
        line, col = (meta.line, meta.column) if meta is not None and not meta.empty else (1, 1)
        raise VisaTextError(f"cannot read this record: {e.orig_exc}", line=line, column=col, source=text) from None
    if target is None:
        target = BUILTIN_TARGETS.get(artifact.target, rngd)()
    try:
        kernel = with_facts(artifact.kernel, target)
    except (*_CONVERTED, AttributeError) as e:
        raise VisaTextError(f"cannot derive the allocations: {e}", line=1, column=1, source=text) from None
    return attrs.evolve(artifact, kernel=kernel)


def _check_version(text: str) -> None:
    """Refuse another format version before the grammar (which may differ) is consulted."""
    match = _HEADER.match(text)
    if match and len(match.group(1).lstrip("0")) > 18:  # no int(): 5000 digits exceed Python's conversion limit
        raise VisaTextError(f"VISA format version of {len(match.group(1))} digits is not supported; this reader "
                            f"reads version {FORMAT_VERSION}", line=1, column=match.start(1) + 1, source=text)
    if match and int(match.group(1)) != FORMAT_VERSION:
        raise VisaTextError(version_message(int(match.group(1))), line=1, column=match.start(1) + 1, source=text)


def _at(fn: Any) -> Any:
    """Run a rule callback with (meta, children); turn stray errors into positioned ones."""

    @v_args(meta=True)
    @functools.wraps(fn)
    def wrapper(self: _Builder, meta: Any, children: list[Any]) -> Any:
        try:
            return fn(self, meta, children)
        except VisaTextError:
            raise
        except _CONVERTED as e:
            line, col = (meta.line, meta.column) if not meta.empty else (1, 1)
            raise self.dec.error(str(e) or type(e).__name__, line, col) from None
    return wrapper


@attrs.frozen
class _Record:
    """A record read but not yet placed: its op class, decoded fields and raw types."""

    ident: int
    cls: type
    fields: dict[str, Any]
    types: tuple[RawType, RawType]
    loc: Location | None
    line: int
    col: int


class _Builder(Transformer):
    """Bottom-up builder of the artifact; the signature (and its axes) precedes the body."""

    def __init__(self, text: str) -> None:
        super().__init__(visit_tokens=False)
        self.text = text
        self.dec = Decoder({}, text)
        self.defs: dict[int, tuple[int, int]] = {}  # value id -> (line, col) of its definition
        self.program_pos: dict[int, tuple[int, int]] = {}
        self.lines_extra: dict[str, int] = {}

    def _define(self, tok: lark.Token) -> int:
        ident = int(tok[1:])
        if ident in self.defs:
            raise self.dec.error(f"{tok} is defined twice (first on line {self.defs[ident][0]})", tok.line, tok.column)
        self.defs[ident] = (tok.line, tok.column)
        return ident

    # --- header, target, signature -------------------------------------------------------

    @_at
    def header(self, meta: Any, c: list[Any]) -> int:
        if int(c[0]) != FORMAT_VERSION:
            raise self.dec.error(version_message(int(c[0])), c[0].line, c[0].column)
        return int(c[0])

    @_at
    def target(self, meta: Any, c: list[Any]) -> tuple[str, str]:
        sha = c[1][1:-1]
        if not re.fullmatch(r"[0-9a-f]{64}", sha):
            raise self.dec.error("the target hash is 64 lowercase hexadecimal digits", c[1].line, c[1].column)
        self.lines_extra["target"] = meta.line
        return c[0][1:-1], sha

    @_at
    def axis(self, meta: Any, c: list[Any]) -> tuple[str, int]:
        name, size = str(c[0]), int(c[1])
        if name in self.dec.axes:
            raise self.dec.error(f"axis {name} is declared twice", c[0].line, c[0].column)
        if size < 1:
            raise self.dec.error(f"axis {name} has size {size}; sizes are >= 1", c[1].line, c[1].column)
        self.dec.axes[name] = size
        return name, size

    @_at
    def axes(self, meta: Any, c: list[Any]) -> tuple[tuple[str, int], ...]:
        return tuple(x for x in c if x is not None)

    @_at
    def param(self, meta: Any, c: list[Any]) -> KernelParam:
        ident = self._define(c[0])
        at = c.pop() if isinstance(c[-1], int) else None   # `at N`: a resident DM parameter's DM byte address
        raw = c[-1]
        return signature_param(self.dec, Ref(ident), c[1][1:-1], build_type(self.dec, raw, None, None),
                               len(c) == 4, at, raw)

    @_at
    def final(self, meta: Any, c: list[Any]) -> FinalLine:
        return FinalLine(int(c[0][1:]), int(c[1][1:]), meta.line, meta.column)

    @_at
    def result(self, meta: Any, c: list[Any]) -> tuple[int, Any, int, int]:
        return int(c[0][1:]), build_type(self.dec, c[1], None, None), meta.line, meta.column

    @_at
    def pe(self, meta: Any, c: list[Any]) -> int:
        """`pe P` in the signature, and a parameter's `at N` (`resident`): the integer."""
        return int(c[0])

    resident = pe

    @_at
    def signature(self, meta: Any, c: list[Any]) -> dict[str, Any]:
        pe = c.pop(2) if isinstance(c[2], int) else 8   # `pe P`: processing elements per chip
        params = [x for x in c[3:] if isinstance(x, KernelParam)]
        results = [x for x in c[3:] if isinstance(x, tuple)]
        finals = [x for x in c[3:] if isinstance(x, FinalLine)]
        return {"name": c[0][1:-1], "chip": int(c[1]), "pe": pe, "axes": c[2], "params": params,
                "results": results, "finals": finals}

    # --- values ----------------------------------------------------------------------------

    def _val(kind: str) -> Any:  # noqa: N805 - a factory of rule callbacks
        @_at
        def rule(self: _Builder, meta: Any, c: list[Any]) -> Val:
            tok = c[0]
            data = int(tok) if kind == "int" else str(tok)
            return Val(kind, data, tok.line, tok.column)
        return rule

    int = _val("int")
    entry = _val("entry")
    ref = _val("ref")
    string = _val("string")
    dtype = _val("dtype")
    enum = _val("enum")
    del _val

    @_at
    def enum_arg(self, meta: Any, c: list[Any]) -> Val:
        return Val("enum_arg", (str(c[0]), int(c[1])), meta.line, meta.column)

    @_at
    def list(self, meta: Any, c: list[Any]) -> Val:
        return Val("list", [x for x in c if x is not None], meta.line, meta.column)

    @_at
    def tuple(self, meta: Any, c: list[Any]) -> Val:
        return Val("tuple", c, meta.line, meta.column)

    @_at
    def struct(self, meta: Any, c: list[Any]) -> Val:
        return Val("struct", c, meta.line, meta.column)

    @_at
    def field(self, meta: Any, c: list[Any]) -> tuple[str, Val, int, int]:
        return str(c[0]), c[1], c[0].line, c[0].column

    @_at
    def type(self, meta: Any, c: list[Any]) -> RawType:
        dts = tuple((str(t), t.line, t.column) for t in c[1:] if t.type == "LNAME")
        maps = tuple((t[1:-1], t.line, t.column) for t in c[1:] if t.type == "STRING")
        return RawType(str(c[0]), dts, maps, meta.line, meta.column)

    # --- body ------------------------------------------------------------------------------

    @_at
    def record(self, meta: Any, c: list[Any]) -> _Record:
        op = str(c[1])
        cls = record_class(op)
        if cls is None:
            raise self.dec.error(f"unknown op `{op}`; expected one of {', '.join(OPS)}", c[1].line, c[1].column)
        loc = self._loc(c[-1]) if isinstance(c[-1], lark.Token) and c[-1].type == "LOC" else None
        body = c[2:-1] if loc is not None else c[2:]
        fields, types = body[:-2], (body[-2], body[-1])
        present, optional = {str(f[0]) for f in fields}, optional_fields(cls)
        schema = [s for s in printed_fields(cls) if s[0] in present or s[0] not in optional]
        given = check_fields(self.dec, fields, [p for p, _, _ in schema], f"`{op}`", meta.line, meta.column)
        values = {attr: self.dec.decode(v, hint, f"{op}.{p}")
                  for (p, attr, hint), (_, v) in zip(schema, given)}
        ident = self._define(c[0])
        return _Record(ident, cls, values, types, loc, meta.line, meta.column)

    def _loc(self, tok: lark.Token) -> Location:
        match = _LOC.match(str(tok))
        if match is None:
            raise self.dec.error("malformed location comment; expected `; loc FILE:LINE:COL`", tok.line, tok.column)
        return Location(match["file"], int(match["line"]), int(match["col"]))

    def _op(self, rec: _Record, space: Any, context: TuContext | None, out_space: Any = None) -> Any:
        ctx = None if context is None else context.value
        if rec.cls.IN_PROGRAM and space is None:
            raise self.dec.error(f"a `{rec.cls.MNEMONIC}` record belongs inside a program block", rec.line, rec.col)
        if not rec.cls.IN_PROGRAM and space is not None:
            raise self.dec.error(f"a `{rec.cls.MNEMONIC}` record stands outside program blocks", rec.line, rec.col)
        tin = build_type(self.dec, rec.types[0], space, ctx)
        tout = build_type(self.dec, rec.types[1], space if out_space is None else out_space, ctx)
        try:
            return rec.cls(result=Ref(rec.ident), input_type=tin, output_type=tout, loc=rec.loc, **rec.fields)
        except (TypeError, ValueError) as e:
            raise self.dec.error(str(e), rec.types[0].line, rec.types[0].col) from None

    @_at
    def program(self, meta: Any, c: list[Any]) -> TuProgram:
        index, name = c[0], str(c[1])
        context = self.dec.member(TuContext, name, c[1].line, c[1].column)
        space = tuple(self.dec.mapping(t[1:-1], t.line, t.column) for t in c[2:5])
        ops, cur = [], space
        for rec in c[5:]:  # a record that moves the streams (its SLICE_AFTER) outputs on the new Slice
            lifts = rec.fields.get("lift")
            base = cur if not lifts else lifted_space(cur, tuple((x.dim, x.placement) for x in lifts))  # a lifted feed
            moved = rec.cls.slice_after(rec.fields.get)
            out = base if moved is None else (base[0], base[1], moved)
            ops.append(self._op(rec, cur, context, out))
            cur = out
        program = TuProgram(index=int(index), context=context, space=space, ops=_link_cstreams(ops))
        self.program_pos[id(program)] = (index.line, index.column)
        return program

    @_at
    def ret(self, meta: Any, c: list[Any]) -> list[lark.Token]:
        return [t for t in c if t is not None]

    @_at
    def body(self, meta: Any, c: list[Any]) -> tuple[list[Any], list[lark.Token]]:
        steps = [self._op(x, None, None) if isinstance(x, _Record) else x for x in c[:-1]]
        for i, p in enumerate(x for x in steps if isinstance(x, TuProgram)):
            if p.index != i:
                raise self.dec.error(f"program {p.index} should be numbered {i} (programs count from 0 in "
                                     f"body order)", *self.program_pos[id(p)])
        return steps, c[-1]

    # --- cost and the whole file -----------------------------------------------------------

    @_at
    def cost_item(self, meta: Any, c: list[Any]) -> tuple[str, Val, int, int]:
        return str(c[0]), Val("int", int(c[1]), c[1].line, c[1].column), c[0].line, c[0].column

    @_at
    def cost(self, meta: Any, c: list[Any]) -> tuple[dict[str, int], dict[str, int]]:
        given = check_fields(self.dec, c, list(COST_KEYS), "the cost section", meta.line, meta.column)
        return {k: v.data for k, v in given}, {f"cost.{k}": v.line for k, v in given}

    @_at
    def start(self, meta: Any, c: list[Any]) -> VisaArtifact:
        version, (target, sha), sig, (steps, ret), (cost, cost_lines) = c
        for ident, line, col in self.dec.uses:  # every `%n` a field names is defined somewhere in the text
            if ident not in self.defs:
                raise self.dec.error(f"%{ident} is not defined", line, col)
        finals = check_finals(self.dec, sig["params"], sig["finals"], self.defs, meta)
        kernel = LoweredKernel(name=sig["name"], chip=sig["chip"], axes=sig["axes"], params=sig["params"],
                               steps=steps, results=[Ref(int(t[1:])) for t in ret], finals=finals, pe=sig["pe"])
        self._check_results(kernel, sig["results"], ret, meta)
        check_final_types(self.dec, kernel, sig["finals"])
        table = canonical_numbering(kernel)
        lines = {f"%{table[i]}": line for i, (line, _) in self.defs.items()} | cost_lines | self.lines_extra
        return VisaArtifact(version=version, target=target, target_sha256=sha, kernel=renumber(kernel),
                            cost=cost, lines=lines)

    def _check_results(self, kernel: LoweredKernel, sig: list[Any], ret: list[lark.Token], meta: Any) -> None:
        """`return` lists the signature's results with their types; record operands (all but a
        feed's forward `dest`) point backwards."""
        for tok in ret:
            if int(tok[1:]) not in self.defs:
                raise self.dec.error(f"{tok} is not defined", tok.line, tok.column)
        if [r[0] for r in sig] != [r.id for r in kernel.results]:
            line, col = (ret[0].line, ret[0].column) if ret else (meta.line, meta.column)
            raise self.dec.error("`return` must list the signature's results, in order", line, col)
        types = {p.ref.id: p.type for p in kernel.params} | {op.result.id: op.output_type for op in kernel.ops()}
        defined_at = {op.result.id: self.defs[op.result.id] for op in kernel.ops()}
        for ident, t, line, col in sig:
            if types[ident] != t:
                raise self.dec.error(f"result %{ident} is declared as another type than its record's output",
                                     line, col)
        for op in kernel.ops():
            for ref in op.operands():
                if ref.id in defined_at and defined_at[ref.id] >= defined_at[op.result.id]:
                    line, col = self.defs[op.result.id]
                    raise self.dec.error(f"{op.result} reads {ref}, which is defined later", line, col)


def _link_cstreams(ops: list[Any]) -> list[Any]:
    """Restore the unprinted `pre_time` of cstream types: a time_reduce's output keeps the
    time it reduced, and an op reading a cstream sees its producer's type."""
    out: dict[int, Any] = {}
    linked = []
    for op in ops:
        src = op.stream_input()
        made = out.get(src.id) if src is not None else None
        t = op.input_type
        if t.kind == "cstream" and getattr(made, "kind", None) == "cstream" and attrs.evolve(made, pre_time=None) == t:
            op = attrs.evolve(op, input_type=made)
        if op.MNEMONIC == "time_reduce" and op.output_type.kind == "cstream" and op.output_type.pre_time is None:
            op = attrs.evolve(op, output_type=attrs.evolve(op.output_type, pre_time=op.input_type.time))
        out[op.result.id] = op.output_type
        linked.append(op)
    return linked
