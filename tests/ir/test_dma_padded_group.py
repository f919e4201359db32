"""A padded group of digits (`[P, Q, R] # 32`, `[U, V] # 8`) whose live run is not a whole
number of 8-byte DM write units moves into DM with its padding when the source pads it the
same way (ir/rules/dma_tail.py `tail_piece`: the group factors as a ragged piece with whole
digits inside it, and the tail widens the ragged piece), exactly as a single padded axis
(`PC # 8`) does; from a dense source it is DMA-5 at the `to_dm` call."""

import ml_dtypes
import numpy as np
import pytest

import npu_opt
from tests.differential.harness import load_kernel
from tu_ops import rngd
from visa.verify import verify_text

GROUP = '''\
from npu_opt import *

axes(S=256, P=7, Q=2, R=2, U=3, V=2)

Chip = m("1")
Cluster = m("1 # 2")


@device(chip=1)
def {name}(ctx: Context, x: HbmTensor[{dt}, Chip, m("{src}")]) -> HbmTensor[{dt}, Chip, m("{out}")]:
    d = x.to_dm(ctx.tdma, DmTensor[{dt}, Chip, Cluster, m("S"), m("{group}")])
    {body}
'''

ROUND_TRIP = 'return d.to_hbm(ctx.tdma, HbmTensor[{dt}, Chip, m("{out}")])'
THROUGH_TU = ('y = (ctx.main.begin(d.view()).fetch(m("1"), m("{group}")).collect(m("1"), m("{flit}"))\n'
              '         .commit_trim(m("{group}")).commit(m("{group}")))\n'
              '    return y.to_hbm(ctx.tdma, HbmTensor[{dt}, Chip, m("{out}")])')

CASES = {
    # name: dtype, host dtype, group, live cells, the flit the TU path collects into
    "i8_group_of_28": ("i8", np.int8, "[P, Q, R] # 32", 28, "[P, Q, R] # 32"),
    "bf16_group_of_6": ("bf16", ml_dtypes.bfloat16, "[U, V] # 8", 6, "[U, V] # 16"),
}


def _kernel(name: str, body: str, src_padded: bool = True):
    dt, _, group, _, flit = CASES[name]
    out = f"S, {group}"
    src = out if src_padded else f"S, {group.split(']')[0].lstrip('[')}"
    text = GROUP.format(name=name, dt=dt, src=src, out=out, group=group,
                        body=body.format(dt=dt, out=out, group=group, flit=flit))
    return load_kernel(text)


@pytest.mark.parametrize("name", sorted(CASES))
@pytest.mark.parametrize("body", [ROUND_TRIP, THROUGH_TU], ids=["dma", "tensor_unit"])
def test_a_padded_group_moves_into_dm_with_its_padding(name, body):
    _, host, group, live, _ = CASES[name]
    kernel = _kernel(name, body)
    text = npu_opt.compile(kernel).text
    verify_text(text, rngd())
    (load,) = [line for line in text.splitlines() if "kind=HBM_TO_DM" in line]
    padded_bytes = 16 if host is ml_dtypes.bfloat16 else 32
    assert f"packet_bytes={padded_bytes}," in load            # the whole group, padding included
    x = np.random.default_rng(len(name)).integers(-100, 100, (256, live)).astype(host)   # S, then the group
    cpu = npu_opt.run(kernel, x.copy())
    assert np.array_equal(cpu.view(np.uint8), x.view(np.uint8))
    assert np.array_equal(npu_opt.run(kernel, x.copy(), backend="visa").view(np.uint8), x.view(np.uint8))


@pytest.mark.parametrize("name", sorted(CASES))
def test_a_padded_group_from_a_dense_source_is_refused(name):
    kernel = _kernel(name, ROUND_TRIP, src_padded=False)
    first = npu_opt.check(kernel).diagnostics[0]
    assert first.code == "DMA-5", first.render()
    assert first.line == 11 and f"{CASES[name][3]} live cell(s)" in first.message, first.render()
