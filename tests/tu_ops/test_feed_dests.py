"""tu_ops/feed_dests.py: the index of feed destination classes says what the op classes
declare (`FEED_DEST`), and a feed's verifier loads only the class it names."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tu_ops.enums import DestKind
from tu_ops.feed_dests import DEST_CLASSES, feed_destination, feed_destinations

ROOT = Path(__file__).resolve().parents[2]


def test_the_index_is_what_the_classes_declare() -> None:
    declared = {kind.name: cls for kind, cls in feed_destinations().items()}
    assert {kind: load() for kind, load in DEST_CLASSES.items()} == declared, \
        "update DEST_CLASSES in tu_ops/feed_dests.py"
    for kind in DestKind:
        assert feed_destination(kind) is feed_destinations().get(kind)


def test_one_destination_loads_one_module() -> None:
    code = ("import sys\nfrom tu_ops.enums import DestKind\nfrom tu_ops.feed_dests import feed_destination\n"
            "print(feed_destination(DestKind.TRF_LOAD).__name__, 'tu_ops.vector_pair' in sys.modules,"
            " 'tu_ops.vector_branch' in sys.modules)\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT,
                          env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin", "HOME": "/nonexistent"})
    assert done.stdout.split() == ["TrfLoad", "False", "False"], done.stderr
