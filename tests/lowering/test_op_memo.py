"""Per-op lowering work is done once per distinct op (issue 60 item 6): an unrolled loop of
identical switch stages checks a custom-broadcast route (its snoop bitmap, cross-checked by
a plain cell enumeration), verifies it (FEED-13) and checks a pair unzip once, not once per
iteration. Each memo is keyed on every input its answer depends on: inputs differing in one
field get their own answers, the same answers the memos-off computation gives."""

from __future__ import annotations

import attrs
import pytest

from backends.npu import lower_kernel
from npu_opt.compile_api import compile_kernel
from ir.mapping.parser import parse_mapping
from ir.memo import clear_memos, memos_disabled
from ir.switch import custom
from ir.vector import pair
from tests.kernel_files import load_source
from tu_ops.feed import FeedBuffer
from tu_ops.printing import value_text
from tu_ops.switch import route_problem

SIZES = {"A": 256, "B": 8, "C": 16, "X": 4, "I": 2}

REPEATED = '''from npu_opt import *

axes(A=256, B=8, C=16, I=2)

Chip = m("1")
Cluster = m("1 # 2")


@device(chip=1)
def repeated_switches(ctx: Context, x: HbmTensor[i32, Chip, m("A, B, C")]) -> HbmTensor[i32, Chip, m("A, B, C")]:
    d = x.to_dm(ctx.tdma, DmTensor[i32, Chip, Cluster, m("A"), m("B, C")])
    out = DmTensor[i32, Chip, Cluster, m("A % 16, A / 16"), m("B, C")].new()
    for _ in range(TRIPS):
        (ctx.main.begin(d.view())
         .fetch(m("B, C / 8"), m("C % 8"))
         .switch(m("A % 16, A / 16"), m("B, C / 8"), SwitchConfig.CUSTOM_BROADCAST(ring_size=256))
         .collect(m("B, C / 8"), m("C % 8"))
         .commit_trim(m("C % 8"))
         .commit_view(out.view_mut()))
        (ctx.main.begin_interleaved(out.view(), out.view(), m("I"))
         .fetch(m("B, C / 8, I"), m("C % 8"))
         .collect(m("B, C / 8, I"), m("C % 8"))
         .vector_init()
         .vector_intra_slice_unzip(m("I"), m("B, C / 8"))
         .vector_clip_zip(ClipBinaryOpI32.ADD_FXP)
         .vector_final()
         .commit_trim(m("C % 8"))
         .commit_view(out.view_mut()))
    return out.to_hbm(ctx.tdma, HbmTensor[i32, Chip, m("A, B, C")])
'''


def _kernel(trips: int):
    return load_source(REPEATED.replace("TRIPS", str(trips)), f"op_memo_repeated_{trips}").repeated_switches


def _mp(text: str):
    return parse_mapping(text, SIZES)


def _counting(monkeypatch, module, name):
    calls = []
    real = getattr(module, name)

    def counted(*args, **kwargs):
        calls.append(args)
        return real(*args, **kwargs)

    monkeypatch.setattr(module, name, counted)
    return calls


@pytest.mark.parametrize("trips", [1, 3])
def test_repeated_switch_stages_check_their_route_once(monkeypatch, trips):
    """Lowering and verifying `trips` identical custom switches enumerates the route's cells
    (`bitmap_disagreement`), derives its routes and unzips the pair once, whatever `trips`."""
    enumerations = _counting(monkeypatch, custom, "bitmap_disagreement")
    derivations = _counting(monkeypatch, custom, "routes")
    unzips = _counting(monkeypatch, pair, "unzip_index")
    kernel = _kernel(trips)
    clear_memos()
    lowered = lower_kernel(kernel)
    assert sum(isinstance(op, FeedBuffer) and op.switch is not None for op in lowered.ops()) == trips
    assert (len(enumerations), len(derivations), len(unzips)) == (1, 1, 1)


def test_a_memoised_compile_equals_a_fresh_one():
    kernel = _kernel(3)
    clear_memos()
    warm = compile_kernel(kernel).text
    with memos_disabled():
        assert compile_kernel(kernel).text == warm


def test_switches_differing_in_one_mapping_get_their_own_bitmaps():
    """Three of the four mappings alike: the memo answers the second from its own inputs."""
    in_slice, in_time, out_time = _mp("A"), _mp("B"), _mp("B")
    clear_memos()
    first = custom.checked_bitmap(in_slice, in_time, _mp("A % 16, A / 16"), out_time)
    second = custom.checked_bitmap(in_slice, in_time, _mp("A % 32, A / 32"), out_time)
    assert custom.checked_bitmap(in_slice, in_time, _mp("A % 16, A / 16"), out_time) is first
    with memos_disabled():
        assert second == custom.checked_bitmap(in_slice, in_time, _mp("A % 32, A / 32"), out_time)
        assert first == custom.checked_bitmap(in_slice, in_time, _mp("A % 16, A / 16"), out_time)
    assert first != second


def test_feeds_differing_in_one_field_get_their_own_verdicts():
    """FEED-13 of a verified feed, then of the same feed with one field changed (its bitmap,
    its out_time, its input's time): each is judged on its own fields."""
    lowered = lower_kernel(_kernel(1))
    feed = next(op for op in lowered.ops() if isinstance(op, FeedBuffer) and op.switch is not None)
    fetch, out = attrs.evolve(feed.fetched_type(), dtype=feed.element_type.dtype), feed.output_type
    clear_memos()
    assert route_problem(feed.switch, fetch, out) is None
    rows = list(feed.switch.bitmap)
    rows[0], rows[1] = rows[1], rows[0]
    swapped = attrs.evolve(feed.switch, bitmap=tuple(rows))
    assert route_problem(swapped, fetch, out) == "the snoop bitmap is not the one the switch's mappings need"
    moved = attrs.evolve(feed.switch, out_time=_mp("C / 8, B"))
    assert route_problem(moved, fetch, out) is not None
    other_time = attrs.evolve(fetch, time=_mp("C / 8, B"))
    assert route_problem(feed.switch, other_time, out) is not None
    assert route_problem(feed.switch, fetch, out) is None


def test_unzips_differing_in_one_argument_get_their_own_answers():
    time = _mp("B, I")
    clear_memos()
    assert pair.unzip_problem(time, _mp("B"), "I") is None
    assert pair.unzip_problem(time, _mp("B"), "B") == "the per-group time B still holds B"
    assert pair.unzip_problem(_mp("I, B"), _mp("B"), "I") is None
    assert pair.unzip_problem(time, _mp("B / 2"), "I") is not None


def test_switch_routes_differing_in_one_field_print_their_own_text():
    """A route's text is remembered by its value: a route with one bitmap row changed, or one
    field, prints its own."""
    lowered = lower_kernel(_kernel(1))
    route = next(op.switch for op in lowered.ops() if isinstance(op, FeedBuffer) and op.switch is not None)
    clear_memos()
    text = value_text(route)
    rows = list(route.bitmap)
    rows[3] = (7,)
    for other in (attrs.evolve(route, bitmap=tuple(rows)), attrs.evolve(route, ring_size=128),
                  attrs.evolve(route, out_time=_mp("C / 8, B"))):
        with memos_disabled():
            fresh = value_text(other)
        assert value_text(other) == fresh != text
    assert value_text(route) == text and "bitmap=[[0], [16], [32]" in text
