"""`python -m npu_opt` runs the command line, which lives in `driver` (`driver.cli`).

The only import of `driver` from inside `npu_opt` (tests/test_layers.py allows exactly
this module): the DSL never depends on its command line, but `python -m npu_opt` is the
documented way to start it."""

import sys

from driver.cli import main

sys.exit(main())
