"""Every malformed VISA text raises VisaFormatError with a line, a column and a specific message."""

from __future__ import annotations

import pytest

from ir.errors import VisaFormatError
from tests.visa.test_text import SPEC_TEXT
from visa import VisaTextError, parse_visa


def _line_of(fragment: str) -> int:
    return next(i for i, line in enumerate(SPEC_TEXT.split("\n"), 1) if fragment in line)


def _col_of(fragment: str, within: str) -> int:
    line = SPEC_TEXT.split("\n")[_line_of(within) - 1]
    return line.index(fragment) + 1


# name -> (old, new, expected message fragment, (line, col) or None)
CASES = {
    "wrong version": ("visa 2", "visa 3", "version 3 is not supported", (1, 6)),
    "old version": ("visa 2", "visa 1", "version 1 is older than this reader", (1, 6)),
    "unknown op": ("= packet_reduce", "= packet_reduc", "unknown op `packet_reduc`", (21, 8)),
    "missing field": (" depth=6", "", "lacks field `depth`", (21, 40)),
    "extra field": (" depth=6", " depth=6 speed=1", "has no field `speed`", (21, 48)),
    "misordered fields": ("in_elems=64 depth=6", "depth=6 in_elems=64", "out of order", (21, 28)),
    "duplicate field": ("depth=6", "depth=6 depth=6", "given twice", (21, 48)),
    "bad enum": ("kind=HBM_TO_DM", "kind=HBM_TO_XX", "`HBM_TO_XX` is not a DmaKind", (12, 22)),
    "lower-case enum": ("region=FULL", "region=full", "`trf_load.region` is one of FULL", None),
    "bad dtype": ("element_type=i8", "element_type=i7", "unknown dtype `i7`", (12, 45)),
    "dangling ref": ("weights=%5", "weights=%55", "%55 is not defined", (20, 41)),
    "forward operand": ("stream=%6", "stream=%8", "%7 reads %8, which is defined later", (20, 3)),
    "defined twice": ("%9 = time", "%8 = time", "%8 is defined twice (first on line 21)", (22, 3)),
    "unterminated string": ('"M % 32, K"]', '"M % 32, K]', "unterminated string", (12, 256)),
    "record without types": (' : stream[i8, "N % 8, N / 8 % 4", "K"] -> stream[i8, "N % 8, N / 8 % 4, K / 32", "K % 32"]',
                             "", "a record ends with its types", (15, 279)),
    "missing output type": (' -> trf[i8, "N % 8", "N / 8 % 4, K"]', "", "missing `-> <output type>`", (16, 182)),
    "unknown type kind": ("-> trf[", "-> tref[", "unknown type kind `tref`", (16, 185)),
    "type arity": ('trf[i8, "N % 8", "N / 8 % 4, K"]', 'trf[i8, "N % 8"]', "takes one dtype and 2 mappings", (16, 185)),
    "bad mapping": ('"N % 32, K") conv', '"N % 33, K") conv', "`% 33` needs a divisor", (15, 56)),
    "int expected": ("lanes=8 bytes", "lanes=x bytes", "`trf_load.lanes` is an integer", (16, 67)),
    "value without %": ("src=%0", "src=0", "`dma.src` is a value `%n`", (12, 14)),
    "short loop entry": ("16:4096:8388608", "16:4096", "loop entries `size:src_stride:dst_stride`", (12, 149)),
    "tuple arity": ("part=(0, 0, 0)", "part=(0, 0)", "is a tuple (chip, cluster, dmn)", None),
    "struct field": ("packet_elems=128, read_elems=8", "read_elems=8", "lacks field `packet_elems`", None),
    "zero point missing": ("conversions=[] element_type=RawInt8 shapes=[{time=[8", "conversions=[ZP_SUB] "
                           "element_type=RawInt8 shapes=[{time=[8", "ZP_SUB needs zero point", None),
    "malformed loc": ("gemm_i8.py:13:11", "gemm_i8.py:13", "malformed location comment", (12, 269)),
    "program numbering": ("program 1 MAIN", "program 5 MAIN", "program 5 should be numbered 1", (18, 9)),
    "bad context": ("program 1 MAIN", "program 1 MAINX", "`MAINX` is not a TuContext", (18, 11)),
    "stream outside program": ('-> hbm[i32, "1", "M, N"] ;', '-> stream[i32, "1", "M, N"] ;',
                               "only written inside a program", (26, 274)),
    "dma inside program": None,
    "bad hash": ('sha256 "9d', 'sha256 "9D', "64 lowercase hexadecimal digits", (3, 22)),
    "return mismatch": ("return %12", "return %11", "must list the signature's results", (27, 8)),
    "missing cost counter": ("  mac_ops=131072\n", "", "the cost section lacks field `mac_ops`", (36, 3)),
    "unknown cost counter": ("  mac_ops=131072\n", "  mac_ops=131072\n  flops=1\n", "has no field `flops`", (37, 3)),
    "duplicate axis": ("K=128", "K=128, K=64", "axis K is declared twice", None),
    "axis size": ("K=128", "K=0", "sizes are >= 1", None),
    "param type": ('param %0 "a" : hbm[i8, "1", "M, K"]', 'param %0 "a" : dm[i8, "1", "1 # 2", "M / 32, N / 32", "M % 32, K"]',
                   "a resident DM parameter names its DM address", None),
    "param at": ('param %0 "a" : hbm[i8, "1", "M, K"]', 'param %0 "a" : hbm[i8, "1", "M, K"] at 0',
                 "only a resident DM parameter has an address", None),
    "result type": ('result %12 : hbm[i32, "1", "M, N"]', 'result %12 : hbm[i8, "1", "M, N"]',
                    "declared as another type", (9, 3)),
    "trf_load input kind": ('%5 = trf_load in=%4 element_type=RawInt8 cell_format=INT9 lanes=8 bytes_per_lane=512 '
                            'region=FULL base_row=0 collect_flits=Flit2 : stream', '%5 = trf_load in=%4 element_type='
                            'RawInt8 cell_format=INT9 lanes=8 bytes_per_lane=512 region=FULL base_row=0 collect_flits=Flit2 : trf',
                            "input_type must be a stream type", None),
}
CASES = {k: v for k, v in CASES.items() if v is not None}


@pytest.mark.parametrize("name", sorted(CASES))
def test_specific_messages_with_positions(name):
    old, new, fragment, where = CASES[name]
    assert old in SPEC_TEXT, name
    text = SPEC_TEXT.replace(old, new, 1)
    with pytest.raises(VisaFormatError) as info:
        parse_visa(text)
    e = info.value
    assert isinstance(e, VisaTextError)
    assert fragment in e.detail, e.detail
    assert isinstance(e.line, int) and isinstance(e.column, int) and e.line >= 1 and e.column >= 1
    if where is not None:
        assert (e.line, e.column) == where, str(e)
    assert str(e).startswith(f"line {e.line}, column {e.column}: ")
    assert e.code == "USAGE"


def test_message_quotes_the_line_with_a_caret():
    text = SPEC_TEXT.replace("= packet_reduce", "= packet_reduc")
    with pytest.raises(VisaTextError) as info:
        parse_visa(text)
    _, quoted, caret = str(info.value).split("\n")
    assert quoted == "  | " + text.split("\n")[20]
    assert caret == "  | " + " " * 7 + "^"


def test_dma_record_inside_a_program():
    dma = SPEC_TEXT.split("\n")[11]
    text = SPEC_TEXT.replace("program 0 SUB space \"1\", \"1 # 2\", \"M / 32, N / 32\" {\n",
                             "program 0 SUB space \"1\", \"1 # 2\", \"M / 32, N / 32\" {\n  "
                             + dma.replace("%2 =", "%40 =") + "\n", 1)
    with pytest.raises(VisaTextError, match="stands outside program blocks") as info:
        parse_visa(text)
    assert info.value.line == 15


def test_program_op_outside_a_program():
    text = SPEC_TEXT.replace("program 0 SUB space \"1\", \"1 # 2\", \"M / 32, N / 32\" {\n", "", 1)
    text = text.replace("}\nprogram 1", "program 1", 1)
    with pytest.raises(VisaTextError, match="belongs inside a program block"):
        parse_visa(text)


@pytest.mark.parametrize("cut", [0, 1, 9, 200, len(SPEC_TEXT) // 2, len(SPEC_TEXT) - 3])
def test_truncated_files(cut):
    with pytest.raises(VisaTextError, match="truncated|unexpected") as info:
        parse_visa(SPEC_TEXT[:cut])
    assert info.value.line >= 1


def test_truncated_at_a_line_end_names_the_end_of_file():
    text = SPEC_TEXT[:SPEC_TEXT.index("return")]
    with pytest.raises(VisaTextError, match=r"unexpected end of file \(the text is truncated\?\)") as info:
        parse_visa(text)
    assert (info.value.line, info.value.column) == (27, 1)


def test_not_a_string():
    with pytest.raises(VisaTextError, match="is a str"):
        parse_visa(SPEC_TEXT.encode())  # type: ignore[arg-type]


def test_unexpected_character_names_what_was_expected():
    with pytest.raises(VisaTextError, match=r"unexpected character '\?'") as info:
        parse_visa(SPEC_TEXT.replace("lanes=8 bytes", "lanes=? bytes", 1))
    assert (info.value.line, info.value.column) == (16, 67)


def test_bare_number_where_a_value_is_expected():
    with pytest.raises(VisaTextError, match="a value is written `%12`"):
        parse_visa(SPEC_TEXT.replace("return %12", "return 12"))
