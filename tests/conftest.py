"""Options of the test suite: `--update-golden` rewrites tests/golden/*.txt instead of comparing.

While the suite is collected, what collection has built is kept out of the cyclic garbage
collector's reach (`gc.freeze` after each collector): every xdist worker imports every test
module, and each full collection walked all the modules, functions and parameter sets built
so far again, ~6 CPU-s of a worker's ~27 s of collection. Frozen objects are still freed
when their last reference goes. The heap is unfrozen once collection ends, so the tests run
on an unfrozen process as before (the tuner's tests read and set the freeze themselves)."""

from __future__ import annotations

import gc

from tests import golden


def pytest_addoption(parser) -> None:
    parser.addoption("--update-golden", action="store_true", default=False,
                     help="rewrite the golden files (tests/golden/*.txt) the selected tests compare")


def pytest_configure(config) -> None:
    if config.getoption("--update-golden"):
        golden.UPDATE["on"] = True
    gc.freeze()


def pytest_collectreport(report) -> None:
    gc.freeze()


def pytest_collection_finish(session) -> None:
    gc.unfreeze()
