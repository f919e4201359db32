"""tests/optional_deps.Deferred imports its module at a test's first read, never at collection:
pytest reads `__test__` and `__bases__` of every module attribute while collecting, and each
xdist worker collects every module (torch and jax were imported by both workers that way)."""

from __future__ import annotations

import sys

import pytest

from tests.optional_deps import Deferred

MISSING = "tests._deferred_module_that_does_not_exist"


def test_collection_probes_import_nothing_and_a_real_read_imports_the_module() -> None:
    lazy = Deferred(MISSING)
    assert getattr(lazy, "__test__", None) is None
    assert getattr(lazy, "__bases__", None) is None
    assert MISSING not in sys.modules
    with pytest.raises(ModuleNotFoundError):
        lazy.anything  # noqa: B018 - the read is the test
    assert Deferred("json").dumps([1]) == "[1]"
