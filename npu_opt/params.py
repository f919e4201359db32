"""Kernel parameters: `Mut[...]`, the HBM view annotations, tuple and struct parameters.

A `@device` parameter annotation is a tree (docs page "Kernel parameters and results"):

- a leaf: `HbmTensor[...]` (read only), `Mut[HbmTensor[...]]` (in-out: the kernel may
  write it), `HbmTensorView[...]` (read only) or `HbmTensorViewMut[...]` (in-out);
- `tuple[leaf_or_tree, ...]`: the Rust tuple parameter;
- an attrs or dataclass class whose fields are annotated with leaves or trees: the Rust
  `#[derive(DeviceSend)]` struct parameter.

Each leaf is one HBM tensor of the traced kernel (`ir.Param`), numbered in depth-first
order and named by its path (`inputs.0`, `inputs.x`); `run` takes one numpy array per
leaf, grouped like the annotation (a tuple for a tuple, an instance for a struct).
"""

from __future__ import annotations

import dataclasses
import sys
import typing
from collections.abc import Iterator
from typing import Any

import attrs

from ir.diagnostic import Violation
from npu_opt.tensor_data import TensorSpec

__all__ = ["Mut", "HbmTensorView", "HbmTensorViewMut", "ParamSpec", "Leaf", "Group", "param_tree",
           "leaves", "refuse_write"]


@attrs.frozen
class ParamSpec:
    """A parameter leaf's annotation: the tensor type, whether the kernel may write it, and
    how it was written (`tensor`, `view`, `view_mut`)."""

    tensor: Any  # a TensorSpec (checked by the trace) or what the user wrote
    writable: bool
    form: str = "tensor"

    def __str__(self) -> str:
        inner = _items_text(self.tensor) if self.form != "tensor" else str(self.tensor)
        return {"tensor": f"Mut[{inner}]" if self.writable else inner,
                "view": f"HbmTensorView[{inner}]", "view_mut": f"HbmTensorViewMut[{inner}]"}[self.form]


def _items_text(spec: Any) -> str:
    text = str(spec)
    return text[text.index("[") + 1:-1] if isinstance(spec, TensorSpec) else text


class Mut:
    """`Mut[HbmTensor[...]]`: an in-out parameter, Rust's `&mut HbmTensor<..>`."""

    def __class_getitem__(cls, inner: Any) -> ParamSpec:
        return ParamSpec(inner, True, "tensor")


class HbmTensorView:
    """`HbmTensorView[dtype, Chip, Element]`: a read-only view parameter (Rust `HbmTensorView<..>`)."""

    def __class_getitem__(cls, items: Any) -> ParamSpec:
        return ParamSpec(TensorSpec("hbm", items if isinstance(items, tuple) else (items,)), False, "view")


class HbmTensorViewMut:
    """`HbmTensorViewMut[dtype, Chip, Element]`: a writable view parameter (Rust `HbmTensorViewMut<..>`)."""

    def __class_getitem__(cls, items: Any) -> ParamSpec:
        return ParamSpec(TensorSpec("hbm", items if isinstance(items, tuple) else (items,)), True, "view_mut")


@attrs.frozen
class Leaf:
    """One HBM tensor parameter: its path name, flat index and annotation."""

    name: str
    index: int
    spec: ParamSpec


@attrs.frozen
class Group:
    """A tuple (`cls` None) or struct parameter: its path name and members (field, node)."""

    name: str
    cls: Any
    members: tuple[tuple[str, Any], ...]


@attrs.frozen
class BadParam:
    """An annotation that is not a parameter type: the violation to report."""

    name: str
    violation: Violation


def param_tree(name: str, ann: Any, scope: dict[str, Any], counter: list[int]) -> Leaf | Group | BadParam:
    """The parameter tree of annotation `ann` (leaves numbered from `counter[0]`)."""
    if isinstance(ann, TensorSpec):
        ann = ParamSpec(ann, False, "tensor")
    if isinstance(ann, ParamSpec) or getattr(ann, "form", None) == "scalar":  # HbmScalar[T]: docs/runtime.md
        counter[0] += 1
        return Leaf(name, counter[0] - 1, ann)
    if ann is tuple or typing.get_origin(ann) is tuple:
        args = typing.get_args(ann)
        if not args or Ellipsis in args:   # a Rust `[T; N]` lists its N members: tuple[T, T, T]
            return BadParam(name, Violation("PARAM-2", f"tuple parameter `{name}` must list its member types",
                                            help="write tuple[HbmTensor[...], ...] with one type per member"))
        return _group(name, None, [(str(i), param_tree(f"{name}.{i}", a, scope, counter))
                                   for i, a in enumerate(args)])
    fields = _struct_fields(ann, scope)
    if fields is not None:
        members = []
        for field, fann in fields:
            if fann is None or not _is_param_type(fann):
                return BadParam(name, Violation(
                    "PARAM-2", f"field `{field}` of struct parameter `{name}` ({ann.__name__}) is annotated "
                    f"{_text(fann)}, not a tensor type",
                    help="annotate every field with HbmTensor[...], Mut[HbmTensor[...]], a view type or a tuple"))
            members.append((field, param_tree(f"{name}.{field}", fann, scope, counter)))
        return _group(name, ann, members)
    return BadParam(name, Violation("TYPE-6", f"parameter `{name}` must be annotated HbmTensor[dtype, Chip, Element] "
                                    "(or Mut[...], a view type, a tuple or an attrs/dataclass struct of them)",
                                    label="no annotation" if ann is None else f"found {_text(ann):.60}"))


def _group(name: str, cls: Any, members: list[tuple[str, Any]]) -> Group | BadParam:
    """A tuple or struct node, or the first member refused (a nested `BadParam`)."""
    bad = next((m for _, m in members if isinstance(m, BadParam)), None)
    return bad if bad is not None else Group(name, cls, tuple(members))


def _text(ann: Any) -> str:
    return "nothing" if ann is None else getattr(ann, "__name__", None) or str(ann)


def _is_param_type(ann: Any) -> bool:
    return isinstance(ann, (TensorSpec, ParamSpec)) or getattr(ann, "form", None) == "scalar" or \
        typing.get_origin(ann) is tuple or \
        (isinstance(ann, type) and (attrs.has(ann) or dataclasses.is_dataclass(ann)))


def _struct_fields(ann: Any, scope: dict[str, Any]) -> list[tuple[str, Any]] | None:
    """(field, evaluated annotation) of an attrs / dataclass class, else None."""
    if not isinstance(ann, type):
        return None
    if attrs.has(ann):
        fields = attrs.fields(ann)
    elif dataclasses.is_dataclass(ann):
        fields = dataclasses.fields(ann)
    else:
        return None
    module = sys.modules.get(ann.__module__)
    where = {**scope, **(vars(module) if module is not None else {})}
    out = []
    for n, value in ((f.name, f.type) for f in fields):
        if isinstance(value, str):
            try:
                value = eval(value, where)  # noqa: S307 - the user's own annotation
            except Exception:  # noqa: BLE001 - reported as a field without a tensor type
                value = None
        out.append((n, value))
    return out


def leaves(node: Leaf | Group | BadParam) -> Iterator[Leaf]:
    """The leaves of a tree, in index order."""
    if isinstance(node, Leaf):
        yield node
    elif isinstance(node, Group):
        for _, member in node.members:
            yield from leaves(member)


def build_value(node: Leaf | Group, make_leaf: Any) -> Any:
    """The Python value a tree stands for in the trace: `make_leaf(leaf)` for each leaf, a
    tuple for a tuple, an instance of the struct (fields set directly) for a struct."""
    if isinstance(node, Leaf):
        return make_leaf(node)
    values = [(field, build_value(member, make_leaf)) for field, member in node.members]
    if node.cls is None:
        return tuple(v for _, v in values)
    obj = object.__new__(node.cls)
    for field, v in values:
        object.__setattr__(obj, field, v)
    return obj


def refuse_write(label: str) -> Violation:
    """PARAM-1: a write into parameter `label`, which is not marked in-out."""
    return Violation("PARAM-1", f"this writes into parameter `{label}`, which is read only",
                     label="written here",
                     help=f"annotate `{label.split('.')[0]}` with Mut[HbmTensor[...]] (or HbmTensorViewMut[...]) "
                          "to make it an in-out parameter")
