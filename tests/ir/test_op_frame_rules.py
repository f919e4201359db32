"""OpFrame's rule list: a rule a subclass assigns under another attribute name
(`_family = clip_family`) is listed once, in the place the class declares it."""

from __future__ import annotations

import attrs

from ir.op_frame import OpFrame, rule
from ir.vector import branch_ops, pair_logic_ops, pair_ops, stash_ops


@rule("TOY-1")
def _shared(self: object) -> None:
    return None


def _every_subclass(cls: type) -> list[type]:
    out = []
    for sub in cls.__subclasses__():
        out += [sub, *_every_subclass(sub)]
    return out


def test_a_rule_assigned_by_another_name_is_listed_once_on_a_slotted_class():
    class Base(OpFrame):
        @rule("TOY-0")
        def _first(self) -> None:
            return None

    @attrs.frozen
    class Child(Base):
        _alias = _shared

        @rule("TOY-2")
        def _last(self) -> None:
            return None

    assert [fn.rule_code for fn in Child.RULES] == ["TOY-0", "TOY-1", "TOY-2"]


def test_no_op_class_lists_a_rule_twice():
    assert branch_ops and pair_ops and stash_ops and pair_logic_ops  # the classes that assign shared rules
    classes = _every_subclass(OpFrame)
    assert len(classes) > 50
    doubled = {c.__qualname__: [f.__name__ for f in c.RULES] for c in classes if len(set(c.RULES)) != len(c.RULES)}
    assert doubled == {}
