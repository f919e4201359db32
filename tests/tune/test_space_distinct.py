"""`Space(distinct=key)`: points with the same key are one candidate (the first kept, in
order), a point keyed None is left out, and without a key every point of the product stays."""

from __future__ import annotations

import threading

from npu_opt.tune import Space


def _factory(**point: object) -> object:
    return point


def test_points_with_one_key_are_one_candidate_and_none_is_left_out() -> None:
    params = {"a": [1, 2, 3], "b": ["x", "y"]}
    assert len(Space(_factory, params).points()) == 6

    def key(point: dict) -> object:
        if point["a"] == 3:
            return None                      # e.g. over a budget: never built
        return point["a"] if point["b"] == "x" else (point["a"], "y") if point["a"] == 2 else point["a"]

    kept = Space(_factory, params, distinct=key).points()
    assert kept == [{"a": 1, "b": "x"}, {"a": 2, "b": "x"}, {"a": 2, "b": "y"}]


def test_points_are_listed_once_per_space_and_handed_out_fresh() -> None:
    """`npu-opt tune` counts the points, then the sweep lists them: `distinct` (a synth space
    builds every point's source for it) runs once per point of the product, not once per
    listing, and a caller that changes a point it was given changes no later listing."""
    calls: list[dict] = []

    def key(point: dict) -> object:
        calls.append(point)
        return point["a"]

    space = Space(_factory, {"a": [1, 2], "b": ["x", "y"]}, distinct=key)
    first = space.points()
    first[0]["a"] = 99
    assert space.points() == [{"a": 1, "b": "x"}, {"a": 2, "b": "x"}]
    assert len(calls) == 4


def test_two_threads_listing_a_fresh_space_at_once_each_get_its_points_once() -> None:
    """A second thread that lists the points while the first is still listing them (here: from
    inside the first's `distinct`) lists them too; neither listing is added to the other's:
    every listing, then and later, holds each kept point once."""
    other: list[list[dict]] = []

    def key(point: dict) -> object:
        if not other and threading.current_thread() is threading.main_thread():
            thread = threading.Thread(target=lambda: other.append(space.points()))
            thread.start()
            thread.join()
        return point["a"]

    space = Space(_factory, {"a": [1, 2], "b": ["x", "y"]}, distinct=key)
    want = [{"a": 1, "b": "x"}, {"a": 2, "b": "x"}]
    assert space.points() == want
    assert other == [want]
    assert space.points() == want
