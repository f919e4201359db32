"""The tests' reader of a traced kernel's text (`ir.kernel.print_kernel`): `parse_kernel`.

Nothing in the compiler reads IR text, so the reader lives with the tests that use it. The grammar is `kernel_text.lark` (LALR, built once), which embeds the mapping grammar's
`item` rule. Each op line names its stage; the op class of that stage gives the operand
and attribute fields, and each attribute's declared type says how its word reads (a
dtype, a lane mode, a bool). `print_kernel(parse_kernel(text)) == text`, so lowering can
be tested from IR text without tracing Python.
"""

from __future__ import annotations

import ast
import functools
import importlib.resources
from pathlib import Path
from typing import Any

import attrs
import lark

# every module of `ir` that declares a traced op (tests/test_declarations.py finds one missing)
from ir import (data_movement_ops, fetch_lift_ops, fetch_mask_ops, gather_ops, interleave_ops,  # noqa: F401
                redistribute_ops, runtime_ops, spm_ops, valid_count_ops, view_ops, vrf_ops)
from ir.vector import (branch_ops, chain_ops, inter_ops, ops as vector_ops, pair_logic_ops,  # noqa: F401
                       pair_ops, pair_ternary_ops, reduce_ops, stash_ops)
from ir.dtypes import DType
from ir.errors import NpuOptError, TypeCheckError
from ir.kernel import Kernel
from ir.mapping.parser import mapping_from_tree
from ir.ops import _DECLARED, Op, Value
from ir.vector import enums as vector_enums
from ir.switch.config import SwitchConfig
from ir.runtime_types import SCALAR_DTYPES, ScalarType
from ir.types import CStreamType, DmType, HbmType, LaneMode, SpmType, StreamType, TrfType, VrfType

__all__ = ["parse_kernel", "IrTextError", "traced_op_classes"]


def traced_op_classes() -> dict[str, type[Op]]:
    """Every traced op class of the IR by stage name, the engines' included: each registers
    itself in `ir.ops` when declared (a unit's generated op when first made)."""
    return dict(_DECLARED.items())

_WORDS = {"DType": DType.parse, "LaneMode": LaneMode, "bool": {"True": True, "False": False}.__getitem__,
          "Any": {"None": None}.__getitem__,  # an unset optional attribute (a vector op's `mode`)
          "ScalarDType": SCALAR_DTYPES.__getitem__}  # a runtime scalar op's result type (docs/runtime.md)
_TYPES = {"hbm": HbmType, "dm": DmType, "trf": TrfType, "vrf": VrfType, "spm": SpmType}
_ENGINE_ENUMS: dict[str, type] = {"SwitchConfig": SwitchConfig}  # engine enums outside ir.vector.enums


class IrTextError(NpuOptError):
    """A traced-kernel text that does not parse: bad input, code USAGE."""

    def __init__(self, message: str) -> None:
        super().__init__(message, code="USAGE")


@functools.cache
def _parser() -> lark.Lark:
    grammar = (Path(__file__).parent / "kernel_text.lark").read_text(encoding="utf-8")
    mapping_dir = str(importlib.resources.files("ir.mapping"))
    return lark.Lark(grammar, parser="lalr", start="kernel", import_paths=[mapping_dir],
                     maybe_placeholders=False)


def parse_kernel(text: str) -> Kernel:
    """The traced kernel `text` prints (IrTextError when it does not parse)."""
    try:
        tree = _parser().parse(text)
    except lark.exceptions.UnexpectedInput as e:
        raise IrTextError(f"IR text, line {getattr(e, 'line', '?')}: {str(e).splitlines()[0]}") from None
    name, chips, *ops = tree.children
    pe = int(ops.pop(0).children[0]) if ops and getattr(ops[0], "data", None) == "pe" else 8
    extra = ops.pop().children[0] if ops[-1].data == "undeclared" else None
    declared = _decls(ops.pop())
    sizes = {**declared, **(_decls(extra) if extra is not None else {})}
    reader = _Reader(sizes)
    return Kernel(str(name), int(chips), tuple(reader.op(t) for t in ops), tuple(declared.items()), pe)


def _decls(tree: lark.Tree) -> dict[str, int]:
    return {str(d.children[0]): int(d.children[1]) for d in tree.children}


class _Reader:
    """Builds ops in order, resolving `%n` to the value (and type) defined earlier."""

    def __init__(self, axes: dict[str, int]) -> None:
        self.axes = axes
        self.values: dict[int, Value] = {}

    def op(self, t: lark.Tree) -> Op:
        parts = list(t.children)
        result_id = int(parts.pop(0)[1:]) if isinstance(parts[0], lark.Token) and parts[0].type == "VALUE" else None
        stage, operands = str(parts[0]), [self.value(v) for v in parts[1].children]
        cls = traced_op_classes().get(stage)
        if cls is None:
            raise IrTextError(f"IR text: unknown stage `{stage}`")
        fields: dict[str, Any] = {}
        result_type = None
        for part in parts[2:]:
            if part.data == "attr":
                fields[str(part.children[0])] = self.attr(cls, str(part.children[0]), part.children[1])
            elif part.data == "facts":
                fields.update({str(n): True for n in part.children})
            else:
                result_type = self.type(part)
        fields.update(self.operand_fields(cls, operands, fields))
        if (result_id is None) != (result_type is None):
            raise IrTextError(f"IR text: `{stage}` needs both a result and its type, or neither")
        if result_id is not None:
            value = Value(result_id, result_type)
            self.values[result_id] = value
            fields["result"] = value
        return cls(**fields)

    def operand_fields(self, cls: type, operands: list[Value], fields: dict[str, Any] | None = None) -> dict[str, Any]:
        """Operands in field order; a tuple field takes the rest, or as many as its `count`
        metadata (a function of the op's parsed attributes) says."""
        out: dict[str, Any] = {}
        for f in attrs.fields(cls):
            if f.metadata.get("role") == "operand":
                if str(f.type).startswith("tuple"):
                    n = f.metadata["count"](fields or {}) if "count" in f.metadata else len(operands)
                    out[f.name], operands = tuple(operands[:n]), operands[n:]
                elif operands or not f.metadata.get("optional"):
                    out[f.name] = operands.pop(0)
        return out

    def value(self, tok: lark.Token) -> Value:
        n = int(tok[1:])
        if n not in self.values:
            raise IrTextError(f"IR text: {tok} is used before its definition")
        return self.values[n]

    def attr(self, cls: type, name: str, t: lark.Tree) -> Any:
        kind = t.data
        if kind == "mapping_value":
            return self.mapping(t.children[1])
        if kind == "ints_value":
            return tuple(int(x) for x in t.children)
        if kind == "type_value":
            return self.type(t.children[0])
        tok = t.children[0]
        if kind == "string_value":
            return ast.literal_eval(str(tok))
        if kind == "int_value":
            return int(tok)
        if kind == "float_value":
            return float(tok)
        if kind == "enum_value":
            return self.enum(t)
        if kind == "list_value":
            return [self.attr(type(None), "", v) if v.data != "word_value" else self.word(v) for v in t.children]
        if str(tok) == "None":
            return None
        declared = str(attrs.fields_dict(cls)[name].type)
        read = _WORDS.get(declared)
        if read is None:
            raise IrTextError(f"IR text: `{name}={tok}` is not a {declared}")
        return read(str(tok))

    def enum(self, t: lark.Tree) -> Any:
        """An engine enum value (`TagMode.ZERO`), called with its data when it carries some
        (`FpBinaryOp.MUL_F(FpMulAlu.MUL0)`)."""
        enum_name, _, variant = str(t.children[0]).partition(".")
        enum = getattr(vector_enums, enum_name, None) or _ENGINE_ENUMS.get(enum_name)
        try:
            value = getattr(enum, variant, None) if isinstance(enum, type) else None
        except TypeCheckError:  # SwitchConfig refuses an unknown variant with its own code
            value = None
        if value is None:
            raise IrTextError(f"IR text: `{t.children[0]}` is not an engine enum value")
        if len(t.children) == 1:
            return value
        args, kwargs = [], {}
        for arg in t.children[1].children:
            *key, v = arg.children
            parsed = self.attr(type(None), "", v) if v.data != "word_value" else self.word(v)
            if key:
                kwargs[str(key[0])] = parsed
            else:
                args.append(parsed)
        try:
            return value(*args, **kwargs)
        except TypeCheckError as e:
            raise IrTextError(f"IR text: `{t.children[0]}`: {e}") from None

    def word(self, t: lark.Tree) -> Any:
        tok = str(t.children[0])
        return {"True": True, "False": False}.get(tok, tok)

    def mapping(self, t: lark.Tree) -> Any:
        return mapping_from_tree(t, self.axes)

    def type(self, t: lark.Tree) -> Any:
        kind, parts = t.data, list(t.children)
        if kind == "scalar":
            return ScalarType(SCALAR_DTYPES[str(parts[0])])
        if kind in _TYPES:
            return _TYPES[kind](DType.parse(str(parts[0])), *(self.mapping(p) for p in parts[1:]))
        context, dtype = str(parts[0]), DType.parse(str(parts[1]))
        levels = [self.mapping(p) for p in parts[2:] if not (isinstance(p, lark.Tree) and p.data == "pre")]
        if kind == "stream":
            return StreamType(dtype, *levels, context)
        pre = next((self.mapping(p.children[0]) for p in parts if isinstance(p, lark.Tree) and p.data == "pre"), None)
        return CStreamType(DType.parse(context), dtype, *levels, pre)  # a cstream runs in main
