"""The schedule page in a real headless chromium (Playwright driving the system's chromium):
it loads with no request off the disk; every record has a bar and every tensor with an
address a box in the memory view; selecting an operator or a tensor highlights what it is
connected to and lists its lifetime and context; the cycle inputs, a drag across the
timeline and the brush in the memory view zoom; reset restores. Every assertion reads the
page's state (its DOM and `window.scheduleViewer.state()`), none reads pixels. Under CI
(CI=true) a missing chromium or Playwright is a failure."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.visa.schedule.browser import browser_or_skip
from visa import parse_visa
from visa.schedule import schedule_artifact
from visa.schedule.page import schedule_page
from visa.schedule.trace import trace_json

ARTIFACT = Path(__file__).parents[1] / "data" / "gemm_i8_kernel.visa"

# The artifact's DM tensors where its text puts them: the DMAs' `dst_base` and the commit's
# `dest`, each 4096 bytes a slice (32 x 128 i8; 32 x 32 i32).
DM = {"%2": (0, 4096), "%3": (4096, 8192), "%11": (4096, 8192)}
TENSORS = {"%0", "%1", "%2", "%3", "%5", "%11", "%12"}   # + the TRF weights %5, the HBM sides


@pytest.fixture(scope="module")
def browser():
    with browser_or_skip() as b:
        yield b


@pytest.fixture(scope="module")
def artifact():
    return parse_visa(ARTIFACT.read_text())


@pytest.fixture(scope="module")
def schedule(artifact):
    return schedule_artifact(artifact)


@pytest.fixture(scope="module")
def html_path(artifact, schedule, tmp_path_factory):
    path = tmp_path_factory.mktemp("page") / "gemm.html"
    path.write_text(schedule_page(schedule, title="gemm_i8_kernel.visa", kernel=artifact.kernel))
    return path


@pytest.fixture
def page(browser, html_path):
    """The page freshly loaded; the URLs it requested and the script errors it raised."""
    tab = browser.new_page(viewport={"width": 1500, "height": 1000})
    tab.set_default_timeout(5000)     # a missing element fails in seconds, not in 30
    requests, errors = [], []
    tab.on("request", lambda r: requests.append(r.url))
    tab.on("pageerror", lambda e: errors.append(str(e)))
    tab.goto(html_path.as_uri())
    yield tab
    tab.close()
    assert errors == [], errors
    assert all(url.startswith("file:") for url in requests), requests     # no network


def state(page) -> dict:
    return page.evaluate("window.scheduleViewer.state()")


def bars(page) -> list[str]:
    return page.eval_on_selector_all("rect.bar", "rs => rs.map(r => r.dataset.ref)")


def boxes(page) -> set[str]:
    return set(page.eval_on_selector_all("rect.tensor", "rs => rs.map(r => r.dataset.name)"))


def marked(page, selector: str, cls: str) -> set[str]:
    return set(page.eval_on_selector_all(f"{selector}.{cls}", "rs => rs.map(r => r.dataset.ref || r.dataset.name)"))


def test_it_loads_with_a_bar_per_record_and_a_box_per_placed_tensor(page, artifact, html_path):
    assert "http" not in html_path.read_text().replace("http://www.w3.org/2000/svg", "")
    records = {str(op.result): op for op in artifact.kernel.ops()}
    assert sorted(bars(page)) == sorted(records)
    assert boxes(page) == set(DM)        # the memory view shows DM first
    rows = page.eval_on_selector_all("#tensor-rows tr", "rs => rs.map(r => r.dataset.name)")
    assert set(rows) == TENSORS
    for name, (lo, hi) in DM.items():
        row = page.inner_text(f'#tensor-rows tr[data-name="{name}"]')
        assert f"DM [{lo}, {hi}) bytes" in row
    assert state(page)["selected"] is None and page.locator(".dim").count() == 0


def test_hovering_a_bar_or_a_box_shows_its_text(page, artifact):
    records = {str(op.result): op for op in artifact.kernel.ops()}
    for ref in bars(page):
        page.hover(f'rect.bar[data-ref="{ref}"]')
        tip = page.locator("#tip")
        assert tip.is_visible()
        text = tip.text_content()
        op = records[ref]
        assert text.splitlines()[0] == op.text()
        assert f"source: {op.loc.file}:{op.loc.line}:" in text
    page.hover('rect.tensor[data-name="%3"]')
    assert page.locator("#tip").text_content().startswith('%3 : dm[i8, "1", "1 # 2", "M / 32, N / 32", "N % 32, K"]')
    assert page.locator("rect.bar.critical").count() > 0
    # hovering a node outlines the nodes connected to it, as selecting does, until the mouse leaves
    assert marked(page, "rect.bar", "hover") == {"%3", "%4"} and marked(page, "#tensor-rows tr", "hover") == {"%3"}
    page.hover('rect.bar[data-ref="%6"]')
    assert marked(page, "rect.tensor", "hover") == {"%2"} and marked(page, "rect.bar", "hover") == {"%6"}
    page.mouse.move(5, 5)
    assert page.locator(".hover").count() == 0 and not page.locator("#tip").is_visible()


def test_selecting_an_operator_highlights_its_tensors(page, schedule):
    page.click('rect.bar[data-ref="%12"]')     # the DMA out: reads %11 (DM), writes %12 (HBM)
    s = state(page)
    assert s["selected"] == {"kind": "op", "name": "%12"}
    assert s["linked"] == {"ops": ["%12"], "tensors": ["%11", "%12"]}
    assert marked(page, "rect.bar", "selected") == {"%12"}
    assert marked(page, "rect.bar", "dim") == {"%2", "%3", "%4", "%5", "%6", "%7", "%8", "%9", "%10", "%11"}
    assert marked(page, "rect.tensor", "linked") == {"%11"} and marked(page, "rect.tensor", "dim") == {"%2", "%3"}
    assert marked(page, "#tensor-rows tr", "linked") == {"%11", "%12"}
    slot = schedule.slots[4]
    panel = page.inner_text("#details")
    assert "operator %12 dma" in panel and "context: tdma" in panel
    assert f"lifetime: cycles [{slot.start}, {slot.end})" in panel
    assert "reads: %11" in panel and "writes: %12" in panel


def test_selecting_a_tensor_highlights_its_operators_and_lists_its_lifetime(page, schedule):
    page.click('rect.tensor[data-name="%3"]')  # written by the DMA %3, read by the feed %4 (program 0)
    s = state(page)
    assert s["selected"] == {"kind": "tensor", "name": "%3"}
    assert s["linked"]["ops"] == ["%3", "%4"]
    assert marked(page, "rect.bar", "linked") == {"%3", "%4"}
    assert marked(page, "rect.tensor", "selected") == {"%3"}
    panel = page.inner_text("#details")
    # live from its DMA (step 1) to the end of program 0 (step 2), the allocation's steps
    assert f"lifetime: cycles [{schedule.slots[1].start}, {schedule.slots[2].end}), steps 1..2" in panel
    assert "memory: DM [4096, 8192) bytes" in panel and "context: sub, tdma" in panel
    assert "written by: %3 dma" in panel and "read by: %4 feed_buffer" in panel
    page.click('#details a:text("%4 feed_buffer")')        # a connected node is a link
    assert state(page)["selected"] == {"kind": "op", "name": "%4"}
    assert state(page)["linked"]["tensors"] == ["%3"]
    page.click("#memory .background", position={"x": 20, "y": 60})   # the background clears it
    assert state(page)["selected"] is None and page.locator(".dim, .linked, .selected").count() == 0
    page.click('#tensor-rows tr[data-name="%12"]')      # a row of the table selects its tensor
    assert state(page)["selected"] == {"kind": "tensor", "name": "%12"} and state(page)["linked"]["ops"] == ["%12"]
    page.keyboard.press("Escape")
    assert state(page)["selected"] is None


def test_the_memory_view_shows_each_memory(page):
    page.select_option("#space", "trf")
    assert state(page)["space"] == "trf" and state(page)["addresses"] == [0, 16]
    assert boxes(page) == {"%5"}
    page.click('rect.tensor[data-name="%5"]')
    assert state(page)["linked"]["ops"] == ["%5", "%7"]   # the TRF load, the contraction reading it


def test_the_cycle_inputs_zoom_and_reset_restores(page, schedule):
    total = len(bars(page))
    first = schedule.origin     # nothing starts before the launch
    page.fill("#from", str(first))
    page.fill("#to", str(first + 100))
    page.click("#zoom")
    assert state(page)["cycles"] == [first, first + 100]
    assert bars(page) == ["%2"] and boxes(page) == {"%2"}      # the first DMA only
    page.click("#reset")
    assert state(page)["cycles"] == [0, schedule.makespan] and len(bars(page)) == total
    assert page.input_value("#from") == "0" and page.input_value("#to") == str(schedule.makespan)


def _center(page, selector: str) -> tuple[float, float]:
    box = page.locator(selector).bounding_box()
    return box["x"] + box["width"] / 2, box["y"] + box["height"] / 2


def test_dragging_across_the_timeline_zooms_the_cycles(page, schedule):
    (x0, y), (x1, _) = _center(page, 'rect.bar[data-ref="%3"]'), _center(page, 'rect.bar[data-ref="%12"]')
    page.mouse.move(x0, y)
    page.mouse.down()
    page.mouse.move(x1, y, steps=5)
    page.mouse.up()
    lo, hi = state(page)["cycles"]
    # from inside the DMA %3 to inside the DMA out %12
    assert schedule.slots[1].start <= lo < schedule.slots[1].end and schedule.slots[4].start < hi <= schedule.slots[4].end
    assert state(page)["selected"] is None      # a drag is not a click ...
    page.click('rect.bar[data-ref="%12"]')
    assert state(page)["selected"] == {"kind": "op", "name": "%12"}   # ... and the next click is one
    assert page.input_value("#from") == str(lo) and page.input_value("#to") == str(hi)


def test_the_brush_zooms_cycles_and_addresses_together_and_reset_restores(page, schedule):
    three = page.locator('rect.tensor[data-name="%3"]').bounding_box()
    out = page.locator('rect.tensor[data-name="%11"]').bounding_box()
    page.mouse.move(three["x"] + 2, three["y"] + 2)
    page.mouse.down()
    page.mouse.move(out["x"] + out["width"] / 4, out["y"] + out["height"] - 2, steps=5)
    assert page.locator("#brush").count() == 1              # the box follows the mouse
    page.mouse.up()
    s = state(page)
    assert page.locator("#brush").count() == 0
    (c0, c1), (a0, a1) = s["cycles"], s["addresses"]
    assert schedule.slots[1].start <= c0 < schedule.slots[2].end < c1 < schedule.makespan
    assert 4096 <= a0 < 4200 and 8000 < a1 <= 8192
    assert boxes(page) == {"%3", "%11"}                     # %2 (bytes 0..4096) is outside
    assert s["selected"] is None                            # a drag is not a click ...
    page.click('rect.tensor[data-name="%11"]')
    assert state(page)["selected"] == {"kind": "tensor", "name": "%11"}   # ... and the next click is one
    assert page.input_value("#addr-from") == str(a0) and page.input_value("#to") == str(c1)
    page.click("#reset")
    assert state(page)["cycles"] == [0, schedule.makespan] and state(page)["addresses"] == [0, 8192]
    assert boxes(page) == set(DM)


def test_a_brush_released_outside_the_view_changes_nothing(page, schedule):
    three = page.locator('rect.tensor[data-name="%3"]').bounding_box()
    panel = page.locator("#details").bounding_box()
    page.mouse.move(three["x"] + 2, three["y"] + 2)
    page.mouse.down()
    page.mouse.move(panel["x"] + 10, panel["y"] + 10, steps=5)
    page.mouse.up()
    assert page.locator("#brush").count() == 0
    assert state(page)["cycles"] == [0, schedule.makespan] and state(page)["addresses"] == [0, 8192]


def test_the_address_inputs_zoom_the_memory_view(page):
    page.fill("#addr-from", "0")
    page.fill("#addr-to", "4000")
    page.click("#zoom")
    assert state(page)["addresses"] == [0, 4000] and boxes(page) == {"%2"}


def test_the_trace_has_one_complete_event_per_record():
    artifact = parse_visa(ARTIFACT.read_text())
    data = trace_json(schedule_artifact(artifact))
    events = [e for e in data["traceEvents"] if e["ph"] == "X"]
    assert sorted(e["args"]["text"] for e in events) == sorted(op.text() for op in artifact.kernel.ops())
    assert all(e["dur"] >= 0 and e["ts"] >= 0 for e in events)
    names = {e["args"]["name"] for e in data["traceEvents"] if e["name"] == "thread_name"}
    assert {"tdma dma", "main fetch", "sub fetch"} <= names
