"""`python -m npu_opt` runs the command line."""

import sys

from npu_opt.cli import main

sys.exit(main())
