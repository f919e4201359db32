"""The page's data without a browser: every tensor's memory, addresses, lifetime and the
records connected to it, against hand-made kernels whose numbers are worked out by hand
(tests/visa/schedule/handmade.py); `npu-opt schedule --html` embeds them; and the browser
test's rule: without chromium or Playwright it skips, under CI=true it fails."""

from __future__ import annotations

import json
import re

import npu_opt
import pytest

from driver.cli import main
from tests.visa.schedule import browser, page_kernels
from tests.visa.schedule.handmade import COST, HEAD, RATES, artifact, dma_in, dma_out, program
from tests.visa.schedule.test_page import ARTIFACT, DM
from visa import parse_visa
from visa.schedule import schedule_artifact
from visa.schedule.page import page_data


def _tensors(data: dict) -> dict[str, dict]:
    return {t["name"]: t for t in data["tensors"]}


def test_tensors_have_their_allocation_and_live_from_first_to_last_step():
    # with RATES: dma_in [0, 356), the program [356, 372), dma_out [372, 476) (handmade.py)
    art = artifact(dma_in(1), program(0, 2, 1), dma_out(4, 3), result=4)
    data = page_data(schedule_artifact(art, rates=RATES), art.kernel)
    t = _tensors(data)
    assert set(t) == {"%0", "%1", "%3", "%4"}               # the feed's stream %2 is no tensor
    assert (t["%1"]["space"], t["%1"]["lo"], t["%1"]["hi"]) == ("dm", 0, 128)     # dst_base 0, 128 B
    assert (t["%3"]["space"], t["%3"]["lo"], t["%3"]["hi"]) == ("dm", 128, 640)   # dest 128, 16 x 32 B
    # loaded at 0, read by the program (ends 372); committed at 356, stored by 476
    assert (t["%1"]["start"], t["%1"]["end"]) == (0, 372) and (t["%3"]["start"], t["%3"]["end"]) == (356, 476)
    assert (t["%0"]["start"], t["%0"]["end"]) == (0, 356)   # a parameter: from cycle 0 to its last reader
    assert (t["%4"]["start"], t["%4"]["end"]) == (372, 476)
    assert t["%0"]["param"] == "x" and t["%0"]["space"] == "hbm" and t["%0"]["lo"] is None
    assert t["%1"]["writers"] == ["%1"] and t["%1"]["readers"] == ["%2"] and t["%1"]["contexts"] == ["main", "tdma"]
    names = [x["name"] for x in data["tensors"]]
    links = {b["ref"]: sorted(names[i] for i in b["tensors"]) for b in data["bars"]}
    assert links == {"%1": ["%0", "%1"], "%2": ["%1"], "%3": ["%3"], "%4": ["%3", "%4"]}


def test_writes_into_a_tensor_join_it():
    text = npu_opt.compile(page_kernels.twice_into).text
    assert "%4 = dma_into" in text and "into=%4" in text and "final %2 = %6" in text
    art = parse_visa(text)
    t = _tensors(page_data(schedule_artifact(art), art.kernel))
    assert set(t) == {"%0", "%1", "%2", "%3", "%5"}          # %4 and %6 are `out` (%2), updated
    assert t["%2"]["param"] == "out" and t["%2"]["writers"] == ["%4", "%6"] and t["%2"]["readers"] == []
    assert [(t[n]["lo"], t[n]["hi"]) for n in ("%3", "%5")] == [(0, 32), (0, 32)]   # one place, reused
    assert t["%3"]["end"] <= t["%5"]["start"]                  # ... at different times


def test_the_html_command_embeds_the_tensors(tmp_path):
    out = tmp_path / "gemm.html"
    assert main(["schedule", str(ARTIFACT), "--html", str(out)]) == 0
    payload = re.search(r'<script type="application/json" id="schedule-data">(.*?)</script>', out.read_text(), re.S)
    data = json.loads(payload.group(1))
    t = _tensors(data)
    assert {n: (x["lo"], x["hi"]) for n, x in t.items() if x["space"] == "dm"} == DM
    # the weights: 8 lanes of 512 bytes (`bytes_per_lane=512`), 16 rows of 32 bytes from row 0
    assert (t["%5"]["space"], t["%5"]["lo"], t["%5"]["hi"], t["%5"]["lanes"]) == ("trf", 0, 16, 8)


@pytest.mark.parametrize("missing", ["chromium", "playwright"])
def test_without_a_browser_the_page_test_skips_but_fails_in_ci(monkeypatch, missing):
    if missing == "chromium":
        monkeypatch.setattr(browser, "chromium_path", lambda: None)
    else:
        monkeypatch.setattr(browser, "sync_playwright", lambda: None)
    monkeypatch.delenv("CI", raising=False)
    with pytest.raises(pytest.skip.Exception, match=missing if missing == "chromium" else "Playwright"):
        with browser.browser_or_skip():
            pass
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match="CI installs it"):
        with browser.browser_or_skip():
            pass


def test_an_unused_parameter_is_listed_and_never_live():
    head = HEAD.replace('  param %0 "x"', '  param %9 "unused" : hbm[i8, "1", "A, B"]\n  param %0 "x"')
    art = parse_visa(head.replace("RES", "4") + "\n" + "\n".join([dma_in(1), program(0, 2, 1), dma_out(4, 3)])
                     + "\nreturn %4\n" + COST)
    t = _tensors(page_data(schedule_artifact(art, rates=RATES), art.kernel))
    unused = next(x for x in t.values() if x["param"] == "unused")
    assert (unused["start"], unused["end"], unused["writers"], unused["readers"]) == (0, 0, [], [])
