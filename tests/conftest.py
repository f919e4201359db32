"""Options of the test suite: `--update-golden` rewrites tests/golden/*.txt instead of comparing."""

from __future__ import annotations

from tests import golden


def pytest_addoption(parser) -> None:
    parser.addoption("--update-golden", action="store_true", default=False,
                     help="rewrite the golden files (tests/golden/*.txt) the selected tests compare")


def pytest_configure(config) -> None:
    if config.getoption("--update-golden"):
        golden.UPDATE["on"] = True
