"""`verify_artifact` / `verify_text` (`npu-opt visa --verify`): op verifiers and re-derivations."""

from __future__ import annotations

import attrs
import pytest

from ir.errors import VisaFormatError
from tests.visa.samples import example_4b
from tests.visa.test_text import SPEC_TEXT
from tu_ops import rngd
from visa import VisaTextError, parse_visa, print_visa, verify_artifact, verify_text


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
           "placed at DM byte 8192; artifacts.md 1.2 places it at 4096", 13, 1)


def test_commit_address_is_re_derived():
    text = SPEC_TEXT.replace("dest=4096", "dest=8192").replace("src_base=4096", "src_base=8192")
    text = text.replace("dm_peak_bytes=8192", "dm_peak_bytes=12288")
    _fails(text, "places it at 4096", 24, 3)


def test_trf_base_row_is_re_derived():
    _fails(SPEC_TEXT.replace("base_row=0", "base_row=2"), "base_row 2; artifacts.md 1.2 places this tensor at row 0", 16, 3)


def test_cost_counters_are_re_derived():
    _fails(SPEC_TEXT.replace("feed_flits=640", "feed_flits=641"), "cost feed_flits=641, but the records give 640", 32, 3)
    _fails(SPEC_TEXT.replace("dm_peak_bytes=8192", "dm_peak_bytes=4096"), "dm_peak_bytes=4096", 37, 3)


def test_feed_source_must_match_its_tensor():
    text = SPEC_TEXT.replace('source=(%3, 0, i8, "N % 32, K")', 'source=(%3, 0, i8, "K, N % 32")')
    _fails(text, "source mapping \"K, N % 32\", but %3's element is \"N % 32, K\"", 15, 3)


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
