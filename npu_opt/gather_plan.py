"""The staged HBM gather and scatter of v0.9 (docs/machine/spm.md "Staged gather and scatter").

`table.gather(indexed_axis, payload)` names the table axis the index replaces and the rest
of a row; `.by_byte_offsets(index)` (an i32 HBM tensor of byte offsets) or
`.by_positions(domain, index)` (an i32 SPM tensor of row numbers) supplies the index;
`.sparse_prefix(n)` after byte offsets keeps each chip's first n entries (n an int, or a
runtime i32 scalar read at launch: `ir.gather_prefix`); `.to_dm(ctx.tdma, DmTensor[...])`
runs it. The scatter mirrors it from a write view of the destination:
`out.view_mut().scatter(indexed_axis, payload).by_byte_offsets(index).from_dm(ctx.tdma, data)`.

Both lower onto the records of the v0.6 forms (`ir.gather_ops.Gather` / `Scatter`); what the
staged form adds is checked here, at the call that states it (GATHER-7..9, SCATTER-7, SCATTER-8).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ir.diagnostic import Violation
from ir.gather import _digit_term, _whole_axes, gather_shape
from ir.gather_prefix import COUNT_DTYPE
from ir.gather_ops import Gather
from ir.mapping.factors import AxisFactor, PaddingFactor
from ir.mapping.nodes import Mapping, Symbol
from ir.scatter import page_of, scatter_shape
from ir.spm import pe_is_padding_only, positions_domain
from npu_opt.dma import _check_engine
from npu_opt.gather import _scatter_into, emit_gather
from npu_opt.runtime_scalars import Refused, ScalarParam
from npu_opt.spm import SpmTensor
from npu_opt.stagebase import Poisoned, location_of, mapping_argument_fault, refuse_call as _refuse
from npu_opt.tensor_data import HbmTensorData, TensorSpec
from npu_opt.trace import current
from ir.words import a_an

if TYPE_CHECKING:  # the public classes, assembled above this module (npu_opt.tensor_data)
    from npu_opt.tensors import HbmTensor

__all__ = ["GatherPlan", "ScatterPlan", "start_gather", "start_scatter"]


def _declared(element: Mapping, indexed: Any, payload: Any, what: str, code: str, outer: str) -> Any:
    """(violation or None, the indexed labels): the indexed axis is whole axes of `element`,
    side by side there (one axis, or several consecutive ones), or the high or low digit of
    one axis (`K / 2`: the element reads `K / 2, K % 2`), and the payload is `element`
    without them (`code` for a declaration that does not fit, `outer` for axes that are not
    consecutive or an element that is not whole axes)."""
    if not isinstance(indexed, Mapping) or not isinstance(payload, Mapping):
        return Violation("TYPE-6", f"`{what}` takes the indexed axis and the payload, each built by m()",
                         help=f'e.g. `.{what}(m("K"), m("D"))`'), ()
    axes = _whole_axes(element)
    key = _labels(indexed)
    if axes is None:
        return Violation(outer, f"the {'table' if what == 'gather' else 'destination'}'s element `{element}` must "
                                "list whole axes"), ()
    axes = _split_for(axes, key) if key and len(key) == 1 else axes
    if not key or axes is None or any(k not in axes for k in key):
        return Violation(code, f"the indexed axis `{indexed}` is not whole axes of `{element}`, nor the high or "
                               "the low digit of one of them",
                         help="name the axis (or consecutive axes) the index values select, e.g. m(\"K\"), or one "
                              "digit of an axis alone, e.g. m(\"K / 2\")"), ()
    first = axes.index(key[0])
    if axes[first:first + len(key)] != key:
        return Violation(outer, f"the indexed axes `{indexed}` are not side by side, in that order, in `{element}`: "
                                "an index value names one position of one consecutive region",
                         help="index one axis, or axes that are consecutive in the tensor's element"), ()
    rest = tuple(a for a in axes if a not in key)
    if _labels(payload) != rest:
        expected = ", ".join(a for a, _ in rest) or "1"
        return Violation(code, f"the payload `{payload}` is not `{element}` without its indexed axis `{indexed}` "
                               f"(expected `{expected}`)", help=f'declare the payload as m("{expected}")'), ()
    return None, key


def _labels(mapping: Mapping) -> tuple[tuple[str, int], ...] | None:
    """(label, size) of each factor of a mapping of axes and digits of axes (`K`, `K % 2`)."""
    out = []
    for f in mapping.factors():
        if not isinstance(f, AxisFactor):
            return None
        term = _digit_term(f.axis, f.axis_size, {(f.step, f.extent)})
        if term is None:
            return None
        out.append((f.axis, f.axis_size) if term.size == f.axis_size else (term.text(), term.size))
    return tuple(out)


def _split_for(axes: tuple[tuple[str, int], ...], key: tuple[tuple[str, int], ...]) -> Any:
    """`axes` with the axis of the one indexed digit `key` read as its two digits (`K / 2,
    K % 2`); `axes` when the key is a whole axis, None when it is a middle digit."""
    (label, size), = key
    if key[0] in axes:
        return axes
    for i, (a, n) in enumerate(axes):
        for low in (size, n // size) if n % size == 0 and 1 < size < n else ():   # `A / low` or `A % low`
            digits = (Symbol(a, n).stride(low), Symbol(a, n).modulo(low))
            if label in (d.text() for d in digits):
                return axes[:i] + tuple((d.text(), d.size) for d in digits) + axes[i + 1:]
    return None


def _region_fault(shape: Any, indexed: tuple[tuple[str, int], ...], code: str) -> Violation | None:
    """The axes the op's types leave for the index (`shape.region`) are the declared indexed
    axes: an output (updates) that lacks a payload axis would leave it to the index too."""
    if isinstance(shape, Violation) or shape.region == indexed:
        return None
    what = "output" if code == "GATHER-3" else "updates"
    declared, left = (", ".join(a for a, _ in axes) for axes in (indexed, shape.region))
    return Violation(code, f"the indexed axis is {declared}, but the {what} leave{'s' if what == 'output' else ''} "
                           f"{left} to the index: the {what} must hold the payload once per index entry",
                     help=f"give the {what} every payload axis and, besides them, only the index's axes")


def _padded(mapping: Mapping) -> bool:
    return any(isinstance(f, PaddingFactor) for f in mapping.factors())


def start_gather(table: HbmTensor, indexed: Any, payload: Any) -> Any:
    """`table.gather(indexed_axis, payload)`."""
    bad, key = _declared(table.type.element, indexed, payload, "gather", "GATHER-7", "GATHER-3")
    return _refuse(bad, "gather") if bad is not None else GatherPlan(table, key)


class GatherPlan:
    """A gather being stated: the table, then its index, then (byte offsets) a prefix."""

    def __init__(self, table: HbmTensor, indexed: tuple[tuple[str, int], ...] = ()) -> None:
        self._table = table
        self._indexed = indexed
        self._index: Any = None
        self._scaled = True
        self._prefix: int | None = None
        self._count: Any = None          # a runtime prefix: the traced i32 scalar

    def by_byte_offsets(self, index: Any, domain: Any = None) -> Any:
        """Byte offsets into the table, an i32 HBM tensor whose element is the index domain
        (`domain`: the reference's `Domain` type argument, the index's element, checked)."""
        if self._index is not None:
            return _refuse(Violation("GATHER-8", "the gather already has its index"), "by_byte_offsets")
        if not isinstance(index, HbmTensorData):
            return _refuse(Violation("GATHER-8", f"`by_byte_offsets` reads byte offsets from an HbmTensor, not "
                                                 f"{type(index).__name__}",
                                     help="pass the HBM tensor of offsets; positions in SPM go to `by_positions`"),
                           "by_byte_offsets")
        if _padded(index.type.element):
            return _refuse(Violation("GATHER-8", f"the index's element `{index.type.element}` has padding: an index "
                                                 "holds one entry at every position"), "by_byte_offsets")
        bad = mapping_argument_fault("by_byte_offsets", "domain", domain, index.type.element, "the index's element",
                                     "GATHER-8")
        if bad is not None:
            return _refuse(bad, "by_byte_offsets")
        self._index = index
        return self

    def by_positions(self, index: Any, domain: Any = None) -> Any:
        """Row numbers held in SPM, `by_positions(index, domain)`: `domain` names the axes they
        key (the Cluster's own axes, then the list's); the list sits on PE 0 (`Pe` padding
        only, `m("1 # 4")`). The domain-first order `by_positions(domain, index)` also reads."""
        index, domain = _positions_args(index, domain)
        if self._index is not None:
            return _refuse(Violation("GATHER-8", "the gather already has its index"), "by_positions")
        bad = _positions_fault(domain, index, "by_positions", "GATHER-8")
        if bad is not None:
            return _refuse(bad, "by_positions")
        self._index, self._scaled = index, False
        return self

    def sparse_prefix(self, valid_length: Any) -> Any:
        """Each chip gathers only its first `valid_length` entries (domain order); the rest of
        the output stays zero. An int, or a runtime i32 scalar (`n.to_spm(ctx.tdma)` of an
        `HbmScalar[i32]`); zero or less gathers none, more than the list gathers it all."""
        stage = "sparse_prefix"
        if isinstance(valid_length, Refused):   # its fault is already reported
            return Poisoned(stage)
        if isinstance(valid_length, ScalarParam):
            return _refuse(Violation("RUNTIME-7", f"scalar parameter `{valid_length.name}` is in HBM; read it "
                                                  "before the gather uses it",
                                     help=f"`.sparse_prefix({valid_length.name}.to_spm(ctx.tdma))`"), stage)
        if self._index is None or not self._scaled:
            return _refuse(Violation("GATHER-9", "`sparse_prefix` follows `by_byte_offsets`: it shortens a list "
                                                 "of byte offsets", help="`.by_byte_offsets(index).sparse_prefix(n)`"),
                           stage)
        if self._prefix is not None or self._count is not None:
            return _refuse(Violation("GATHER-9", "the gather already has a sparse prefix"), stage)
        if getattr(valid_length, "RUNTIME_SCALAR", False):
            dtype = valid_length.dtype.name
            if dtype != COUNT_DTYPE:
                return _refuse(Violation("GATHER-9", f"`sparse_prefix` takes a runtime {COUNT_DTYPE}, not {a_an(dtype)}",
                                         help=f"cast it: `.sparse_prefix(n.cast({COUNT_DTYPE}))`"
                                         if dtype != "bool" else "pass the number of valid entries"), stage)
            self._count = valid_length.value
            return self
        if isinstance(valid_length, bool) or not isinstance(valid_length, int):
            return _refuse(Violation("GATHER-9", f"`sparse_prefix` takes an int or a runtime i32 scalar, not "
                                                 f"{type(valid_length).__name__}",
                                     help="pass the number of valid entries, e.g. `.sparse_prefix(100)`"), stage)
        self._prefix = min(max(valid_length, 0), self._index.type.element.size)
        return self

    def to_dm(self, dma: Any, dst: Any = None) -> Any:
        """Run the gather into a new DM tensor of type `dst`."""
        stage = "to_dm"
        bad = _check_engine(dma, stage)
        if bad is None and self._index is None:
            bad = Violation("GATHER-8", "the gather has no index yet", help="`.by_byte_offsets(index)` first")
        if bad is None and (not isinstance(dst, TensorSpec) or dst.kind != "dm"):
            bad = Violation("TYPE-6", f"the destination of a gather's `to_dm` must be a DmTensor[...] type, not "
                                      f"{dst!s:.60}")
        dst_type = bad or dst.resolve()
        if not isinstance(dst_type, Violation):
            shape = gather_shape(self._table.type, self._index.type, dst_type)
            dst_type = _region_fault(shape, self._indexed, "GATHER-3") or dst_type
        if isinstance(dst_type, Violation):
            return _refuse(dst_type, stage)
        tracer = current()
        loc = location_of(stage)
        return emit_gather(Gather(src=self._table.value, index=self._index.value, scaled=self._scaled,
                                  prefix=self._prefix, count=self._count, result=tracer.value(dst_type),
                                  loc=loc), stage)


def _positions_args(index: Any, domain: Any) -> tuple[Any, Any]:
    """(index, domain) of `by_positions(index, domain)` (rule 2: the operand, then the
    `Domain` type argument) or of the domain-first `by_positions(domain, index)`."""
    if isinstance(index, Mapping) and not isinstance(domain, Mapping):
        return domain, index
    return index, domain


def _positions_fault(domain: Any, index: Any, stage: str, code: str) -> Violation | None:
    """The placement rules of a `by_positions` index (an i32 SPM list on PE 0)."""
    if not isinstance(index, SpmTensor):
        return Violation(code, f"`{stage}` reads row numbers from an SpmTensor, not {type(index).__name__}",
                         help="stage the index with `.to_spm(ctx.tdma, SpmTensor[i32, Chip, Cluster, m(\"1 # 4\"), "
                              "m(\"K\")])`")
    t = index.type
    if not pe_is_padding_only(t.pe):
        return Violation(code, f"the index's Pe `{t.pe}` must keep the whole list on PE 0 (`1 # {t.pe.size}`): the "
                               "DMA engine reads it there", help=f'write the Pe as m("1 # {t.pe.size}")')
    if _padded(t.element):
        return Violation(code, f"the index's element `{t.element}` has padding: an index holds one entry at every "
                               "position")
    if not isinstance(domain, Mapping) or _whole_axes(domain) is None:
        return Violation("TYPE-6", f"the domain of `{stage}` is a mapping of whole axes, not {domain!s:.40}",
                         help='e.g. `.by_positions(index, m("K"))`: the Rust `Domain` type argument')
    names = tuple(a for a, _ in _whole_axes(domain))
    if names != positions_domain(t):
        return Violation(code, f"the domain `{domain}` is not the axes the index keys "
                               f"({', '.join(positions_domain(t)) or 'none'}: a placed Cluster's axes, then the list's)")
    return None


def start_scatter(view: Any, indexed: Any, payload: Any) -> Any:
    """`out.view_mut().scatter(indexed_axis, payload)`: the view is the whole tensor, or one
    page of it (one position of its outermost axis, at a trace-time or a runtime start:
    `ir.scatter.page_of`), whose index counts bytes from the page's start."""
    base = view._base
    whole = view._offsets == (0,) * len(view._offsets) and view.type == base.value.type and view._runtime is None
    page = None if whole else page_of(base.value.type, view.type, view._offsets)
    if not whole and page is None:
        return _refuse(Violation("SCATTER-8", "a scatter writes through the whole tensor's `view_mut()` or one "
                                              "page of it (one position of its outermost axis), not another tile "
                                              "or a reshape", help='tile the outermost axis by one: '
                                              '`.tile(m("P"), 1, m("1 #{!} 4, C, D"), p)`'), "scatter")
    element = view.type.element if page is None else page[0].element
    bad, key = _declared(element, indexed, payload, "scatter", "SCATTER-7", "SCATTER-4")
    if bad is not None:
        return _refuse(bad, "scatter")
    return ScatterPlan(base, key, None if page is None else (*page, view))


class ScatterPlan:
    """A scatter being stated: its destination, then its index, then the updates."""

    def __init__(self, destination: HbmTensor, indexed: tuple[tuple[str, int], ...] = (), page: Any = None) -> None:
        self._dst = destination
        self._page = page   # (the page's type, its first cell, the write view) of a scatter into one page
        self._indexed = indexed
        self._index: Any = None
        self._key: Mapping | None = None

    def by_byte_offsets(self, index: Any, domain: Any = None) -> Any:
        """Byte offsets into the destination: an i32 HBM tensor (or its read view) over the
        domain (`domain`: the reference's `Domain` type argument, the index's element, checked)."""
        if self._index is not None:
            return _refuse(Violation("SCATTER-8", "the scatter already has its index"), "by_byte_offsets")
        value = getattr(index, "value", None)
        t = getattr(value, "type", None)
        if t is None or t.kind != "hbm" or isinstance(index, SpmTensor):
            return _refuse(Violation("SCATTER-8", f"`by_byte_offsets` reads byte offsets from an HBM tensor, not "
                                                  f"{type(index).__name__}"), "by_byte_offsets")
        if _padded(t.element):
            return _refuse(Violation("SCATTER-8", f"the index's element `{t.element}` has padding: an index holds "
                                                  "one entry at every position"), "by_byte_offsets")
        bad = mapping_argument_fault("by_byte_offsets", "domain", domain, t.element, "the index's element",
                                     "SCATTER-8")
        if bad is not None:
            return _refuse(bad, "by_byte_offsets")
        self._index, self._key = index, t.element
        return self

    def by_positions(self, index: Any, domain: Any = None) -> Any:
        """Row numbers held in SPM, over `domain` (as the gather's `by_positions`)."""
        index, domain = _positions_args(index, domain)
        if self._index is not None:
            return _refuse(Violation("SCATTER-8", "the scatter already has its index"), "by_positions")
        bad = _positions_fault(domain, index, "by_positions", "SCATTER-8")
        if bad is not None:
            return _refuse(bad, "by_positions")
        self._index, self._key = index, domain
        return self

    def from_dm(self, dma: Any, updates: Any) -> Any:
        """Write `updates` (a DM tensor over the domain and the payload) into the destination."""
        return self._run(dma, updates, "from_dm")

    def from_dm_view(self, dma: Any, updates: Any) -> Any:
        """`from_dm` from a read view of a DM tensor."""
        return self._run(dma, updates, "from_dm_view")

    def _run(self, dma: Any, updates: Any, stage: str) -> Any:
        bad = _check_engine(dma, stage)
        if bad is None and self._index is None:
            bad = Violation("SCATTER-8", "the scatter has no index yet", help="`.by_byte_offsets(index)` first")
        if bad is None and getattr(getattr(updates, "type", None), "kind", None) != "dm":
            bad = Violation("TYPE-6", f"`{stage}` takes the DM tensor of updates, not {type(updates).__name__}")
        if bad is None:
            index_t = self._index.value.type
            out_t = self._dst.value.type if self._page is None else self._page[0]
            shape = scatter_shape(updates.type, self._key, index_t, out_t)
            bad = _region_fault(shape, self._indexed, "SCATTER-4")
        if bad is not None:
            return _refuse(bad, stage)
        return _scatter_into(updates, self._index, self._dst, self._key, location_of(stage), self._page)
