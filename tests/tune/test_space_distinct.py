"""`Space(distinct=key)`: points with the same key are one candidate (the first kept, in
order), a point keyed None is left out, and without a key every point of the product stays."""

from __future__ import annotations

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
