"""W-FETCH-1 (docs/machine/fetch.md): a fetch whose DM reads hit one bank (address bits 3-6)
`BANK_RUN_LIMIT` or more times in a row warns; the kernel still compiles.

The longest run is computed by folding loop summaries (`longest_bank_run`); it is checked
here against a plain numpy enumeration of the access addresses."""

from __future__ import annotations

import io
import json
import random
import tomllib
from importlib import resources

import numpy as np
import pytest

from backends.npu import lower_kernel
from ir.codes import CODES
from npu_opt.compile_api import compile_kernel
from driver.compile_command import run_compile
from npu_opt.device import DeviceKernel
from tests.backends.examples import EXAMPLES, load
from tu_ops import load_target, rngd
from tu_ops.feed import FeedBuffer
from tu_ops.bank_runs import BANKS, access_loops, feed_bank_run, feed_bits, longest_bank_run, start_units, unit_bits

# {dm}: the DM element; {time}/{collect}: the fetch time and the collect time. The packet
# is the column A (64 x i8, 128-byte strides in a row-major DM tensor of 128-byte rows).
SOURCE = '''
from npu_opt import *

axes(A=64, B=128)

Chip = m("1")
Cluster = m("1 # 2")
Slice = m("1 # 256")

@device(chip=1)
def {name}(ctx: Context, x: HbmTensor[i8, Chip, m("A, B")]) -> HbmTensor[i8, Chip, m("B, A")]:
    x = x.to_dm(ctx.tdma, DmTensor[i8, Chip, Cluster, Slice, m("{dm}")])
    y = (ctx.main.begin(x.view())
         .fetch(m("{time}"), m("{packet}"))          # the fetch
         .collect(m("{collect}"), m("{packet} % 32"))
         .commit_trim(m("{packet} % 32"))
         .commit(m("{out}")))
    return y.to_hbm(ctx.tdma, HbmTensor[i8, Chip, m("B, A")])
'''


def kernel(tmp_path, name, dm="A, B", time="B", packet="A", collect="B, A / 32", out="B, A"):
    path = tmp_path / f"{name}.py"
    path.write_text(SOURCE.format(name=name, dm=dm, time=time, packet=packet, collect=collect, out=out))
    return getattr(load(path), name), path


def column_walk(tmp_path):
    """Each packet walks a column: 64 accesses 128 bytes apart, and the first 8 columns
    (bytes 0..7 of each row) are all in bank 0: a run of 512."""
    return kernel(tmp_path, "column_walk")


def fetch_line(path) -> int:
    return next(i for i, line in enumerate(path.read_text().splitlines(), 1) if "# the fetch" in line)


def limit_target(tmp_path, limit):
    data = tomllib.loads((resources.files("tu_ops") / "targets" / "rngd.toml").read_text(encoding="utf-8"))
    data["name"] = f"bank-run-{limit}"
    data["constants"]["BANK_RUN_LIMIT"] = limit
    path = tmp_path / f"bank-run-{limit}.json"
    path.write_text(json.dumps(data))
    return load_target(path)


def feeds(lowered):
    return [op for op in lowered.ops() if isinstance(op, FeedBuffer)]


# --- the warning ---------------------------------------------------------------------------


def test_the_code_is_a_lowering_warning():
    info = CODES["W-FETCH-1"]
    assert info.phase == "lower" and info.section == "docs/machine/fetch.md"


def test_a_column_walk_warns_at_the_fetch(tmp_path):
    k, path = column_walk(tmp_path)
    assert k.trace().diagnostics == ()             # a lowering warning: `check` is silent
    (w,) = lower_kernel(k).warnings
    assert w.code == "W-FETCH-1" and w.severity == "warning"
    assert "bank 0" in w.message and "512 times in a row" in w.message and "limit 64" in w.message
    assert "starve" in w.message
    assert w.stage == "fetch" and w.op.startswith("%4 = fetch")
    assert w.file.endswith("column_walk.py") and w.line == fetch_line(path)
    assert any("accesses 0..511 of 8192" in n for n in w.notes)
    assert any("[128 : 1, 64 : 128]" in n for n in w.notes)
    assert "contiguous" in w.help and "interleave banks" in w.help


def test_the_warning_does_not_block_compilation(tmp_path):
    k, _ = column_walk(tmp_path)
    outcome = compile_kernel(k)
    assert outcome.status == "ok" and outcome.diagnostics == ()
    assert outcome.text and outcome.text.strip()
    assert [w.code for w in outcome.warnings] == ["W-FETCH-1"]


def test_the_cli_writes_the_visa_and_prints_the_warning(tmp_path):
    _, path = column_walk(tmp_path)
    out = io.StringIO()
    status = run_compile([str(path)], str(tmp_path / "out"), out=out)
    assert status == 0
    assert (tmp_path / "out" / "column_walk.visa").is_file()
    assert not (tmp_path / "out" / "column_walk.fail").exists()
    text = out.getvalue()
    assert "warning[W-FETCH-1]" in text and "1 ok" in text


def test_a_contiguous_fetch_does_not_warn(tmp_path):
    """The same data read row by row (the innermost loop walks bytes), transposed by the DMA."""
    k, _ = kernel(tmp_path, "row_walk", time="A", packet="B", collect="A, B / 32", out="A, B")
    outcome = compile_kernel(k)
    assert outcome.status == "ok" and outcome.warnings == ()
    (feed,) = feeds(lower_kernel(k))
    assert feed_bank_run(feed, rngd()).length == 1


def test_padded_rows_interleave_the_banks(tmp_path):
    """136-byte rows: each access of the column moves one bank on."""
    k, _ = kernel(tmp_path, "padded_column_walk", dm="A, B # 136")
    assert compile_kernel(k).warnings == ()
    (feed,) = feeds(lower_kernel(k))
    assert feed_bank_run(feed, rngd()).length == 1


def test_a_run_of_exactly_the_limit_warns(tmp_path):
    """Columns taken 8 bytes apart: each column's 64 reads are one bank, the next column
    is the next bank, so the longest run is exactly 64."""
    k, _ = kernel(tmp_path, "column_run_64", time="B % 8, B / 8", collect="B % 8, B / 8, A / 32")
    (w,) = lower_kernel(k).warnings
    assert w.code == "W-FETCH-1" and "64 times in a row (limit 64)" in w.message


def test_the_limit_comes_from_the_target(tmp_path):
    k, _ = kernel(tmp_path, "column_run_64", time="B % 8, B / 8", collect="B % 8, B / 8, A / 32")
    assert lower_kernel(k, limit_target(tmp_path, 65)).warnings == ()
    (w,) = lower_kernel(k, limit_target(tmp_path, 32)).warnings
    assert "64 times in a row (limit 32)" in w.message


def test_a_short_column_does_not_warn(tmp_path):
    """32-row columns 8 bytes apart: runs of 32."""
    source = SOURCE.replace("axes(A=64, B=128)", "axes(A=32, B=128)")
    path = tmp_path / "short_columns.py"
    path.write_text(source.format(name="short_columns", dm="A, B", time="B % 8, B / 8", packet="A",
                                  collect="B % 8, B / 8, A / 32", out="B, A"))
    k = load(path).short_columns
    lowered = lower_kernel(k)
    assert lowered.warnings == ()
    assert feed_bank_run(feeds(lowered)[0], rngd()).length == 32


@pytest.mark.parametrize("path", sorted(EXAMPLES.glob("*.py")), ids=lambda p: p.stem)
def test_no_example_warns(path):
    """Every example's feeds stay below the limit (checked against the enumeration too)."""
    target = rngd()
    for k in [v for v in vars(load(path)).values() if isinstance(v, DeviceKernel)]:
        lowered = lower_kernel(k)
        assert [w.code for w in lowered.warnings if w.code == "W-FETCH-1"] == []
        for feed in feeds(lowered):
            run = feed_bank_run(feed, target)
            assert run.length < target.constants.BANK_RUN_LIMIT
            assert run.length == enumerated_run(banks_of(access_addresses(feed, target)))[0]


# --- the run computation -------------------------------------------------------------------


def access_addresses(feed, target) -> np.ndarray:
    """The DM byte address of every access of the feed's read shape, in loop order (int64)."""
    bits = feed_bits(feed, target)
    loops = access_loops(feed.shapes[0], bits)
    units = np.full((1,) * len(loops), start_units(feed, bits), dtype=np.int64)
    for k, (n, s) in enumerate(loops):
        shape_k = [1] * len(loops)
        shape_k[k] = n
        units = units + (np.arange(n, dtype=np.int64) * s).reshape(shape_k)
    return units.reshape(-1) // (8 // unit_bits(bits))


def banks_of(addresses: np.ndarray) -> np.ndarray:
    """The DM bank of each byte address (address bits 3-6)."""
    return (addresses >> 3) & (BANKS - 1)


def enumerated_run(banks: np.ndarray) -> tuple[int, int, int, int]:
    """(longest run, its bank, its first index, total) of a bank sequence, first longest."""
    edges = np.flatnonzero(np.diff(banks)) + 1
    starts = np.concatenate([[0], edges])
    lengths = np.diff(np.concatenate([starts, [len(banks)]]))
    k = int(np.argmax(lengths))
    return int(lengths[k]), int(banks[starts[k]]), int(starts[k]), len(banks)


def enumerate_loops(loops, start, per_byte):
    units = np.array([start], dtype=np.int64)
    for n, s in loops:
        units = (units[:, None] + np.arange(n, dtype=np.int64) * s).reshape(-1)
    return banks_of(units // per_byte)


def test_the_column_walk_addresses(tmp_path):
    k, _ = column_walk(tmp_path)
    (feed,) = feeds(lower_kernel(k))
    addresses = access_addresses(feed, rngd())
    base = feed.source_base
    assert len(addresses) == 128 * 64
    assert list(addresses[:3]) == [base, base + 128, base + 256] and addresses[64] == base + 1
    run = feed_bank_run(feed, rngd())
    assert (run.length, run.bank, run.start, run.total) == enumerated_run(banks_of(addresses))


@pytest.mark.parametrize("loops,start,per_byte,expected", [
    ([(64, 128)], 0, 1, 64),                  # one bank, 64 times
    ([(1000, 0)], 8, 1, 1000),                # a broadcast re-reads one address
    ([(4, 0), (16, 8)], 0, 1, 1),             # contiguous 8-byte reads: every bank in turn
    ([(100, 128), (4, 2)], 0, 1, 400),        # 2-byte reads inside one bank row, rows 128 bytes apart
    ([(100, 128), (4, 2)], 2, 1, 3),          # ... shifted by 2 bytes: the rows straddle two banks
    ([(65536, 128)] * 3, 0, 1, 65536 ** 3),   # huge plans need no enumeration
    ([(64, 256)], 1, 2, 64),                  # half-byte units (4-bit sources)
])
def test_longest_run_examples(loops, start, per_byte, expected):
    assert longest_bank_run(loops, start, per_byte).length == expected


def test_longest_run_matches_the_enumeration():
    rng = random.Random(7)
    sizes = [1, 2, 3, 4, 7, 8, 16, 17, 33, 64, 130]
    strides = [0, 1, 2, 3, 4, 6, 8, 16, 24, 64, 120, 128, 136, 256, 384, 1000]
    checked = 0
    while checked < 400:
        loops = [(rng.choice(sizes), rng.choice(strides)) for _ in range(rng.randint(0, 4))]
        if np.prod([n for n, _ in loops], dtype=np.int64) > 200_000:
            continue
        start, per_byte = rng.randint(0, 4096), rng.choice([1, 2])
        run = longest_bank_run(loops, start, per_byte)
        assert (run.length, run.bank, run.start, run.total) == \
            enumerated_run(enumerate_loops(loops, start, per_byte)), (loops, start, per_byte)
        checked += 1
