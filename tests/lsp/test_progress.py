"""Issue 58.1: a check that takes a while shows a work-done progress notice, and a change
after a pause of typing is checked at once (the debounce holds back bursts only)."""

from __future__ import annotations

from pathlib import Path

from driver.lsp.supervisor import Limits, Worker
from tests.lsp import kernels as K
from tests.lsp.raw import RawServer


def _open(raw: RawServer, path: Path, text: str) -> str:
    uri = path.as_uri()
    raw.send({"method": "textDocument/didOpen", "params": {"textDocument": {
        "uri": uri, "languageId": "python", "version": 1, "text": text}}})
    return uri


def _published(uri: str, version: int):
    return lambda m: m.get("method") == "textDocument/publishDiagnostics" and m["params"]["uri"] == uri \
        and m["params"].get("version") == version


def test_a_slow_check_shows_progress_from_begin_to_end_before_its_diagnostics(tmp_path):
    raw = RawServer()
    raw.initialize(capabilities={"window": {"workDoneProgress": True}})
    uri = _open(raw, tmp_path / "slow.py", "import time\nfrom npu_opt import *\n\ntime.sleep(1.2)\n" + K.WHOLE_FLIT)
    seen = raw.until(_published(uri, 1))
    kinds = [(m["method"], m["params"].get("value", {}).get("kind")) for m in seen if "method" in m]
    assert ("window/workDoneProgress/create", None) in kinds
    begin, end = kinds.index(("$/progress", "begin")), kinds.index(("$/progress", "end"))
    assert begin < end < len(kinds) - 1, kinds  # begin, end, then the diagnostics
    (value,) = [m["params"]["value"] for m in seen if m.get("method") == "$/progress"
                and m["params"]["value"]["kind"] == "begin"]
    assert "slow.py" in value["message"]
    assert raw.end() == 0


def test_without_the_client_capability_no_progress_is_sent(tmp_path):
    raw = RawServer()
    raw.initialize()
    uri = _open(raw, tmp_path / "slow_quiet.py", "import time\nfrom npu_opt import *\n\ntime.sleep(1.2)\n")
    seen = raw.until(_published(uri, 1))
    assert not [m for m in seen if m.get("method") in ("$/progress", "window/workDoneProgress/create")]
    assert raw.end() == 0


def test_a_change_after_a_pause_is_checked_without_waiting_out_the_debounce(tmp_path):
    raw = RawServer()
    raw.initialize(options={"npuOpt": {"debounceMs": 600_000}})  # ten minutes: a wait for it fails the test
    uri = _open(raw, tmp_path / "paused.py", K.WHOLE_FLIT)
    raw.until(_published(uri, 1))
    raw.send({"method": "textDocument/didChange", "params": {"textDocument": {"uri": uri, "version": 2},
                                                              "contentChanges": [{"text": K.HALF_FLIT}]}})
    # (version 1's full publish, after its early one, may come in between: only version 2's count)
    (published,) = [m for m in raw.until(_published(uri, 2)) if m.get("method") == "textDocument/publishDiagnostics"
                    and m["params"].get("version") == 2]
    assert [d["code"] for d in published["params"]["diagnostics"]] == ["COLLECT-2"]
    assert raw.end() == 0


def test_a_full_check_sends_its_diagnostics_before_its_hovers_and_a_recheck_does_not(tmp_path):
    """Opening a file (a full check) shows its diagnostics once its kernels are traced; the
    hovers of its mappings and tensors follow with the same diagnostics."""
    worker = Worker(Limits(seconds=30))
    try:
        path = str(tmp_path / "early.py")
        sent: list[list[dict]] = []
        facts = worker.check(path, K.HALF_FLIT, fresh=True, early=sent.append)
        assert [[d["code"] for d in early] for early in sent] == [["COLLECT-2"]]
        assert sent[0] == facts["diagnostics"] and facts["mappings"]
        sent.clear()
        facts = worker.check(path, K.HALF_FLIT + "\n", early=sent.append)  # an edit: one reply
        assert sent == [] and [d["code"] for d in facts["diagnostics"]] == ["COLLECT-2"]
    finally:
        worker.stop()
