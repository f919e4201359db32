"""The schedule page in a real headless chromium: it renders, every record of the artifact
has a bar, hovering a bar shows the record's text and source line, zoom narrows the range,
and a screenshot is not blank. Under CI (CI=true) a missing chromium is a failure."""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pytest

from tests.visa.schedule.browser import Browser, chromium_path
from visa import parse_visa
from visa.schedule import schedule_artifact
from visa.schedule.page import schedule_page
from visa.schedule.trace import trace_json

ARTIFACT = Path(__file__).parents[1] / "data" / "gemm_i8_kernel.visa"


@pytest.fixture(scope="module")
def browser():
    if chromium_path() is None:
        if os.environ.get("CI") == "true":
            pytest.fail("chromium is not installed; CI installs it (.ci/run: apt-get install chromium)")
        pytest.skip("no chromium on PATH (CI=true makes this a failure)")
    b = Browser()
    yield b
    b.close()


@pytest.fixture(scope="module")
def page(browser, tmp_path_factory):
    artifact = parse_visa(ARTIFACT.read_text())
    path = tmp_path_factory.mktemp("page") / "gemm.html"
    path.write_text(schedule_page(schedule_artifact(artifact), title="gemm_i8_kernel.visa"))
    browser.open(path.as_uri())
    return artifact, path


BARS = """JSON.stringify(Array.from(document.querySelectorAll('rect.bar')).map(function (r) {
  const b = r.getBoundingClientRect();
  return [r.dataset.ref, b.x + b.width / 2, b.y + b.height / 2, r.classList.contains('critical')]; }))"""


def test_every_record_has_a_bar_and_hovering_shows_its_text(browser, page):
    artifact, path = page
    assert "http" not in path.read_text().replace("http://www.w3.org/2000/svg", "")   # no network
    bars = json.loads(browser.eval(BARS))
    records = {str(op.result): op for op in artifact.kernel.ops()}
    assert sorted(ref for ref, *_ in bars) == sorted(records)
    for ref, x, y, _ in bars:
        browser.hover(x, y)
        tip = browser.eval("document.getElementById('tip').style.display + '|' + "
                           "document.getElementById('tip').textContent")
        shown, text = tip.split("|", 1)
        op = records[ref]
        assert shown == "block"
        assert text.splitlines()[0] == op.text()
        assert f"source: {op.loc.file}:{op.loc.line}:" in text
    assert any(critical for *_, critical in bars)


def test_zoom_keeps_only_the_bars_in_the_range(browser, page):
    total = len(json.loads(browser.eval(BARS)))
    first = schedule_artifact(page[0]).origin   # nothing starts before the launch
    browser.eval(f"document.getElementById('from').value = {first}; "
                 f"document.getElementById('to').value = {first + 100}; document.getElementById('zoom').click(); 0")
    assert 0 < len(json.loads(browser.eval(BARS))) < total      # the first DMA only
    browser.eval("document.getElementById('reset').click(); 0")
    assert len(json.loads(browser.eval(BARS))) == total


def test_the_screenshot_is_not_blank(browser, page):
    box = json.loads(browser.eval("JSON.stringify(document.getElementById('timeline').getBoundingClientRect())"))
    assert box["width"] > 500 and box["height"] > 100
    image = browser.screenshot({k: box[k] for k in ("x", "y", "width", "height")})
    rgb = image[..., :3].astype(int)
    white = (rgb >= 250).all(axis=-1)
    assert (~white).mean() > 0.02, "the page rendered (almost) nothing but background"
    # the DMA bars' colour (#4e79a7) is on screen
    assert (np.abs(rgb - np.array([0x4E, 0x79, 0xA7])).sum(axis=-1) < 12).sum() > 500


def test_the_trace_has_one_complete_event_per_record():
    artifact = parse_visa(ARTIFACT.read_text())
    data = trace_json(schedule_artifact(artifact))
    events = [e for e in data["traceEvents"] if e["ph"] == "X"]
    assert sorted(e["args"]["text"] for e in events) == sorted(op.text() for op in artifact.kernel.ops())
    assert all(e["dur"] >= 0 and e["ts"] >= 0 for e in events)
    names = {e["args"]["name"] for e in data["traceEvents"] if e["name"] == "thread_name"}
    assert {"tdma dma", "main fetch", "sub fetch"} <= names
