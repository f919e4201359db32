"""tu_ops/feed_fields.py: the destination kinds are what the record classes declare
(`FEED_DEST`), nothing is kept beside them, and a feed's verifier finds the class of a kind
without loading the other record modules."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import tu_ops
from tu_ops.feed_fields import DestKind

ROOT = Path(__file__).resolve().parents[2]


def test_the_kinds_are_the_classes_declarations() -> None:
    declared = {vars(c)["FEED_DEST"]: c for c in tu_ops.OP_CLASSES if vars(c).get("FEED_DEST") is not None}
    assert {kind.name: kind.op_class for kind in DestKind} == declared
    for kind in DestKind:
        assert kind.op_class is declared[kind.name] and DestKind[kind.name] is kind
        assert DestKind.of(kind.op_class) is kind and str(kind) == kind.name
    assert DestKind.CAST.op_class.MNEMONIC == "cast_op"  # a kind's name need not be its mnemonic


def test_one_destination_loads_one_module() -> None:
    code = ("import sys\nfrom tu_ops.trf import TrfLoad\nfrom tu_ops.feed import DestKind\n"
            "print(DestKind.TRF_LOAD.op_class.__name__, 'tu_ops.vector_pair' in sys.modules,"
            " 'tu_ops.vector_branch' in sys.modules)\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT,
                          env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin", "HOME": "/nonexistent"})
    assert done.stdout.split() == ["TrfLoad", "False", "False"], done.stderr
