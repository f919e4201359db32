"""`verify_artifact` / `verify_text` (`npu-opt visa --verify`): op verifiers and re-derivations."""

from __future__ import annotations

import functools

import attrs
import pytest

from ir.errors import VisaFormatError
from npu_opt.compile_api import compile_kernel
from driver.discover import discover
from tests.kernel_files import EXAMPLES_DIR
from tests.tu_ops.builders import gemm
from tests.visa import test_fault_injection as fi
from tests.visa.samples import example_4b
from tests.visa.test_text import SPEC_TEXT
from tu_ops import WritePlan, rngd
from tu_ops.target import get_target
from visa import VisaTextError, parse_visa, print_visa
from visa.verify import verify_artifact, verify_text


def _fails(text: str, fragment: str, line: int, column: int, code: str = "USAGE") -> VisaTextError:
    with pytest.raises(VisaFormatError) as info:
        verify_text(text)
    e = info.value
    assert fragment in e.detail, e.detail
    assert (e.line, e.column, e.code) == (line, column, code), str(e)
    return e


def test_examples_verify():
    assert verify_text(SPEC_TEXT) == parse_visa(SPEC_TEXT)
    verify_artifact(parse_visa(print_visa(example_4b(), rngd())), rngd())
    verify_text(print_visa(example_4b(), rngd(), locs=False), rngd())


def test_op_verifier_failure_names_the_record_line_and_rule():
    e = _fails(SPEC_TEXT.replace("beats=64", "beats=65"), "[FEED-3] feed_buffer: beats 65", 15, 3, "FEED-3")
    assert e.rule == "FEED-3"


def test_dma_verifier_failure():
    _fails(SPEC_TEXT.replace("aggregate=HOMOGENEOUS", "aggregate=HETEROGENEOUS", 1), "[DMAOP-2]", 12, 1, "DMAOP-2")


def test_memory_rule_names_the_step():
    text = SPEC_TEXT.replace("bytes_per_lane=512", "bytes_per_lane=8192").replace("trf_load_bytes=4096", "trf_load_bytes=65536")
    with pytest.raises(VisaTextError) as info:
        verify_text(text)
    assert info.value.line == 16  # the trf_load (TRFLD-3 refuses the oversized load first)


def test_dm_address_is_re_derived():
    _fails(SPEC_TEXT.replace("dst_base=4096, packet", "dst_base=8192, packet"),
           "placed at DM byte 8192; the DM allocation places it at 4096", 13, 1)


def test_commit_address_is_re_derived():
    text = SPEC_TEXT.replace("dest=4096", "dest=8192").replace("src_base=4096", "src_base=8192")
    text = text.replace("dm_peak_bytes=8192", "dm_peak_bytes=12288")
    _fails(text, "places it at 4096", 24, 3)


def test_trf_base_row_is_re_derived():
    _fails(SPEC_TEXT.replace("base_row=0", "base_row=2"), "base_row 2; the TRF allocation places this tensor at row 0", 16, 3)


def test_cost_counters_are_re_derived():
    _fails(SPEC_TEXT.replace("feed_flits=640", "feed_flits=641"), "cost feed_flits=641, but the records give 640", 32, 3)
    _fails(SPEC_TEXT.replace("dm_peak_bytes=8192", "dm_peak_bytes=4096"), "dm_peak_bytes=4096", 37, 3)


def test_feed_source_must_match_its_tensor():
    """A source of another size is neither a window of the tensor nor a reshape of it (a
    same-size relabel is a reshaped view: tests/visa/test_verify_reshape.py)."""
    text = SPEC_TEXT.replace('source=(%3, 0, i8, "N % 32, K")', 'source=(%3, 0, i8, "K, N % 16")')
    _fails(text, "source mapping \"K, N % 16\", but %3's element is \"N % 32, K\"", 15, 3)


def test_dma_bytes_must_cover_the_tensor():
    text = SPEC_TEXT.replace("16:0:524288, 4096:1:1", "8:0:524288, 4096:1:1").replace("dma_bytes=3145728", "dma_bytes=2621440")
    _fails(text, "the commands move 524288 bytes; the tensor's live cells are 1048576 bytes", 12, 1)


def test_dma_partitions_must_be_the_live_clusters():
    text = SPEC_TEXT.replace("part=(0, 0, 0), src_base=0, dst_base=4096", "part=(0, 1, 0), src_base=0, dst_base=4096")
    with pytest.raises(VisaTextError) as info:
        verify_text(text)
    assert info.value.line == 13


def test_commit_write_bytes_is_re_derived():
    _fails(SPEC_TEXT.replace("write_bytes=32", "write_bytes=16"), "write_bytes 16; the write plan gives 32", 24, 3)


def test_in_program_dm_type_uses_the_program_space():
    line = SPEC_TEXT.split("\n")[23]
    bad = line.replace('-> dm[i32, "1", "1 # 2", "M / 32, N / 32"', '-> dm[i32, "1", "1 # 2", "N / 32, M / 32"')
    _fails(SPEC_TEXT.replace(line, bad), "differ from the program's space", 24, 3)


def test_target_must_match():
    custom = attrs.evolve(rngd(), name="custom", file_sha256="0" * 64)
    with pytest.raises(VisaTextError, match="built for target `rngd`") as info:
        verify_artifact(parse_visa(SPEC_TEXT), custom, source=SPEC_TEXT)
    assert info.value.line == 3


def test_unknown_target_name():
    text = SPEC_TEXT.replace('target "rngd"', 'target "nosuch"')
    with pytest.raises(VisaTextError, match="`nosuch` is not a built-in target") as info:
        verify_text(text)
    assert (info.value.line, info.value.column) == (3, 8)
    verify_text(text.replace('"nosuch"', '"rngd"'), rngd())


# --- re-derivation of every field from the record's types (visa/visa.lark) ------------------


# The corruptions of test_fault_injection that change the computed result yet passed every op
# verifier: each is now refused at its record, naming the field that disagrees with the types.
REDERIVED = {
    "feed-time-stride": "shapes[0].time",
    "feed-bcast-stride": "shapes[0].time",
    "weight-feed-stride": "shapes[0].time",
    "feed-offset": "source.offset",
    "dma-src-stride": "commands[0].entries",
    "dma-dst-stride": "commands[0].entries",
    "dma-broadcast-axis": "commands[0].entries",
    "dma-out-stride": "commands[0].entries",
    "walk-stride": "trf_read.entries",
    "walk-broadcast": "trf_read.entries",
    "walk-transposed": "trf_read.entries",
    "tree-depth": "depth",
    "write-permuted": "write.time",
}
_CORRUPTIONS = {case: corrupt for case, corrupt, _ in fi.CASES}

# Uncoalesced entries equivalent to the canonical ones (same traversal, same result): the op
# verifiers accept them, but the lowering never prints them, so the text is not canonical.
NON_CANONICAL = {
    "feed-time": (fi.edit(4, lambda op: fi.shape(op, time=[(8, 128), (2, 2048), (2, 1024)])), "shapes[0].time",
                  "[8:128, 4:1024]"),
    "feed-packet": (fi.edit(6, lambda op: fi.shape(op, packet=[(2, 64), (64, 1)])), "shapes[0].packet", "[128:1]"),
    "dma": (fi.edit(2, lambda op: fi.entries(op, (4, 16384, 33554432), (4, 4096, 8388608), (16, 0, 524288),
                                              (4096, 1, 1))),
            "commands[0].entries", "[16:4096:8388608, 16:0:524288, 4096:1:1]"),
    "trf-walk": (fi.edit(7, lambda op: fi.walk(op, (4, 0), (8, 0), (8, 1))), "trf_read.entries", "[32:0, 8:1]"),
    "write-plan": (fi.edit(11, lambda op: attrs.evolve(op, write=WritePlan(time=[(4, 256), (32, 8)], packet=[(8, 1)]))),
                   "write.time", "[128:8]"),
}


def _record_at(text: str, n: int) -> tuple[int, int]:
    """(line, column) of record `%n` in a printed artifact."""
    for i, line in enumerate(text.split("\n"), 1):
        if line.lstrip().startswith(f"%{n} = "):
            return i, len(line) - len(line.lstrip()) + 1
    raise AssertionError(f"%{n} not in the text")


def _refused_at_field(kernel, field: str) -> VisaTextError:
    text = print_visa(kernel, rngd())
    with pytest.raises(VisaFormatError) as info:
        verify_text(text)
    e = info.value
    assert f"field {field}=" in e.detail and f"which give {field}=" in e.detail, e.detail
    assert e.code == "USAGE" and e.rule is None, str(e)
    return e


def test_rederivation_cases_are_the_fault_injection_ones():
    assert set(REDERIVED) <= set(_CORRUPTIONS)


@pytest.mark.parametrize("case", sorted(REDERIVED))
def test_a_field_that_disagrees_with_the_types_is_refused(case):
    corrupt = _CORRUPTIONS[case]
    kernel = corrupt(gemm("i8"))
    kernel.verify(rngd())  # every op verifier accepts it: only the re-derivation refuses
    e = _refused_at_field(kernel, REDERIVED[case])
    original = {op.result.id: op for op in gemm("i8").ops()}
    (changed,) = [op for op in kernel.ops() if op != original[op.result.id]]
    assert (e.line, e.column) == _record_at(print_visa(kernel, rngd()), changed.result.id), str(e)


def test_the_message_gives_the_found_and_the_expected_value():
    e = _refused_at_field(_CORRUPTIONS["walk-stride"](gemm("i8")), "trf_read.entries")
    assert "contract_outer field trf_read.entries=[32:0, 8:2] disagrees with the record's types, which give " \
           "trf_read.entries=[32:0, 8:1]" in e.detail
    e = _refused_at_field(_CORRUPTIONS["feed-offset"](gemm("i8")), "source.offset")
    assert "source.offset=32" in e.detail and "source.offset=0" in e.detail
    e = _refused_at_field(_CORRUPTIONS["tree-depth"](gemm("i8")), "depth")
    assert "packet_reduce field depth=5" in e.detail and "which give depth=6" in e.detail


def test_spec_text_corruptions_are_refused_at_their_line():
    _fails(SPEC_TEXT.replace("time=[32:128, 4:0]", "time=[32:64, 4:0]"),
           "feed_buffer field shapes[0].time=[32:64, 4:0] disagrees with the record's types, which give "
           "shapes[0].time=[32:128, 4:0]", 19, 3)
    _fails(SPEC_TEXT.replace("depth=6", "depth=5"), "packet_reduce field depth=5", 21, 3)
    _fails(SPEC_TEXT.replace("write={time=[128:8]", "write={time=[4:256, 32:8]"), "commit field write.time=", 24, 3)
    _fails(SPEC_TEXT.replace("32:128:2048, 128:1:1", "32:128:1024, 128:1:1"), "dma field commands[0].entries=", 26, 1)


@pytest.mark.parametrize("case", sorted(NON_CANONICAL))
def test_non_canonical_equivalent_entries_are_refused(case):
    corrupt, field, canonical = NON_CANONICAL[case]
    kernel = corrupt(gemm("i8"))
    assert kernel != gemm("i8")
    kernel.verify(rngd())
    e = _refused_at_field(kernel, field)
    assert f"which give {field}={canonical}" in e.detail, e.detail


@functools.cache
def _example_kernels():
    found = discover([str(EXAMPLES_DIR)])
    assert not found.errors and found.kernels
    return {k.name: k for k in found.kernels}


@pytest.mark.parametrize("name", sorted(_example_kernels()))
def test_every_compiled_example_verifies(name):
    outcome = compile_kernel(_example_kernels()[name])
    assert outcome.status == "ok", outcome.diagnostics
    artifact = verify_text(outcome.text)
    target = get_target(artifact.target)   # rngd, or rngd-2chip for a two-chip example
    verify_artifact(parse_visa(outcome.text), target, source=outcome.text)
    assert parse_visa(outcome.text) == artifact
