"""A packet padded with plain `#` around its contiguous run (`C # 8`) is read as furiosa-opt
reads it when the run alone has no legal fetch size (FETCH-11): the padding is read as the
memory after the run, one 8-byte fetch per packet (the reference book's "Packet padding"
example: `m![C # 8]` of 2 live bytes is 15 packets of 8 bytes). A packet the exact run already
reads legally keeps its read (its artifact is unchanged), and zero padding (`#{0}`) is never
read from memory."""

from __future__ import annotations

import runpy

import ml_dtypes
import numpy as np
import pytest

import npu_opt
from ir.mapping import axes, m
from ir.mapping.ops import Entry
from ir.rules.read_plan import match_read, sized_read

axes(A=4, B=5, C=2)


@pytest.mark.parametrize("packet, time, over", [
    ("C # 8", "A, B", (Entry(8, 1),)),
    ("[B, C] # 20", "A", (Entry(20, 1),)),
    ("C #{0} 8", "A, B", None),   # zero padding: its zeros are not memory's
    ("C # 3", "A, B", None),      # ragged padding, read past the run already
    ("B # 8", "A, C", None),      # the run inside the padding is strided
])
def test_the_over_read_of_a_padded_packet(packet, time, over):
    assert match_read(m("1"), m("A, B, C"), m(time), m(packet)).over_read == over


def test_the_over_read_is_taken_only_when_the_exact_run_has_no_legal_size():
    plan = match_read(m("1"), m("A, B, C"), m("A, B"), m("C # 8"))
    wide, n = sized_read(plan, "main", 8, 8)  # i8 as i8: 2 bytes are no legal fetch, 8 are
    assert (wide.packet_entries, n) == ((Entry(8, 1),), 8) and wide.packet_elems == plan.packet_elems == 8
    assert sized_read(plan, "main", 8, 32) == (plan, 2)  # i8 -> i32: 2 bytes widen to a whole word
    zero = match_read(m("1"), m("A, B, C"), m("A, B"), m("C #{0} 8"))
    assert sized_read(zero, "main", 8, 8) is None


_KERNELS = '''
from npu_opt import *
axes(A=4, B=5, C=2)
Chip, Cluster, Slice = m("1"), m("1 # 2"), m("1 # 256")

def padded(dtype, pad):
    @device(chip=1)
    def kernel(ctx: Context, x: HbmTensor[dtype, Chip, m("A, B, C")]) -> HbmTensor[dtype, Chip, m(f"A, B, C {pad} 8")]:
        d = x.to_dm(ctx.tdma, DmTensor[dtype, Chip, Cluster, Slice, m("A, B, C")])
        y = (ctx.main.begin(d.view()).fetch(m("A, B"), m(f"C {pad} 8"))
             .collect(m("A, B"), m(f"C {pad} 8 # 32")).commit_trim(m(f"C {pad} 8")).commit(m(f"A, B, C {pad} 8")))
        return y.to_hbm(ctx.tdma)
    return kernel

over_i8 = padded(i8, "#")
over_f8 = padded(f8e4m3, "#")
zero_i8 = padded(i8, "#{0}")
'''


@pytest.fixture(scope="module")
def kernels(tmp_path_factory):
    path = tmp_path_factory.mktemp("over_read") / "kernels.py"
    path.write_text(_KERNELS, encoding="utf-8")
    return runpy.run_path(str(path))


@pytest.mark.parametrize("name, dtype", [("over_i8", np.int8), ("over_f8", ml_dtypes.float8_e4m3fn)])
def test_a_padded_packet_reads_eight_bytes_and_computes_the_copy(kernels, name, dtype):
    x = (np.arange(40) % 23 - 11).astype(np.float32).astype(dtype).reshape(4, 5, 2)
    art = npu_opt.compile(kernels[name])
    feed = next(line for line in art.text.splitlines() if "feed_buffer" in line)
    assert "packet=[8:1], packet_elems=8, read_elems=8" in feed and "time=[20:2]" in feed
    cpu = np.asarray(npu_opt.run(kernels[name], x, backend="cpu"))
    visa = np.asarray(npu_opt.run(kernels[name], x, backend="visa"))
    assert cpu.view(np.uint8).tobytes() == visa.view(np.uint8).tobytes() == x.view(np.uint8).tobytes()


def test_zero_padding_is_not_read_from_memory(kernels):
    report = npu_opt.check(kernels["zero_i8"])
    assert [d.code for d in report.diagnostics] == ["FETCH-11"]
