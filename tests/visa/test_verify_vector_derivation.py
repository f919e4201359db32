"""The VISA verifier compares a Vector Engine pass record (`vector`, `vector_pair`,
`vector_branch` and their `_rf` forms) with the derivation the record declares (`with_derived`:
each reduce step's `vcg=`, each VRF tensor's `rf_read` walk), not with a re-run of the lowering.

A fault injected into one derived field of a lowered record (the record evolved, printed into
the artifact, parsed and verified) is refused. The `rf_read` faults below keep every walk's
cell counts and bounds, so every op verifier accepts them (VEOP-5 / VEOP-6, VPAIR-3): only the
declared derivation refuses them, and each test fails if the record stops declaring it.
A wrong `vcg=` is refused by VEOP-7 as well; there the test also checks that the record's own
derivation names the field."""

from __future__ import annotations

import attrs
import pytest

import npu_opt
from tests.kernel_files import example
from tests.parity import kernels_padded_split as padded
from tests.vector_pair.test_pair_vrf import FXP_CLIP
from tu_ops import BUILTIN_TARGETS, rngd
from tu_ops.base import Entry
from visa.artifact import FORMAT_CODE, VisaTextError
from visa.parser import parse_visa
from visa.relower import first_difference
from visa.verify import verify_text


def _record(text: str, mnemonic: str):
    """The first record `mnemonic` of the artifact `text`, as parsed."""
    kernel = parse_visa(text).kernel
    return next(op for p in kernel.programs() for op in p.ops if op.MNEMONIC == mnemonic)


def _injected(text: str, rec, faulty) -> str:
    """The artifact with `rec` printed as `faulty`."""
    assert faulty.text() != rec.text() and text.count(rec.text()) == 1
    return text.replace(rec.text(), faulty.text())


def _narrowed(walk):
    """The walk with its first non-zero stride made 0: the same cells counted, inside the same
    words, but not the walk of the tensor's element the types give."""
    levels = {"time": list(walk.time), "packet": list(walk.packet)}
    for name, entries in levels.items():
        for k, e in enumerate(entries):
            if e.stride:
                entries[k] = Entry(e.size, 0)
                return attrs.evolve(walk, **{name: tuple(entries)})
    raise AssertionError(f"a walk without a stride: {walk}")


RF_CASES = {
    "vector_rf": (lambda: npu_opt.compile(example("rmsnorm_kernel")).text, None),
    "vector_pair_rf": (lambda: npu_opt.compile(FXP_CLIP).text, rngd),
    "vector_branch_rf": (lambda: npu_opt.compile(example("masked_softmax_kernel")).text, None),
}


@pytest.mark.parametrize("mnemonic", sorted(RF_CASES))
def test_a_wrong_rf_read_walk_is_refused(mnemonic: str) -> None:
    compiled, target = RF_CASES[mnemonic]
    text = compiled()
    verify_text(text, target and target())  # the faultless artifact verifies
    rec = _record(text, mnemonic)
    faulty = attrs.evolve(rec, rf_read=(_narrowed(rec.rf_read[0]), *rec.rf_read[1:]))
    assert faulty.first_failure(target() if target else _builtin(text)) is None  # every op rule accepts it
    with pytest.raises(VisaTextError, match="disagrees with the record's types") as e:
        verify_text(_injected(text, rec, faulty), target and target())
    assert e.value.code == FORMAT_CODE and e.value.rule is None
    assert f"{mnemonic} field rf_read[0]." in e.value.detail


def _builtin(text: str):
    return BUILTIN_TARGETS[parse_visa(text).target]()


def test_a_wrong_vcg_is_refused_and_the_record_derives_it() -> None:
    text = npu_opt.compile(padded.padded_split_sum).text
    verify_text(text)
    rec = _record(text, "vector")
    k = next(i for i, s in enumerate(rec.steps) if s.vcg is not None)
    faulty = attrs.evolve(rec, steps=tuple(attrs.evolve(s, vcg=None) if i == k else s
                                           for i, s in enumerate(rec.steps)))
    with pytest.raises(VisaTextError) as e:
        verify_text(_injected(text, rec, faulty))
    assert e.value.code == "VEOP-7"
    path, found, want = first_difference(faulty, faulty.derived(None))  # `vector` derives from itself alone
    assert (path, found, want) == (f"steps[{k}].vcg", None, rec.steps[k].vcg)
    assert first_difference(rec, rec.derived(None)) is None
