"""A gather whose index is a DM copy of an HBM tile: the index carries only some digits of
its axes (`Q % 32`), and the gathered rows carry the same digits (GATHER-3/4 on digits)."""

from __future__ import annotations

import numpy as np

import npu_opt
from ir.gather import index_terms
from ir.types import DmType
from npu_opt import *

axes(T=300, E=64, R=16, Q=64)

Chip = m("1")
Cluster = m("1 # 2")


@device(chip=1)
def tiled_index(ctx: Context, table: HbmTensor[i16, Chip, m("T, E")],
                index: HbmTensor[i32, Chip, m("R, Q")]) -> HbmTensor[i16, Chip, m("R, Q, E")]:
    """Two 32-column tiles of the index, each staged into DM and gathered separately."""
    out = HbmTensor[i16, Chip, m("R, Q, E")].new()
    for t in range(2):
        part = index.view().tile(m("Q / 32"), 1, m("R, 1 # 2, Q % 32"), t)
        idx = part.to_dm(ctx.tdma, DmTensor[i32, Chip, Cluster, m("Q % 32 / 2, R"), m("Q % 2")])
        rows = table.dma_gather_unscaled(idx, DmTensor[i16, Chip, Cluster, m("Q % 32 / 2, R"), m("Q % 2, E")])
        rows.view().to_hbm_view(ctx.tdma, out.view_mut().tile(m("Q / 32"), 1, m("R, 1 #{!} 2, Q % 32, E"), t))
    return out


@device(chip=1)
def dropped_digits(ctx: Context, table: HbmTensor[i16, Chip, m("T, E")],
                   index: HbmTensor[i32, Chip, m("R, Q")]) -> HbmTensor[i16, Chip, m("R, Q, E")]:
    """The output keeps fewer index digits (`Q % 16`) than the index holds: refused."""
    part = index.view().tile(m("Q / 32"), 1, m("R, 1 # 2, Q % 32"), 0)
    idx = part.to_dm(ctx.tdma, DmTensor[i32, Chip, Cluster, m("Q % 32 / 2, R"), m("Q % 2")])
    rows = table.dma_gather_unscaled(idx, DmTensor[i16, Chip, Cluster, m("Q % 16 / 2, R"), m("Q % 2, E")])
    out = HbmTensor[i16, Chip, m("R, Q, E")].new()
    rows.view().to_hbm_view(ctx.tdma, out.view_mut().tile(m("Q / 32"), 1, m("R, 1 #{!} 2, Q % 32, E"), 0))
    return out


def index_axes(t: DmType) -> tuple[tuple[str, int], ...]:
    return tuple((term.text(), term.size) for term in index_terms(t))


def test_index_digits_of_a_tile_are_its_labels():
    t = DmType(npu_opt.i32, m("1"), m("1 # 2"), m("Q % 32 / 2, R"), m("Q % 2"))
    assert index_axes(t) == (("Q % 32", 32), ("R", 16))
    whole = DmType(npu_opt.i32, m("1"), m("1 # 2"), m("Q / 2, R"), m("Q % 2"))
    assert index_axes(whole) == (("Q", 64), ("R", 16))


def test_gather_through_tiles_of_the_index_matches_numpy():
    rng = np.random.default_rng(11)
    table = rng.integers(-2 ** 15, 2 ** 15, (300, 64)).astype(np.int16)
    rows = rng.integers(0, 300, (16, 64)).astype(np.int32)
    rows[0, :3] = [0, 299, 299]
    want = table[rows]                                   # (R, Q, E)
    cpu, visa = (npu_opt.run(tiled_index, table, rows, backend=b) for b in ("cpu", "visa"))
    assert cpu.tobytes() == visa.tobytes()
    assert cpu.shape == want.shape and (cpu == want).all()


def test_an_output_without_all_the_index_digits_is_refused():
    report = npu_opt.check(dropped_digits)
    assert not report.ok
    assert "GATHER-4" in {d.code for d in report.diagnostics}


def test_an_index_whose_digits_leave_gaps_is_refused():
    from ir.gather import gather_shape
    from ir.types import HbmType

    table = HbmType(npu_opt.i16, m("1"), m("T, E"))
    gappy = DmType(npu_opt.i32, m("1"), m("1 # 2"), m("Q / 32, R"), m("Q % 2"))     # no Q / 2 % 16
    out = DmType(npu_opt.i16, m("1"), m("1 # 2"), m("Q / 32, R"), m("Q % 2, E"))
    bad = gather_shape(table, gappy, out)
    assert bad.code == "GATHER-3" and "leave gaps" in bad.message
