"""`npu-opt schedule` and `npu-opt compile --dump-schedule`, on the shipped rates."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from driver.cli import main
from driver.schedule_command import schedule_command
from tests.npu_opt.test_compile_cli import EXAMPLE_KERNELS
from tests.visa.schedule.handmade import HEAD, COST, dma_in, dma_out, program

ROOT = Path(__file__).parents[2]

# With the shipped rates (tu_ops/targets/rngd.schedule.toml), by hand:
#   launch : nothing issues before cycle 2000
#   dma_in : 500 startup + max(engine 256 requests, HBM 256 packets x 2 (128-byte strides are not
#            256-aligned: unaligned read) x 256 B / 1500 = 88, DM 32768 / 2000 = 17) = 756
#   program: 290 command start-up + 16 fetch beats, 16 commit writes = 306
#   dma_out: 500 + max(engine 4, HBM 4 partial 128-byte writes x 50 x 256 / 1500 = 35, DM 1) = 535
CHAIN = 2000 + 756 + 306 + 535


def write(tmp_path, name, *steps, result):
    text = HEAD.replace("RES", str(result)) + "\n" + "\n".join(steps) + f"\nreturn %{result}\n" + COST
    path = tmp_path / name
    path.write_text(text)
    return path


@pytest.fixture
def chain(tmp_path):
    return write(tmp_path, "chain.visa", dma_in(1), program(0, 2, 1), dma_out(4, 3), result=4)


def run(args, verify=False):  # the hand-made artifacts are not verifiable: modelled as they are
    out, err = io.StringIO(), io.StringIO()
    status = schedule_command(args[0], *args[1:], out=out, err=err, verify=verify)
    return status, out.getvalue(), err.getvalue()


def test_the_report_names_makespan_bounds_critical_path_and_utilisation(chain):
    status, out, _ = run([[str(chain)]])
    assert status == 0
    assert f"makespan: {CHAIN} cycles" in out
    assert "a model of the reference scheduler" in out
    assert "chain" in out and "<- binding" in out
    path = out.split("critical path")[1].split("utilisation")[0]
    assert path.count("tdma") == 2 and path.count("main") == 1
    assert "waited on a dependency: RAW on dm[0, 128) (%1), written by %1" in out
    assert "partial write" in out and "utilisation: main" in out


def test_json_is_versioned_and_lists_every_record(chain):
    status, out, _ = run([[str(chain)], "json"])
    data = json.loads(out)
    assert status == 0 and data["schema"] == "npu-opt-schedule" and data["version"] == 2
    assert data["launch"] == 2000 and [s["startup"] for s in data["steps"]] == [0, 290, 0]
    assert data["makespan"] == CHAIN and data["binding"] == "chain"
    assert [s["start"] for s in data["steps"]] == [2000, 2756, 3062]
    assert [r["start"] for r in data["steps"][1]["records"]] == [2756 + 290] * 2   # after the start-up
    records = [r["mnemonic"] for s in data["steps"] for r in s["records"]]
    assert records == ["dma", "feed_buffer", "commit", "dma"]
    assert data["critical_path"] == [0, 1, 2]
    assert {h["kind"] for h in data["hazards"]} == {"RAW"}


def test_two_candidates_compare_by_ratio_and_changed_intervals(chain, tmp_path):
    # B loads a second tensor first: every later step shifts by one dma_in (756 cycles)
    b = write(tmp_path, "b.visa", dma_in(1, 1024), dma_in(2), program(0, 3, 2), dma_out(5, 4), result=5)
    status, out, _ = run([[str(chain), str(b)], "json"])
    data = json.loads(out)
    assert status == 0 and data["a"]["makespan"] == CHAIN and data["b"]["makespan"] == CHAIN + 756
    assert data["ratio"] == pytest.approx((CHAIN + 756) / CHAIN)
    # step 0 (%1 on tdma at [0, 756)) is the same in both; the rest moved or is new
    assert [c["index"] for c in data["changed"]] == [1, 2, 3] and data["changed"][2]["a"] is None
    status, out, _ = run([[str(chain), str(b)]])
    assert f"ratio B/A: {(CHAIN + 756) / CHAIN:.4f}" in out and "slower" in out


def test_a_corrupt_or_missing_file_is_a_usage_error(tmp_path):
    bad = tmp_path / "bad.visa"
    bad.write_text("visa 2\ngarbage\n")
    status, _, err = run([[str(bad)]])
    assert status == 2 and "error[USAGE]" in err and "bad.visa:2" in err
    status, _, err = run([[str(tmp_path / "none.visa")]])
    assert status == 2 and "no such file" in err
    assert main(["schedule", str(bad), str(bad), str(bad)]) == 2


@pytest.fixture(scope="module")
def dumped(tmp_path_factory):
    out = tmp_path_factory.mktemp("sched_out")
    status = main(["compile", str(ROOT / "examples"), "-o", str(out), "--jobs", "1",
                   "--dump-schedule", str(out / "schedules")])
    return status, out


def test_every_example_kernel_has_a_schedule_with_bounds_and_a_manifest_makespan(dumped):
    status, out = dumped
    assert status == 0
    manifest = json.loads((out / "manifest.json").read_text())
    assert len(manifest["kernels"]) == len(EXAMPLE_KERNELS)
    for entry in manifest["kernels"]:
        data = json.loads((out / "schedules" / f"{entry['name']}.schedule.json").read_text())
        assert entry["makespan"] == data["makespan"] > 0
        assert data["kernel"] == entry["name"] and data["version"] == 2
        assert {b["name"] for b in data["bounds"]} == {"hbm", "dm", "dm_slice", "mac", "chain", "context"}
        # the gather and all-gather examples run no Tensor Unit program: nothing reads or writes a slice's DM there
        idle = {"mac", "dm_slice"} if entry["name"] in ("paged_kv_gather", "embedding_lookup", "paged_kv_cache",
                                                        "take_along_axis", "put_along_axis",
                                                        "paged_kv_decode", "chip_all_gather",
                                                        "cluster_all_gather") else {"mac"}
        assert all(0 < b["cycles"] <= data["makespan"] for b in data["bounds"] if b["name"] not in idle)
        assert max(s["end"] for s in data["steps"]) == data["makespan"]
        # the command on the written artifact agrees with the dumped file
        status, text, _ = run([[str(out / entry["artifact"])], "json"], verify=True)
        assert json.loads(text)["makespan"] == data["makespan"]


def test_a_rates_file_changes_the_numbers_and_a_bad_one_is_a_usage_error(chain, tmp_path):
    text = (ROOT / "tu_ops" / "targets" / "rngd.schedule.toml").read_text()
    slow = tmp_path / "slow.toml"
    slow.write_text(text.replace("startup_cycles = 500", "startup_cycles = 1500"))
    status, out, _ = run([[str(chain)], "json", None, None, str(slow)])
    assert status == 0 and json.loads(out)["makespan"] == CHAIN + 2 * 1000
    bad = tmp_path / "bad.toml"
    bad.write_text(text.replace("startup_cycles", "start_cycles"))
    status, _, err = run([[str(chain)], "human", None, None, str(bad)])
    assert status == 2 and "error[USAGE]" in err and "dma.start_cycles" in err


def test_trace_and_html_files_are_written(chain, tmp_path):
    trace, page = tmp_path / "t.json", tmp_path / "p.html"
    assert main(["schedule", str(chain), "--trace", str(trace), "--html", str(page), "--no-verify"]) == 0
    events = [e for e in json.loads(trace.read_text())["traceEvents"] if e["ph"] == "X"]
    assert len(events) == 4 and events[-1]["ts"] == pytest.approx((2000 + 756 + 306) / 1000)
    html = page.read_text()
    assert "<script src" not in html and "<link" not in html and '"makespan": %d' % CHAIN in html


def test_a_bug_in_the_model_is_an_internal_error_not_a_traceback(chain, monkeypatch, capsys):
    import visa.schedule.model as model

    def broken(*args, **kwargs):
        raise ZeroDivisionError("injected")

    monkeypatch.setattr(model, "build_steps", broken)
    status, _, err = run([[str(chain)]])
    assert status == 3 and err.startswith("error[ICE]: internal error in the schedule model: ZeroDivisionError")
    from driver.schedule_command import schedule_manifest_fields
    from tu_ops import rngd

    assert schedule_manifest_fields(chain.read_text(), "k", rngd(), None) == {"makespan": None}
    assert "warning[ICE]: k: internal error" in capsys.readouterr().err
