"""A staged gather's runtime sparse prefix (docs/machine/spm.md "Staged gather", furiosa-opt
v0.9 `sparse_prefix(valid_length)`): cpu == visa == a numpy oracle at several launch lengths,
the refusals, the `count=%k` field of the record (print, parse, verify) and its schedule."""

from __future__ import annotations

import re

import ml_dtypes
import numpy as np
import pytest

import npu_opt
from ir.gather import GatherIndexError
from ir.kernel import print_kernel
from tests.kernel_text import parse_kernel
from npu_opt import *
from tests.spm import kernels as staged
from tests.spm import runtime_prefix_kernels as k
from visa.artifact import VisaTextError
from visa.parser import parse_visa
from visa.printer import print_artifact
from visa.schedule import schedule_artifact
from visa.verify import verify_text

axes(T=200, W=32, G=256)

RNG = np.random.default_rng(927)
ROW = 32 * 2     # bytes of one W row of bf16


def _table(*lead):
    return RNG.standard_normal((*lead, 200, 32)).astype(ml_dtypes.bfloat16)


def _oracle(table, rows, n):
    """The first max(n, 0) gathered rows, zero after them (numpy only)."""
    want = np.zeros((len(rows), table.shape[-1]), table.dtype)
    keep = min(max(n, 0), len(rows))
    want[:keep] = table[rows[:keep]]
    return want


def _both(kernel, *args):
    a, b = (npu_opt.run(kernel, *args, backend=x) for x in ("cpu", "visa"))
    assert a.dtype == b.dtype and a.tobytes() == b.tobytes()
    return a


def _bits(a):
    return np.asarray(a).view(np.uint16)


@pytest.mark.parametrize("n", [0, -7, 1, 77, 255, 256, 300, 2 ** 31 - 1, -2 ** 31])
def test_a_runtime_length_gathers_that_prefix(n):
    table, rows = _table(), RNG.integers(0, 200, 256)
    out = _both(k.runtime_prefix, table, (rows * ROW).astype(np.int32), n)
    assert (_bits(out) == _bits(_oracle(table, rows, n))).all()


def test_one_compiled_kernel_serves_every_length():
    table, rows = _table(), RNG.integers(0, 200, 256)
    offsets = (rows * ROW).astype(np.int32)
    outs = {n: npu_opt.run(k.runtime_prefix, table, offsets, n, backend="visa") for n in (0, 13, 256)}
    assert [int((_bits(o) != 0).any(axis=1).sum()) for o in outs.values()] == \
        [int((_bits(_oracle(table, rows, n)) != 0).any(axis=1).sum()) for n in outs]
    assert (_bits(outs[256]) == _bits(table[rows])).all()


@pytest.mark.parametrize("n", [0, 1, 78, 257, 2 ** 31 + 5, 2 ** 32 - 1])
def test_a_computed_and_cast_length(n):
    """`(n - 1).cast(i32)` of a u32: wraps as Rust's `(n - 1) as i32` (0 - 1 is u32::MAX, -1 as i32)."""
    table, rows = _table(), RNG.integers(0, 200, 256)
    length = int(np.array([n], np.uint32).__sub__(np.uint32(1)).astype(np.int32)[0])
    out = _both(k.cast_prefix, table, (rows * ROW).astype(np.int32), n)
    assert (_bits(out) == _bits(_oracle(table, rows, length))).all()


def test_each_chip_cuts_its_own_list_at_the_one_length():
    table, rows = _table(2), RNG.integers(0, 200, (2, 256))
    out = _both(k.two_chip_prefix, table, (rows * ROW).astype(np.int32), 100)
    for chip in range(2):
        assert (_bits(out[chip]) == _bits(_oracle(table[chip], rows[chip], 100))).all()


@pytest.mark.parametrize("backend", ["cpu", "visa"])
def test_entries_past_a_runtime_prefix_are_still_checked(backend):
    rows = np.zeros(256, np.int32)
    rows[200] = 200 * ROW                     # past the launch length of 77, and past the table
    with pytest.raises(GatherIndexError, match=r"\[G=200\]"):
        npu_opt.run(k.runtime_prefix, _table(), rows, 77, backend=backend)


# --- refusals ---------------------------------------------------------------------------------

def _offsets_plan(t, o):
    return t.gather(m("T"), m("W")).by_byte_offsets(o)


def _in_spm(ctx, o):
    d = o.to_dm(ctx.tdma, DmTensor[i32, k.Chip, k.Cluster, m("1 # 256"), m("G")])
    return d.to_spm(ctx.tdma, SpmTensor[i32, k.Chip, k.Cluster, m("1 # 4"), m("G")])


def _made_in_a_block(ctx, t, o, n32, flag):
    with ctx.when(flag.to_spm(ctx.tdma)):
        valid = n32.to_spm(ctx.tdma)
    return _offsets_plan(t, o).sparse_prefix(valid)


REFUSED = {
    "a u32 length": ("GATHER-9", lambda c, t, o, n32, nu32, flag: _offsets_plan(t, o).sparse_prefix(
        nu32.to_spm(c.tdma))),
    "an i64 length": ("GATHER-9", lambda c, t, o, n32, nu32, flag: _offsets_plan(t, o).sparse_prefix(
        n32.to_spm(c.tdma).cast(i64))),
    "a bool length": ("GATHER-9", lambda c, t, o, n32, nu32, flag: _offsets_plan(t, o).sparse_prefix(
        flag.to_spm(c.tdma))),
    "a comparison as the length": ("GATHER-9", lambda c, t, o, n32, nu32, flag: _offsets_plan(t, o).sparse_prefix(
        n32.to_spm(c.tdma) > 3)),
    "a runtime prefix of positions": ("GATHER-9", lambda c, t, o, n32, nu32, flag: t.gather(m("T"), m("W"))
                                      .by_positions(m("G"), _in_spm(c, o)).sparse_prefix(n32.to_spm(c.tdma))),
    "a runtime prefix after an int one": ("GATHER-9", lambda c, t, o, n32, nu32, flag: _offsets_plan(t, o)
                                          .sparse_prefix(5).sparse_prefix(n32.to_spm(c.tdma))),
    "an int prefix after a runtime one": ("GATHER-9", lambda c, t, o, n32, nu32, flag: _offsets_plan(t, o)
                                          .sparse_prefix(n32.to_spm(c.tdma)).sparse_prefix(5)),
    "the parameter itself": ("RUNTIME-7", lambda c, t, o, n32, nu32, flag: _offsets_plan(t, o).sparse_prefix(n32)),
    "a length made in an ended block": ("RUNTIME-6", lambda c, t, o, n32, nu32, flag: _made_in_a_block(
        c, t, o, n32, flag)),
}


@pytest.mark.parametrize("case", sorted(REFUSED))
def test_runtime_prefix_refusals(case):
    code, make = REFUSED[case]
    diagnostics = k.refused(make).trace().diagnostics
    assert diagnostics and diagnostics[0].code == code, [d.code for d in diagnostics]
    where = "runtime_prefix_kernels.py" if code == "RUNTIME-6" else "test_runtime_prefix.py"   # the use: the to_dm
    assert diagnostics[0].file.endswith(where), diagnostics[0].file


# --- the record -------------------------------------------------------------------------------

def _gather_line(text):
    return next(x for x in text.splitlines() if "= dma_gather " in x)


def _ids(text, mnemonic):
    return [x.split(" = ")[0] for x in text.splitlines() if f" = {mnemonic} " in x]


@pytest.mark.parametrize("kernel", [k.runtime_prefix, k.cast_prefix, k.two_chip_prefix])
def test_the_artifact_verifies_and_prints_back(kernel):
    text = npu_opt.compile(kernel).text
    verify_text(text)
    assert print_artifact(parse_visa(text)) == text
    ir_text = print_kernel(kernel.trace().kernel)
    assert print_kernel(parse_kernel(ir_text)) == ir_text


def test_the_count_names_the_i32_record():
    text = npu_opt.compile(k.cast_prefix).text
    (cast,) = _ids(text, "scalar")[-1:]
    assert f"count={cast} :" in _gather_line(text) and "prefix=" not in _gather_line(text)
    assert re.search(rf"^{cast} = scalar op=CAST .*-> scalar\[i32\]", text, flags=re.M)


def test_a_gather_without_a_runtime_prefix_prints_no_count():
    for kernel in (staged.staged_offsets, staged.PREFIXED[77], k.full_gather):
        assert " count=" not in _gather_line(npu_opt.compile(kernel).text)


def _refused(text, rule):
    with pytest.raises(VisaTextError) as e:
        verify_text(text)
    assert e.value.rule == rule, str(e.value)
    return str(e.value)


def test_a_count_of_another_type_is_refused():
    text = npu_opt.compile(k.cast_prefix).text
    (load,), cast = _ids(text, "scalar_load"), _ids(text, "scalar")[-1]
    line = _gather_line(text)
    message = _refused(text.replace(line, line.replace(f"count={cast}", f"count={load}")), "GATHEROP-2")
    assert "scalar[u32], not scalar[i32]" in message


def test_a_count_that_is_no_record_is_refused():
    text = npu_opt.compile(k.runtime_prefix).text
    line = _gather_line(text)
    param = re.search(r'param (%\d+) "n"', text).group(1)
    assert "not the result of a record" in _refused(
        text.replace(line, re.sub(r"count=%\d+", f"count={param}", line)), "GATHEROP-2")


def test_a_count_beside_a_trace_time_prefix_is_refused():
    text = npu_opt.compile(k.runtime_prefix).text
    line = _gather_line(text)
    _refused(text.replace(line, line.replace(" count=", " prefix=5 count=")), "GATHEROP-2")


def test_a_count_defined_later_does_not_parse():
    text = npu_opt.compile(k.runtime_prefix).text
    line = _gather_line(text)
    later = _ids(text, "dma")[-1]
    with pytest.raises(VisaTextError, match=f"reads {later}, which is defined later"):
        parse_visa(text.replace(line, re.sub(r"count=%\d+", f"count={later}", line)))


# --- the schedule -----------------------------------------------------------------------------

def _gather_slot(kernel):
    schedule = schedule_artifact(parse_visa(npu_opt.compile(kernel).text))
    slots = [s for s in schedule.slots if s.step.records[0].mnemonic == "dma_gather"]
    loads = [s for s in schedule.slots if s.step.records[0].mnemonic == "scalar_load"]
    return slots[0], loads[0]


def test_the_schedule_counts_the_whole_list_and_waits_for_the_count():
    (short, load), (full, _) = _gather_slot(k.runtime_prefix), _gather_slot(k.full_gather)
    assert short.step.duration == full.step.duration > 0          # the worst case: every entry
    assert any(a.space == f"spm:{load.step.label}" and not a.write for a in short.step.accesses)
    assert short.start >= load.end


def test_an_ir_gather_with_a_count_of_another_type_breaks_its_rule():
    text = print_kernel(k.cast_prefix.trace().kernel)
    line = next(x for x in text.splitlines() if " = dma_gather " in x)
    count = re.search(r"dma_gather %\d+, %\d+, (%\d+) scaled", line).group(1)
    load = next(x for x in text.splitlines() if " = scalar_load " in x).split(" = ")[0].strip()
    for edited, code in ((line, None), (line.replace(f", {count} scaled", f", {load} scaled"), "GATHER-9"),
                         (line.replace(" scaled=True", " scaled=True prefix=3"), "GATHER-9")):
        kernel = parse_kernel(text.replace(line, edited))
        (gather,) = [op for op in kernel.ops if op.STAGE == "dma_gather"]
        found = gather.check()
        assert (found.code if found is not None else None) == code, found


def test_a_refused_length_is_reported_once():
    kernel = k.refused(lambda c, t, o, n32, nu32, flag: _offsets_plan(t, o).sparse_prefix(n32.to_spm(c.pdma)))
    assert [d.code for d in kernel.trace().diagnostics] == ["CTX-1"]
