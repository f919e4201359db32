"""SpmTensor and the staged gather / scatter on every layer, against numpy oracles
(docs/machine/spm.md): cpu == visa bit for bit, artifacts verify and print back."""

from __future__ import annotations

import re

import ml_dtypes
import numpy as np
import pytest

import npu_opt
from ir.gather import GatherIndexError
from ir.kernel import print_kernel
from tests.kernel_text import parse_kernel
from tests.spm import kernels as k
from visa.parser import parse_visa
from visa.printer import print_artifact
from visa.verify import verify_text

RNG = np.random.default_rng(270)
ROW = 32 * 2     # bytes of one W row of bf16


def _both(kernel, *arrays):
    a, b = (npu_opt.run(kernel, *arrays, backend=x) for x in ("cpu", "visa"))
    assert a.dtype == b.dtype and a.tobytes() == b.tobytes()
    return a


def _bits(a):
    return np.asarray(a).view(np.uint16)


def _table():
    return RNG.standard_normal((200, 32)).astype(ml_dtypes.bfloat16)


def test_spm_round_trip_keeps_each_clusters_list():
    x = RNG.integers(-2 ** 31, 2 ** 31, (2, 16)).astype(np.int32)
    assert (_both(k.spm_round_trip, x) == x).all()


def test_a_read_view_stages_into_one_pe():
    x = RNG.integers(-2 ** 31, 2 ** 31, 16).astype(np.int32)
    assert (_both(k.spm_from_view, x) == x).all()


def test_each_cluster_gathers_by_its_own_positions():
    table = _table()
    rows = RNG.integers(0, 200, (2, 16)).astype(np.int32)
    rows[0, :3] = [0, 199, 199]
    assert (_bits(_both(k.rows_by_positions, table, rows)) == _bits(table[rows])).all()


def test_one_shared_list_gathers_by_positions():
    table = _table()
    rows = RNG.permutation(200)[:16].astype(np.int32)
    assert (_bits(_both(k.shared_list, table, rows)) == _bits(table[rows])).all()


@pytest.mark.parametrize("n", sorted(k.PREFIXED))
def test_sparse_prefix_gathers_the_first_entries_only(n):
    table = _table()
    rows = RNG.integers(0, 200, 256)
    want = table[rows].copy()
    want[max(n, 0):] = 0
    out = _both(k.PREFIXED[n], table, (rows * ROW).astype(np.int32))
    assert (_bits(out) == _bits(want)).all()


@pytest.mark.parametrize("backend", ["cpu", "visa"])
def test_entries_past_the_prefix_are_still_checked(backend):
    rows = np.zeros(256, np.int32)
    rows[200] = 200 * ROW                     # past the prefix of 77, and past the table
    with pytest.raises(GatherIndexError, match=r"\[G=200\]"):
        npu_opt.run(k.PREFIXED[77], _table(), rows, backend=backend)


def test_a_broadcast_index_is_one_list_for_every_chip():
    table = RNG.standard_normal((2, 200, 32)).astype(ml_dtypes.bfloat16)
    rows = RNG.integers(0, 200, 256)
    out = _both(k.broadcast_index, table, np.stack([(rows * ROW).astype(np.int32)] * 2))   # Chip m("2"): the copies
    assert (_bits(out[0]) == _bits(table[0][rows])).all() and (_bits(out[1]) == _bits(table[1][rows])).all()
    verify_text(npu_opt.compile(k.broadcast_index).text)


def test_an_index_on_other_chips_is_refused():
    assert [d.code for d in k.index_on_its_own_chips.trace().diagnostics] == ["GATHER-2"]


def test_staged_byte_offsets_lower_onto_the_v06_record():
    staged, old = (npu_opt.compile(f).text for f in (k.staged_offsets, k.v06_offsets))
    line = lambda text: re.sub(r" ; loc .*", "", next(x for x in text.splitlines() if "= dma_gather " in x))
    assert line(staged) == line(old) and "prefix=" not in line(staged)
    table, rows = _table(), RNG.integers(0, 200, 256)
    offsets = (rows * ROW).astype(np.int32)
    assert _both(k.staged_offsets, table, offsets).tobytes() == _both(k.v06_offsets, table, offsets).tobytes()


@pytest.mark.parametrize("kernel", [k.staged_scatter, k.staged_scatter_view])
@pytest.mark.parametrize("backend", ["cpu", "visa"])
def test_staged_scatter_writes_the_indexed_rows(kernel, backend):
    fresh = RNG.standard_normal((24, 32)).astype(ml_dtypes.bfloat16)
    rows = RNG.permutation(90)[:24]
    cache = RNG.standard_normal((90, 32)).astype(ml_dtypes.bfloat16)
    want = cache.copy()
    want[rows] = fresh
    buf = cache.copy()
    npu_opt.run(kernel, fresh, (rows * ROW).astype(np.int32), buf, backend=backend)
    assert (_bits(buf) == _bits(want)).all()


@pytest.mark.parametrize("backend", ["cpu", "visa"])
def test_scatter_by_positions_writes_each_clusters_rows(backend):
    fresh = RNG.standard_normal((2, 16, 32)).astype(ml_dtypes.bfloat16)
    rows = RNG.permutation(90)[:32].reshape(2, 16).astype(np.int32)
    rows[1, 15] = rows[1, 2]                  # a repeated position: the later entry wins
    cache = RNG.standard_normal((90, 32)).astype(ml_dtypes.bfloat16)
    want = cache.copy()
    for cl in range(2):
        for n in range(16):
            want[rows[cl, n]] = fresh[cl, n]
    buf = cache.copy()
    npu_opt.run(k.scatter_by_positions, fresh, rows, buf, backend=backend)
    assert (_bits(buf) == _bits(want)).all()


@pytest.mark.parametrize("backend", ["cpu", "visa"])
def test_a_scatter_position_past_the_cache_is_reported(backend):
    rows = np.zeros((2, 16), np.int32)
    rows[1, 4] = 90
    with pytest.raises(GatherIndexError, match=r"\[CL=1, N=4\].*row number 90"):
        npu_opt.run(k.scatter_by_positions, np.zeros((2, 16, 32), ml_dtypes.bfloat16), rows,
                    np.zeros((90, 32), ml_dtypes.bfloat16), backend=backend)


def test_staged_scatter_lowers_onto_the_v06_record():
    texts = [npu_opt.compile(f).text for f in (k.staged_scatter, k.v06_scatter)]
    lines = [re.sub(r" ; loc .*", "", next(x for x in t.splitlines() if "= dma_scatter " in x)) for t in texts]
    assert lines[0] == lines[1]


@pytest.mark.parametrize("kernel", [k.spm_round_trip, k.rows_by_positions, k.PREFIXED[77], k.scatter_by_positions])
def test_artifacts_verify_and_print_back(kernel):
    text = npu_opt.compile(kernel).text
    verify_text(text)
    assert print_artifact(parse_visa(text)) == text


def test_a_forged_spm_record_is_refused():
    text = npu_opt.compile(k.spm_round_trip).text
    assert '"1 # 4"' in text
    with pytest.raises(Exception, match="SPMOP-1|SPM-2"):
        verify_text(text.replace('"CL", "1 # 4", "N"]', '"CL", "1 # 2", "N"]', 1))
    positions = npu_opt.compile(k.scatter_by_positions).text
    assert "mode=UNSCALED" in positions
    with pytest.raises(Exception, match="SCATTEROP-1"):
        verify_text(positions.replace(" mode=UNSCALED", ""))
    prefixed = npu_opt.compile(k.PREFIXED[77]).text
    with pytest.raises(Exception, match="GATHEROP-1"):
        verify_text(prefixed.replace("prefix=77", "prefix=999"))


@pytest.mark.parametrize("kernel", [k.rows_by_positions, k.PREFIXED[77], k.staged_scatter, k.scatter_by_positions])
def test_the_ir_text_reads_back(kernel):
    text = print_kernel(kernel.trace().kernel)
    assert print_kernel(parse_kernel(text)) == text
