"""`npu-opt visa --verify`: run every op verifier on a parsed artifact and re-derive what its
types fix (visa/visa.lark and 1.4). Any failure is a `VisaTextError` naming the record's line.

Re-derived beyond the op verifiers of docs/reference/diagnostics.md: the target line, the DM and TRF
addresses (lowest free 8-byte address at the creating step; TRF rows by tu_ops/trf_place.py), the spatial mappings of
in-program DM types, a feed's source dtype and element mapping, each DMA's partitions and
byte count, a commit's `write_bytes`, and every cost counter. Then every record's fields are
re-derived from its types by the lowering's own builders (`visa.relower`: read plans, flit
counts, TRF geometry and walk, reduction geometry, write plans, DMA commands...) and compared
field by field; the first disagreement names the field, the value found and the types' value.
"""

from __future__ import annotations

from collections import namedtuple
from typing import Any

from ir.errors import NpuOptError
from ir.mapping.live import is_window
from ir.mapping.ops import coalesce
from ir.topology import PE_COUNTS, pe_fault
from ir.resident import placements
from tu_ops import BUILTIN_TARGETS
from tu_ops.base import OpVerifyError
from tu_ops.dma_view import dm_roots
from tu_ops.rf_reshape import rf_aliases, rf_root
from tu_ops.enums import Region, TuContext
from tu_ops.printing import mapping_text, type_text, value_text
from tu_ops.program import LoweredKernel, TuProgram, resident_ranges
from tu_ops.trf_new import trf_maker
from tu_ops.vrf import vrf_capacity, vrf_words
from visa.artifact import VisaArtifact, VisaTextError
from visa.cost import compute_cost
from visa.facts import lowest, trf_rows, with_facts
from visa.parser import parse_visa
from visa.printer import record_lines, target_hash
from visa.relower import expected_dma, expected_program, first_difference
from visa.relower_indexed import (expected_gather, expected_redistribute, expected_relayout, expected_scatter,
                                  expected_shuffle, expected_spm)
from visa.relower import Underivable
from visa.verify_dma import check_dma
from tu_ops.loop_checks import check_loops

__all__ = ["verify_artifact", "verify_text"]

# What a check may raise on absurd (but well-formed) values; reported as a format error.
_CRASHES = (TypeError, ValueError, ArithmeticError, AttributeError, KeyError, IndexError, NpuOptError)


class _Failer:
    """Builds the VisaTextError of a record, at its line in the artifact's text."""

    def __init__(self, artifact: VisaArtifact, source: str | None) -> None:
        self.lines = record_lines(artifact) | dict(artifact.lines)
        self.source = source
        self.in_program = {op.result.id for p in artifact.kernel.programs() for op in p.ops}

    def op(self, op: Any, detail: str, rule: str | None = None) -> VisaTextError:
        ident = getattr(getattr(op, "result", None), "id", None)
        line = self.lines.get(f"%{ident}", 1)
        col = 3 if ident in self.in_program else 1
        return VisaTextError(detail, line=line, column=col, source=self.source, rule=rule)

    def key(self, key: str, detail: str, column: int = 1) -> VisaTextError:
        return VisaTextError(detail, line=self.lines.get(key, 1), column=column, source=self.source)


def verify_text(text: str, target: Any = None) -> VisaArtifact:
    """Parse and verify a `.visa` text on `target` (default: the built-in target its `target`
    line names; a target file is never looked up by that name); return the artifact. The
    function behind `npu-opt visa FILE --verify`."""
    artifact = parse_visa(text, target=target)
    if target is None:
        builtin = BUILTIN_TARGETS.get(artifact.target)
        if builtin is None:
            raise VisaTextError(f"`{artifact.target}` is not a built-in target; verify with its description "
                                f"file (--target FILE)", line=artifact.lines.get("target", 3), column=8,
                                source=text)
        target = builtin()
    verify_artifact(artifact, target, source=text)
    return artifact


def verify_artifact(artifact: VisaArtifact, target: Any, *, source: str | None = None) -> None:
    """Run every op verifier and re-derive what the records' types fix; raise VisaTextError
    (code: the rule ID for a verifier failure) at the first problem. `source` is the text the
    artifact was read from, quoted in messages."""
    fail = _Failer(artifact, source)
    if (artifact.target, artifact.target_sha256) != (target.name, target_hash(target)):
        raise fail.key("target", f"the artifact was built for target `{artifact.target}` sha256 "
                                 f"{artifact.target_sha256}, not `{target.name}` sha256 {target_hash(target)}")
    try:
        kernel = with_facts(artifact.kernel, target)
    except _CRASHES as e:
        raise fail.key("target", f"cannot derive the allocations: {e}") from None
    _check_spaces(kernel, target, fail)
    try:
        check_loops(kernel)   # rolled loops (docs/loops.md): their bodies for every iteration, their buffers
    except OpVerifyError as e:
        raise fail.op(e.op, f"[{e.code}] {e}", rule=e.code) from None
    _run_verifiers(kernel, target, fail)
    try:
        _check_addresses(kernel, target, fail)
        _check_records(kernel, target, fail)
        _check_operands(kernel, target, fail)
        cost = compute_cost(kernel, target)
    except VisaTextError:
        raise
    except _CRASHES as e:
        raise fail.key("target", f"the records cannot be re-derived: {e}") from None
    for key, value in artifact.cost.items():
        if cost.get(key) != value:
            raise fail.key(f"cost.{key}", f"cost {key}={value}, but the records give {cost.get(key)}", 3)


# --- operands (every reference names an earlier value of the type the record declares) -------

def _check_operands(kernel: LoweredKernel, target: Any, fail: _Failer) -> None:
    """Each op's streamed operand is an earlier value whose type is the record's input type;
    `weights` is an earlier `trf_load` of the declared weight dtype; a feed's source is an
    earlier DM tensor (its dtype and element are `_check_feed`'s)."""
    types: dict[int, Any] = {p.ref.id: p.type for p in kernel.params}
    producers: dict[int, Any] = {}
    for op in kernel.ops():
        for ref in op.operands():
            if ref.id not in types:
                raise fail.op(op, f"{ref} is not a parameter or the result of an earlier record")
        streamed = op.stream_input()
        if streamed is not None:
            have, want = types[streamed.id], op.input_type
            spatial = not op.IN_PROGRAM
            if type_text(have, spatial=spatial) != type_text(want, spatial=spatial):
                raise fail.op(op, f"{streamed} is {type_text(have, spatial=spatial)}, but the record declares "
                                  f"its input as {type_text(want, spatial=spatial)}")
        weights = getattr(op, "weights", None)
        if weights is not None:
            load = rf_root(weights, lambda ref: producers.get(ref.id))  # through its relabels
            if load is None or trf_maker(load, target) is None:
                raise fail.op(op, f"weights {weights} is not the result of a trf_load or a TRF tensor_new")
            if load.output_type.dtype != op.weight_type.dtype:
                raise fail.op(op, f"weight_type {op.weight_type}, but {weights} holds {load.output_type.dtype}")
        if op.result.id in types:
            raise fail.op(op, f"{op.result} is defined twice")
        types[op.result.id] = op.output_type
        producers[op.result.id] = op


# --- addresses (visa/visa.lark, "DM allocation" / "TRF allocation") -----------------------

def _check_addresses(kernel: LoweredKernel, target: Any, fail: _Failer) -> None:
    """Every DM tensor sits at the lowest free multiple of 8 among the tensors live at the step
    that creates it, every TRF tensor at the rows of the placement rule (tu_ops/trf_place.py:
    the lowest free, even for Flit2, kept off the previous TRF tensor's outside a rolled loop
    when the TRF has room)."""
    resident = [p for p in kernel.params if p.at is not None]
    for p, want in zip(resident, placements(p.type for p in resident)):
        if p.at != want:
            raise fail.key(str(p.ref), f"resident parameter {p.ref} is at DM byte {p.at}; the resident parameters "
                                       f"sit one after the other from DM byte 0 (ir/resident.py), {p.ref} at {want}")
    ops = kernel.context().ops
    for a in kernel.dm_allocations:
        busy = [(b.base, b.base + b.size) for b in kernel.dm_allocations
                if b.tensor != a.tensor and b.first_step <= a.first_step <= b.last_step]
        want = lowest(busy + resident_ranges(kernel.params), a.size, 8)
        if a.base != want:
            raise fail.op(ops[a.tensor.id], f"the tensor is placed at DM byte {a.base}; the DM allocation "
                                            f"places it at {want}")
    rows = trf_rows(kernel, target)
    for a in kernel.trf_allocations:
        load = ops[a.tensor.id]
        if a.region is not Region.FULL:
            raise fail.op(load, f"VISA 1 loads the TRF with region=FULL, not {a.region}")
        want = rows[a.tensor.id]
        if a.base_row != want:
            raise fail.op(load, f"base_row {a.base_row}; the TRF allocation places this tensor at row {want}")
    _check_vrf(kernel, target, fail)


def _check_vrf(kernel: LoweredKernel, target: Any, fail: _Failer) -> None:
    """Every VRF tensor sits at the lowest free word among the VRF tensors live at the step
    that creates it (from its `vrf_load` or `tensor_new` through the last pass reading it or a
    relabel of it), as the VRF allocation places it; one that does not fit is VRF-6. A
    `tensor_new` has no field for its word, a `vrf_load` its `base`."""
    live: dict[int, list] = {}  # tensor id -> [record, first step, last step]
    root = rf_aliases(kernel.ops())  # a relabel's result -> the tensor it names
    for step, s in enumerate(kernel.steps):
        for op in (s.ops if isinstance(s, TuProgram) else (s,)):
            if vrf_words(op) is not None:
                live[op.result.id] = [op, step, step]
            for ref in op.rf if hasattr(op, "rf_read") else ():  # a pass reading the VRF (or a relabel of it)
                r = root.get(ref.id, ref.id)
                if r in live:
                    live[r][2] = max(live[r][2], step)
    base: dict[int, int] = {}
    for ref in sorted(live, key=lambda r: (live[r][1], r)):
        rec, first, _ = live[ref]
        words = vrf_words(rec)
        busy = [(base[o], base[o] + vrf_words(live[o][0])) for o in base if live[o][1] <= first <= live[o][2]]
        base[ref] = want = lowest(busy, words, 1)
        if want + words > vrf_capacity(target):
            raise fail.op(rec, f"[VRF-6] VRF over-subscribed: {words * 4} bytes requested, "
                               f"{sum(b - a for a, b in busy) * 4} of {vrf_capacity(target) * 4} bytes per slice held by live "
                               "VRF tensors", rule="VRF-6")
        if rec.MNEMONIC == "vrf_load" and rec.base != want:
            raise fail.op(rec, f"base {rec.base}; the VRF allocation places this tensor at word {want}")


def _run_verifiers(kernel: LoweredKernel, target: Any, fail: _Failer) -> None:
    """`LoweredKernel.verify` op by op, so that even a verifier crashing on absurd values
    names its record; then MEM-3 / MEM-4."""
    ctx, op = kernel.context(), None
    try:
        for op in kernel.ops():
            op.verify(target, ctx)
        op = None
        kernel.verify_memory(target)
    except OpVerifyError as e:
        raise fail.op(e.op, f"[{e.code}] {e.message}", rule=e.code) from None
    except _CRASHES as e:
        raise fail.op(op, f"the record cannot be verified: {e}") from None


# --- spatial sizes (SPACE-1 ... SPACE-3) -----------------------------------------------------

def _check_spaces(kernel: LoweredKernel, target: Any, fail: _Failer) -> None:
    """Every Chip has `chip` positions (a legal count of the target), every Cluster and Slice a
    legal size, on the DMA types and on each program's space; with `pe P` in the signature, every
    Cluster and Slice fits P processing elements (SPACE-5)."""
    c = target.constants
    if kernel.pe not in PE_COUNTS:
        raise fail.op(None, f"[SPACE-5] pe {kernel.pe} is not one of {list(PE_COUNTS)}", rule="SPACE-5")
    for step in kernel.steps:
        if is_runtime(step):  # a scalar has no spatial levels (docs/runtime.md)
            continue
        ops = step.ops if isinstance(step, TuProgram) else (step,)
        spaces = [t for op in ops for t in (op.input_type, op.output_type) if t.kind not in ("hbm", "spm")]
        chips = [t.chip for op in ops for t in (op.input_type, op.output_type)]
        if isinstance(step, TuProgram):
            spaces.append(_Space(*step.space))
        where = ops[0] if ops else None
        for chip in chips:
            if chip.size != kernel.chip or chip.size not in target.chips:
                raise fail.op(where, f"[SPACE-1] size(Chip) {chip.size}; the kernel has chip={kernel.chip} and "
                                     f"target {target.name} allows {list(target.chips)}", rule="SPACE-1")
        for t in spaces:
            too_big = pe_fault(kernel.pe, t.cluster.size, t.slice.size, c.CLUSTER_SIZES, c.SLICE_SIZES)
            if too_big is not None:
                raise fail.op(where, f"[SPACE-5] {too_big}", rule="SPACE-5")
            if t.cluster.size not in c.CLUSTER_SIZES:
                raise fail.op(where, f"[SPACE-2] size(Cluster) {t.cluster.size} is not one of "
                                     f"{list(c.CLUSTER_SIZES)}", rule="SPACE-2")
            if t.slice.size not in c.SLICE_SIZES:
                raise fail.op(where, f"[SPACE-3] size(Slice) {t.slice.size} is not one of {list(c.SLICE_SIZES)}",
                              rule="SPACE-3")


_Space = namedtuple("_Space", "chip cluster slice")
"""A program's `(Chip, Cluster, Slice)` seen with the attribute names of a type."""


# --- runtime guards (docs/runtime.md) -------------------------------------------------------

def is_runtime(step: Any) -> bool:
    """Whether a body step is a runtime scalar or guard record (`tu_ops.runtime`)."""
    return not isinstance(step, TuProgram) and getattr(step, "RUNTIME", False)


def guard_problem(kernel: Any) -> tuple[Any, str] | None:
    """(record, problem) of the first guard record out of its bracket order, or None (rule
    RUNTIME-8): `guard_begin` / `guard_end` records nest like brackets in body order, each
    `guard_end` closing the innermost open guard, and every guard is closed before `return`."""
    open_guards: list[Any] = []
    for step in kernel.steps:
        mnemonic = getattr(step, "MNEMONIC", None)
        if mnemonic == "guard_begin":
            open_guards.append(step)
        elif mnemonic == "guard_end":
            if not open_guards or open_guards[-1].result != step.begin:
                inner = open_guards[-1].result if open_guards else None
                return step, (f"guard_end closes {step.begin}, but the innermost open guard is {inner}"
                              if inner is not None else f"guard_end closes {step.begin}, but no guard is open")
            open_guards.pop()
    if open_guards:
        return open_guards[-1], "this guard is never closed by a guard_end"
    return None


# --- per-record re-derivations ----------------------------------------------------------------

def _check_records(kernel: LoweredKernel, target: Any, fail: _Failer) -> None:
    types = {p.ref.id: p.type for p in kernel.params} | {op.result.id: op.output_type for op in kernel.ops()}
    dm_base = {a.tensor.id: a.base for a in kernel.dm_allocations} | {p.ref.id: p.at for p in kernel.params
                                                                      if p.at is not None}
    dm_at = dm_base | {a: dm_base[r] for a, r in dm_roots(kernel.ops()).items() if r in dm_base}  # writes into DM
    bad = guard_problem(kernel)
    if bad is not None:
        raise fail.op(bad[0], f"[RUNTIME-8] {bad[1]}", rule="RUNTIME-8")
    for step in kernel.steps:
        if is_runtime(step):  # its fields are its verifier's (tu_ops.runtime)
            continue
        if not isinstance(step, TuProgram):
            into = getattr(step, "into", None)  # dma_into, memset: the result is `into`'s new contents
            if into is not None and types.get(into.id) != step.output_type:
                raise fail.op(step, f"the {step.MNEMONIC} writes into {into}, which is not of its output type")
            if step.MNEMONIC in ("tensor_new", "memset", "rf_reshape"):  # no derived field (RFRESHAPE-2 its rule)
                continue
            src = getattr(step, "src", None)   # a tile it reads is named by its fields, not by its input type
            if src is not None and src.id in types and types[src.id] != step.input_type:
                raise fail.op(step, f"the {step.MNEMONIC} reads {src} as {step.input_type}, not its type {types[src.id]}")
            check_dma(step.as_dma() if step.MNEMONIC == "dma_spm" else step, target, fail)
            indexed = {"dma_gather": expected_gather, "dma_scatter": expected_scatter,
                       "dma_shuffle": expected_shuffle, "dma_spm": expected_spm,
                       "dma_redistribute": expected_redistribute,
                       "dma_relayout": expected_relayout}.get(step.MNEMONIC)
            expected = (_derive(indexed, step, step, types, dm_base, target, fail=fail) if indexed
                        else _derive(expected_dma, step, step, target, fail=fail))
            _check_derived([(step, expected)], fail)
            continue
        for op in step.ops:
            if op.output_type.kind == "dm" and op.output_type.spatial() != step.out_space:
                raise fail.op(op, "the DM tensor's Chip, Cluster and Slice mappings differ from the program's space")
            if op.MNEMONIC == "feed_buffer":
                _check_feed(op, types.get(op.source.tensor.id), fail)
                if op.interleave is not None and types.get(op.interleave.tensor.id) != types.get(op.source.tensor.id):
                    raise fail.op(op, "the two tensors of an interleaved feed have different types")
            elif op.MNEMONIC == "commit":
                _check_commit(op, step.context, target, fail)
                if op.into is not None and types.get(op.into.id) != op.output_type:
                    raise fail.op(op, f"the commit writes into {op.into}, which is not of its output type")
                if op.into is not None and op.into.id in dm_at and op.dest != dm_at[op.into.id] + op.offset:
                    raise fail.op(op, f"dest {op.dest} is not {op.into}'s address {dm_at[op.into.id]} plus "
                                      f"offset {op.offset}")
        first = step.ops[0] if step.ops else None
        _check_derived(_derive(expected_program, first, step, types, target, fail=fail), fail)


def _derive(build: Any, where: Any, *args: Any, fail: _Failer) -> Any:
    """`build(*args)` (a `visa.relower` function); a record the lowering's builders cannot
    lower is refused at its line (at `where`'s when the failure names no record)."""
    try:
        return build(*args)
    except Underivable as e:
        raise fail.op(e.op if e.op is not None else where,
                      f"the record's fields cannot be re-derived from its types: {e.detail}") from None


def _check_derived(pairs: list[tuple[Any, Any]], fail: _Failer) -> None:
    """Every printed field of each record equals the one the lowering derives from its types
    (visa/visa.lark); allocation fields are checked by `_check_addresses` instead."""
    for found, expected in pairs:
        diff = first_difference(found, expected)
        if diff is not None:
            path, got, want = diff
            raise fail.op(found, f"{found.MNEMONIC} field {path}={value_text(got)} disagrees with the record's "
                                 f"types, which give {path}={value_text(want)}")


def _check_feed(op: Any, source: Any, fail: _Failer) -> None:
    """The feed reads a DM tensor of its dtype, through its element or a tile of it (of the
    levels a reshaped view relabelled it to: FEED-15 checks those and the program's space)."""
    if getattr(source, "kind", None) != "dm":
        raise fail.op(op, f"the feed reads {op.source.tensor}, which is not a DM tensor")
    if source.dtype != op.source.dtype:
        raise fail.op(op, f"source dtype {op.source.dtype}, but {op.source.tensor} holds {source.dtype}")
    held, whose = (op.reshape[-1], "reshaped element") if op.reshape is not None else (source.element, "element")
    if mapping_text(held) == mapping_text(op.source.element):
        return  # the whole tensor (its offset is re-derived: 0)
    if not is_window(held, op.source.element, op.source.offset):  # a tile of it (docs/views.md)
        raise fail.op(op, f"source mapping \"{mapping_text(op.source.element)}\", but {op.source.tensor}'s "
                          f"{whose} is \"{mapping_text(held)}\" (not a window of it at offset {op.source.offset})")


def _check_commit(op: Any, context: TuContext, target: Any, fail: _Failer) -> None:
    """write_bytes: valid_bytes for a contiguous packet write, else its smallest contiguous
    piece, in MAIN; SUB_ACCESS_BYTES in SUB (visa/visa.lark granularity)."""
    if context is TuContext.SUB:
        want = target.constants.SUB_ACCESS_BYTES
    else:
        run = coalesce(op.write.packet)
        if len(run) <= 1 and (not run or run[-1].stride == 1):
            want = op.valid_bytes
        else:
            piece = run[-1].size if run[-1].stride == 1 else 1
            want = -(-piece * op.elem_bits(target) // 8)
    if op.write_bytes != want:
        raise fail.op(op, f"write_bytes {op.write_bytes}; the write plan gives {want}")
