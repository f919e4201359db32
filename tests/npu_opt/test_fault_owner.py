"""`ir.location.tb_frames`, the frames of a traceback (stdlib's `walk_tb` is the oracle), and
`npu_opt.fault_owner`: whose fault an exception is by the innermost frame that is ours or
the user's."""

from __future__ import annotations

import traceback

import attrs
import pytest

from ir.location import tb_frames
from npu_opt.fault_owner import raised_by_us


def _users_own() -> None:
    raise ValueError("the user's bug")


def _through_attrs() -> None:
    attrs.evolve(object())  # attrs refuses a non-attrs instance: our wrong call, not the user's


def _caught(fn) -> BaseException:  # type: ignore[no-untyped-def]
    with pytest.raises(Exception) as info:
        fn()
    return info.value


def test_frames_are_walk_tbs() -> None:
    for e in (_caught(_users_own), _caught(_through_attrs)):
        assert tb_frames(e.__traceback__) == list(traceback.walk_tb(e.__traceback__))
        assert len(tb_frames(e.__traceback__)) >= 2
    assert tb_frames(None) == []


def test_the_innermost_own_or_user_frame_decides() -> None:
    assert not raised_by_us(_caught(_users_own))  # raised in this file: a user's frame
    assert not raised_by_us(_caught(_through_attrs))  # attrs only passes it on; this file called it
    ours = _caught(lambda: tb_frames(5))  # an AttributeError raised inside ir.location (ours)
    assert raised_by_us(ours) and tb_frames(ours.__traceback__)[-1][0].f_code.co_name == "tb_frames"
