"""The autotuner (driver/tune.py): ranking, pruning, checks, executors, report files.

Expected makespans come from compiling each candidate through `npu_opt.compile` (the
manifest's makespan), not from the tuner."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import multiprocessing
import threading
import time
import uuid

import attrs
import pytest

import npu_opt
from driver import tune as tune_mod
from driver import tune_batches, tune_eval
from driver.cli import main
from driver.tune import tune
from driver.tune_cluster import local_cluster
from driver.tune_eval import Batch, Candidate, evaluate_timed
from driver.tune_share import ClusterBest, heard_best, on_cluster
from driver.tune_exec import FactoryRef, load_space, make_executor
from driver.tune_report import write_report
from tests.tune.probe_fresh import probe_in_a_fresh_process
from ir.errors import NpuOptError
from ir.kernel import Kernel
from visa import parse_visa

FILE = str(Path(__file__).with_name("small_space.py"))


def _space(name: str = "SPACE"):
    return load_space(FactoryRef(FILE, name))


DRAWN = """import attrs
from benchmarks.drawn_kernels import draw_space
from synth.space import space_of
_whole = space_of(draw_space(0), run=False)
SPACE = attrs.evolve(_whole, params={n: (v[::12] if n == "placement" else v) for n, v in _whole.params})
"""


def _drawn(tmp_path: Path) -> FactoryRef:
    """A small drawn space (seed 0 with every twelfth placement: 15 candidates), as a tune file."""
    path = tmp_path / "drawn_small.py"
    path.write_text(DRAWN)
    return FactoryRef(str(path), "SPACE")


def _makespans(space) -> dict[int, int]:
    """Each candidate compiled on its own: index -> makespan (candidates that compile)."""
    out = {}
    for k, point in enumerate(space.points()):
        try:
            out[k] = npu_opt.compile(space.factory(**point)).manifest_entry["makespan"]
        except npu_opt.CompileError:
            continue
    return out


def test_winner_is_the_fastest_candidate_that_compiles() -> None:
    space = _space()
    expected = _makespans(space)
    assert set(expected) == {1, 2, 4, 5}  # packet=16 (half a flit) is refused
    result = tune(space, prune=False)
    best = min(expected.values())
    assert result.winner is not None and result.winner.makespan == best
    assert result.winner.index == min(k for k, v in expected.items() if v == best)  # ties: earliest candidate
    for c in result.candidates:
        if c.index in expected:
            assert c.status == "ok" and c.makespan == expected[c.index] and c.bound <= c.makespan
        else:
            assert c.status == "refused" and c.code == "OUTER-3"
    assert result.winner.checked == "pass"


def test_pruning_skips_only_candidates_that_cannot_win() -> None:
    space = _space()
    full = tune(space, prune=False)
    pruned = tune(space, prune=True)
    assert pruned.winner.index == full.winner.index and pruned.winner.makespan == full.winner.makespan
    skipped = [c for c in pruned.candidates if c.status == "pruned"]
    assert skipped, "the one-load candidates come first and are cheaper: the two-load ones must be pruned"
    for c in skipped:
        assert c.bound > pruned.winner.makespan
        assert full.candidates[c.index].makespan > pruned.winner.makespan


def test_a_wrong_oracle_fails_every_check_and_nothing_wins() -> None:
    result = tune(_space("WRONG"))
    assert result.winner is None
    assert all(c.checked and c.checked.startswith("fail: result 0 differs") for c in result.candidates)


def test_a_factory_that_raises_is_a_refused_candidate() -> None:
    result = tune(_space("BROKEN"))
    first, second = result.candidates
    assert first.status == "error" and first.code == "USAGE" and "two loads" in first.message
    assert second.status == "ok" and result.winner.index == 1


def test_process_pool_gives_the_same_result() -> None:
    inline = tune(_space(), prune=False)
    pooled = tune(_space(), ref=FactoryRef(FILE, "SPACE"), jobs=2, prune=False)
    assert pooled.executor == "2 processes"
    assert [(c.status, c.makespan) for c in pooled.candidates] == [(c.status, c.makespan) for c in inline.candidates]
    assert pooled.winner.index == inline.winner.index


def _within(seconds: float, fn):
    """fn() in a daemon thread: its result, or a failure (not a hang) after `seconds`."""
    box: dict = {}

    def run() -> None:
        try:
            box["value"] = fn()
        except BaseException as e:  # noqa: BLE001 - handed to the test thread
            box["error"] = e

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(seconds)
    assert not thread.is_alive(), f"no answer within {seconds} s"
    if "error" in box:
        raise box["error"]
    return box["value"]


def test_dask_scheduler_and_worker_processes_run_the_space_unchanged(tmp_path: Path,
                                                                     capsys: pytest.CaptureFixture) -> None:
    """A cluster started as dask's docs say (`dask scheduler`, `dask worker` processes on free
    ports): the Python API and `npu-opt tune --scheduler` give the inline result."""
    pytest.importorskip("dask.distributed")
    inline = tune(_space(), prune=False)
    with local_cluster(workers=2, threads=1, timeout=60) as address:
        remote = _within(120, lambda: tune(_space(), ref=FactoryRef(FILE, "SPACE"), scheduler=address, prune=False))
        pruned = _within(120, lambda: tune(_space(), ref=FactoryRef(FILE, "SPACE"), scheduler=address))
        assert probe_in_a_fresh_process(address) == "answered True"  # the probe forked, as on the command line
        status = _within(120, lambda: main(["tune", FILE, "--space", "SPACE", "--scheduler", address,
                                            "-o", str(tmp_path), "--format", "json"]))
        _a_worker_prunes_against_the_other_workers_best(address)
        _the_cluster_runs_its_timers_slowly(address)
        drawn = _drawn(tmp_path)
        drawn_serial = tune(load_space(drawn))
        drawn_dask = _within(120, lambda: tune(load_space(drawn), ref=drawn, scheduler=address))
    assert drawn_dask.winner.index == drawn_serial.winner.index and drawn_serial.count("pruned")
    assert remote.executor == f"dask at {address} (2 threads)"
    assert [(c.status, c.makespan) for c in remote.candidates] == [(c.status, c.makespan) for c in inline.candidates]
    assert remote.winner.index == inline.winner.index
    _agrees(pruned, inline)
    report = json.loads(capsys.readouterr().out)
    assert status == 0 and report["winner"] == inline.winner.index and report["executor"].startswith("dask at ")


def _the_cluster_runs_its_timers_slowly(address: str) -> None:
    """local_cluster starts the scheduler and the workers as docs/tuning.md says: the tick
    (20 ms by default), the system monitor and the worker's memory monitor slowed, the
    workers' profiler off (each costs CPU every wall second)."""
    client_class = pytest.importorskip("dask.distributed").Client
    get = pytest.importorskip("dask").config.get  # run where the client sends it: that process's config
    keys = ("distributed.admin.tick.interval", "distributed.admin.system-monitor.interval")
    worker_keys = keys + ("distributed.worker.memory.monitor-interval", "distributed.worker.profile.enabled")
    with client_class(address, timeout=30) as client:
        assert client.run_on_scheduler(lambda: [get(k) for k in keys]) == ["1s", "2s"]
        workers = client.run(lambda: [get(k) for k in worker_keys])
    assert list(workers.values()) == [["1s", "2s", "1s", False]] * 2


def _a_worker_prunes_against_the_other_workers_best(address: str) -> None:
    """One dask worker compiles candidate 1 (makespan 41177); the other, sent candidate 4
    (bound 42025) with no cutoff, prunes it against what the first published."""
    client_class = pytest.importorskip("dask.distributed").Client
    sweep = f"test-{uuid.uuid4().hex}"
    ref, points = FactoryRef(FILE, "SPACE"), _space().points()
    one = lambda k: Batch(ref, "rngd", None, True, ((k, points[k]),), sweep)  # noqa: E731
    with client_class(address, timeout=30) as client:
        a, b = sorted(client.nthreads())
        warm = Batch(ref, "rngd", None, True, ((0, points[0]),), sweep + "-warm")  # b subscribes at its first task
        client.submit(on_cluster, evaluate_timed, warm, workers=[b], pure=False).result(60)
        first = client.submit(on_cluster, evaluate_timed, one(1), workers=[a], pure=False).result(60)[1]
        assert [(c.status, c.makespan) for c in first] == [("ok", 41177)]
        deadline = time.monotonic() + 20
        while client.run(heard_best, sweep, workers=[b])[b] is None:
            assert time.monotonic() < deadline, "the second worker never heard of the first one's makespan"
            time.sleep(0.05)
        assert client.run(heard_best, sweep, workers=[b])[b] == 41177
        second = client.submit(on_cluster, evaluate_timed, one(4), workers=[b], pure=False).result(60)[1]
        assert [(c.status, c.bound) for c in second] == [("pruned", 42025)]
        other = client.submit(on_cluster, evaluate_timed, attrs.evolve(one(4), sweep=sweep + "-other"),
                              workers=[b], pure=False).result(60)[1]
        assert [(c.status, c.makespan) for c in other] == [("ok", 42701)]  # another sweep's best is not this one's


def test_a_cluster_best_publishes_improvements_and_prunes_its_sweep_only(monkeypatch: pytest.MonkeyPatch) -> None:
    """`ClusterBest` (a dask worker's view of the sweep's best): only a makespan below the best
    known is published; a batch prunes against one heard from another worker of its sweep,
    never of another sweep."""
    evaluated: list[tuple[int, int | None]] = []
    points = _fake_space(monkeypatch, 10, evaluated)
    sent: list[list] = []
    board = ClusterBest(sent.append)
    batch = lambda idx, sweep: Batch(None, "rngd", None, True, tuple((i, points[i]) for i in idx), sweep)  # noqa: E731
    board.heard((0.0, ["other", 900]))
    board.heard((0.0, ["mine", 995]))
    board.sweep = "mine"
    tune_eval.share_best(board)
    try:
        out = tune_eval.evaluate_batch(batch([2, 6], "mine"))
    finally:
        tune_eval.share_best(None)
    assert evaluated == [(2, 995), (6, 995)] and [c.status for c in out] == ["pruned", "ok"]
    assert sent == [["mine", 994]] and board.best() == 994 and board.best_of("other") == 900
    board.offer(996)
    board.heard((0.0, ["mine", 999]))
    assert sent == [["mine", 994]] and board.best() == 994


def test_candidates_that_trace_alike_share_one_lowering(monkeypatch: pytest.MonkeyPatch) -> None:
    lowered = []
    real = tune_eval._lower
    monkeypatch.setattr(tune_eval, "_lower", lambda *a: lowered.append(a[0].name) or real(*a))
    result = tune(_space("ALIKE"), prune=False)
    assert len(lowered) == 2  # label 'a' and 'b' of one packet are the same kernel
    by_packet = {}
    for c in result.candidates:
        by_packet.setdefault(c.params["packet"], set()).add((c.status, c.makespan, c.bound))
    assert all(len(v) == 1 for v in by_packet.values())
    assert tune(_space("ALIKE"), prune=False).candidates == result.candidates
    assert len(lowered) == 4  # a new tune run lowers again: the reuse lasts one run


def test_a_candidate_hashes_its_traced_kernel_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """The lowering key is looked up and stored: one hash of the traced kernel (it walks every
    op), not one per dict access."""
    calls = []
    real = Kernel.__hash__
    monkeypatch.setattr(Kernel, "__hash__", lambda self: calls.append(1) or real(self))
    space = _space()
    out = tune_eval.evaluate_batch(Batch(space, "rngd", None, False, ((1, space.points()[1]),), "hash-once"))
    assert [c.status for c in out] == ["ok"] and len(calls) == 1


class _Counting:
    """An executor of two workers that runs each task when it is sent, counting them."""

    width, workers, helps, description = 2, 2, False, "counting"

    def __init__(self) -> None:
        self.tasks: list[int] = []

    def best(self) -> int | None:
        return None

    def starting(self) -> bool:
        return False

    def submit(self, fn, batch):
        self.tasks.append(len(batch.items))
        seconds, candidates = fn(batch)
        return (len(self.tasks), seconds, tuple(candidates))

    def wait(self, handles, block):
        return list(handles)

    def result(self, handle):
        return handle[1], list(handle[2])


def _swept(count: int, monkeypatch: pytest.MonkeyPatch) -> tuple[_Counting, list[int]]:
    """`_sweep` over `count` points on the counting executor (every candidate `ok`): the
    executor (its batch sizes) and the indices that came back."""
    points = [{"k": k} for k in range(count)]
    monkeypatch.setattr(tune_eval, "evaluate_batch",
                        lambda b, *_: [Candidate(i, p, "ok", makespan=1, bound=1) for i, p in b.items])
    executor, seen = _Counting(), []
    tune_mod._sweep(executor, points, lambda idx: Batch(None, "rngd", None, True, tuple((i, points[i]) for i in idx)),
                    lambda cs: seen.extend(c.index for c in cs))
    return executor, seen


def test_candidates_travel_in_batches_and_each_comes_back_once(monkeypatch: pytest.MonkeyPatch) -> None:
    executor, seen = _swept(100, monkeypatch)
    assert sorted(seen) == list(range(100))
    assert len(executor.tasks) < 20 and max(executor.tasks) > 1


def test_batches_shrink_as_the_space_drains(monkeypatch: pytest.MonkeyPatch) -> None:
    """A batch takes a share of what is left: full batches while the queue is long, then
    smaller ones, the last ones of the smallest size, so no process is left waiting long on
    a big batch another one still holds."""
    executor, _ = _swept(216, monkeypatch)
    sizes = executor.tasks
    assert sum(sizes) == 216 and sizes == sorted(sizes, reverse=True)
    assert sizes[0] == tune_batches.MAX_BATCH and sizes[-4:] == [tune_batches.MIN_BATCH] * 4
    assert tune_batches.MIN_BATCH < tune_batches.MAX_BATCH


def test_report_files(tmp_path: Path) -> None:
    result = tune(_space())
    files = write_report(result, tmp_path)
    assert {p.name for p in files} == {"tune.txt", "tune.json", "tune.svg", "small_gemm.visa"}
    data = json.loads((tmp_path / "tune.json").read_text())
    assert data["winner"] == result.winner.index and len(data["candidates"]) == 6
    svg = ET.fromstring((tmp_path / "tune.svg").read_text())
    rects = svg.findall("{http://www.w3.org/2000/svg}rect")
    assert sum(r.get("fill") != "none" for r in rects) == result.count("ok")  # a bar per compiled candidate
    assert sum(r.get("fill") == "none" for r in rects) == result.count("pruned")  # a dashed bound per pruned one
    artifact = parse_visa((tmp_path / "small_gemm.visa").read_text())
    assert artifact.kernel.name == "small_gemm"
    assert "winner: #" in (tmp_path / "tune.txt").read_text()
    assert not list(tmp_path.glob(".*.tmp"))


def test_missing_space_and_bad_jobs_are_usage(tmp_path: Path) -> None:
    with pytest.raises(NpuOptError, match="no `npu_opt.tune.Space` named 'NOPE'") as info:
        load_space(FactoryRef(FILE, "NOPE"))
    assert info.value.code == "USAGE"
    with pytest.raises(NpuOptError) as info:
        make_executor(0, None, in_process=False)
    assert info.value.code == "USAGE"


def test_space_rejects_an_empty_parameter() -> None:
    with pytest.raises(ValueError, match="'packet' has no values"):
        attrs.evolve(_space(), params={"packet": []})


def test_batches_are_sized_by_the_measured_cost(monkeypatch: pytest.MonkeyPatch) -> None:
    """Once batches come back, a batch holds about BATCH_SECONDS of work at the measured cost
    per candidate: dear candidates travel one at a time, cheap ones MAX_BATCH
    (tests/tune/test_tune_batches.py: prices that vary)."""
    for seconds, want in ((1.0, 1), (0.001, tune_batches.MAX_BATCH)):
        points = [{"k": k} for k in range(200)]
        monkeypatch.setattr(tune_mod, "evaluate_timed", lambda b, s=seconds: (
            (s,) * len(b.items), [Candidate(i, p, "ok", makespan=1, bound=1) for i, p in b.items]))
        executor = _Counting()
        tune_mod._sweep(executor, points, lambda idx: Batch(None, "rngd", None, True,
                                                             tuple((i, points[i]) for i in idx)), lambda cs: None)
        assert executor.tasks[0] == tune_batches.MAX_BATCH  # nothing measured yet
        assert executor.tasks[5] == want, seconds


def test_the_sweep_sends_candidates_spread_over_the_space() -> None:
    """`spread` is a permutation whose first 2^j entries fall one in each 2^j-th of the space,
    so the first candidates sample every value of the slowest-varying lever."""
    for count in (1, 2, 6, 40, 232, 256):
        order = tune_mod.spread(count)
        assert sorted(order) == list(range(count)), count
    assert tune_mod.spread(256)[:4] == [0, 128, 64, 192]
    order = tune_mod.spread(232)
    for parts in (2, 4, 8):
        assert sorted(k * parts // 232 for k in order[:parts]) == list(range(parts)), parts


def _fake_space(monkeypatch: pytest.MonkeyPatch, count: int, evaluated: list[tuple[int, int | None]]):
    """Candidates whose makespan (and bound) falls with their index, the best last: `evaluate`
    replaced by a pruning as the tuner's (bound > cutoff), recording (index, cutoff)."""
    def evaluate(space, index, params, target, cutoff, lead=False):
        evaluated.append((index, cutoff))
        makespan = 1000 - index
        if cutoff is not None and makespan > cutoff:
            return Candidate(index, params, "pruned", bound=makespan)
        return Candidate(index, params, "ok", makespan=makespan, bound=makespan)

    monkeypatch.setattr(tune_eval, "evaluate", evaluate)
    monkeypatch.setattr(tune_eval, "resolve_space", lambda ref: ref)
    return [{"k": k} for k in range(count)]


def test_a_space_whose_best_candidates_come_last_is_mostly_pruned(monkeypatch: pytest.MonkeyPatch) -> None:
    """Swept from its start, such a space pruned nothing (every candidate beat the one
    before); spread, a makespan near the best is known early."""
    evaluated: list[tuple[int, int | None]] = []
    points = _fake_space(monkeypatch, 200, evaluated)
    found: list[Candidate] = []
    tune_mod._sweep(tune_mod.make_executor(1, None, in_process=True), points,
                    lambda idx: Batch(None, "rngd", None, True, tuple((i, points[i]) for i in idx), "s1"),
                    found.extend)
    assert sorted(c.index for c in found) == list(range(200))
    assert sum(c.status == "ok" for c in found) < 20
    assert min((c for c in found if c.status == "ok"), key=lambda c: c.makespan).index == 199


def test_a_batch_prunes_against_the_best_found_in_its_sweep_and_the_pools(monkeypatch: pytest.MonkeyPatch) -> None:
    """Within one sweep a batch prunes against what earlier batches in this process found and
    against the pool's shared best (a multiprocessing.Value), besides its own cutoff; a batch
    of another sweep starts afresh."""
    evaluated: list[tuple[int, int | None]] = []
    points = _fake_space(monkeypatch, 10, evaluated)
    batch = lambda idx, sweep, cutoff=None: Batch(None, "rngd", cutoff, True,  # noqa: E731
                                                  tuple((i, points[i]) for i in idx), sweep)
    tune_eval.evaluate_batch(batch([3], "one"))
    tune_eval.evaluate_batch(batch([1, 5], "one", cutoff=999))
    assert evaluated[1:] == [(1, 997), (5, 997)]  # 997: candidate 3's makespan, found by the first batch
    evaluated.clear()
    tune_eval.evaluate_batch(batch([2], "two"))
    assert evaluated == [(2, None)]
    shared = multiprocessing.get_context("fork").Value("q", 0)
    tune_eval.share_best(tune_eval.PoolBest(shared))
    try:
        shared.value = 992  # found by another process of the pool
        evaluated.clear()
        out = tune_eval.evaluate_batch(batch([0, 9], "three"))
        assert evaluated == [(0, 992), (9, 992)] and [c.status for c in out] == ["pruned", "ok"]
        assert shared.value == 991  # candidate 9's makespan, published to the pool
    finally:
        tune_eval.share_best(None)


def test_pruned_sweeps_agree_across_executors(tmp_path: Path) -> None:
    """Serial and `--jobs 2` sweeps with pruning: the same winner, every candidate either
    scheduled with the unpruned sweep's makespan or pruned with a bound above the winner's;
    on a small drawn space too."""
    full = tune(_space(), prune=False)
    for result in (tune(_space()), tune(_space(), ref=FactoryRef(FILE, "SPACE"), jobs=2)):
        _agrees(result, full)
    drawn = _drawn(tmp_path)
    serial = tune(load_space(drawn))
    assert len(serial.candidates) >= 12 and serial.count("pruned")
    assert tune(load_space(drawn), ref=drawn, jobs=2).winner.index == serial.winner.index


def _agrees(result, full) -> None:
    assert result.winner.index == full.winner.index and result.winner.makespan == full.winner.makespan
    for c in result.candidates:
        if c.status == "pruned":
            assert c.bound > result.winner.makespan and c.index != result.winner.index
        else:
            assert (c.status, c.makespan) == (full.candidates[c.index].status, full.candidates[c.index].makespan)
