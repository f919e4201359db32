"""Begin, Fetch and Fetch Adapter rules (docs/machine/fetch.md) and the fetch read plan.

Fixtures R2, R14, R16, R18-R20 (tests/fixtures/) and the valid examples (examples/) are
loaded from their files by tests/kernel_files.py; the other rule IDs use small kernels or
hand-built ops.
"""

from __future__ import annotations

import pytest

from ir import ops
from ir.dtypes import DType
from ir.mapping import m
from ir.mapping.ops import Entry
from ir.rules.fetch import (
    check_begin, check_fetch, check_fetch_cast, check_table_lookup, check_zero_point_sub, frag_text, unread_fragments,
)
from ir.rules.read_plan import ReadPlan, fetch_read_plan
from ir.types import DmType, StreamType
from npu_opt import *  # noqa: F403 - the kernel DSL
from tests import kernel_files as kf

axes(A=8, B=64, E=32, X=1024, Y=262144, Q=20, Z=15)  # noqa: F405

MY_STAGES = frozenset({"begin", "fetch", "fetch_table_lookup", "fetch_cast", "fetch_zero_point_sub"})
MY_OPS = (ops.Begin, ops.Fetch, ops.FetchTableLookup, ops.FetchCast, ops.FetchZeroPointSub)


def E(*pairs: tuple[int, int]) -> tuple[Entry, ...]:
    return tuple(Entry(n, s) for n, s in pairs)


# --- hand-built ops -------------------------------------------------------------------------

ONE, CLUSTER, SLICE = m("1"), m("1 # 2"), m("1 # 256")


def stream(dtype: DType, time: str, packet: str, context: str = "main", slice_: str = "1 # 256") -> StreamType:
    return StreamType(dtype, ONE, CLUSTER, m(slice_), m(time), m(packet), context)


def fetch_op(dm_element: str, time: str, packet: str, dtype: DType = DType.I8, context: str = "main",
             slice_: str = "1 # 256") -> ops.Fetch:
    src = stream(dtype, "1", dm_element, context, slice_)
    out = stream(dtype, time, packet, context, slice_)
    return ops.Fetch(input=ops.Value(0, src), time=m(time), packet=m(packet), result=ops.Value(1, out))


def adapter(cls: type, src_dtype: DType, dtype: DType, context: str = "main", **extra) -> ops.Op:
    src = stream(src_dtype, "A", "E", context)
    out = stream(dtype, "A", "E", context)
    return cls(input=ops.Value(0, src), dtype=dtype, result=ops.Value(1, out), **extra)


def code(v) -> str | None:
    return None if v is None else v.code


# --- the valid examples (examples/dot_product.py, 4b) -----------------------------------------------


@pytest.mark.parametrize("name", kf.example_names())
def test_valid_examples_pass_fetch_rules(name: str) -> None:
    result = kf.example(name).trace()
    assert [d.code for d in result.diagnostics if d.stage in MY_STAGES] == []
    checked = [op for op in result.kernel.ops if isinstance(op, MY_OPS)]
    assert checked and all(op.check() is None for op in checked)


# --- the refusal fixtures of docs/reference/diagnostics.md ---------------------------------------------------

FIXTURES = [
    ("r02_i8_to_bf16", "FCAST-1", ["i8 -> bf16"], "legal fetch_cast targets for i8 are i8, i32"),
    ("r14_partial_fetch", "FETCH-3", ["K / 64"], "K / 64"),
    ("r16_fetch_digit_twice", "FETCH-7", ["B / 32", "Slice"], "drop `B / 32`"),
    ("r18_sub_i4_widen", "FETCH-9", ["i4 -> i32", "8x"], "ctx.main"),
    ("r19_sub_short_read", "FETCH-8", ["8 bytes"], "8 contiguous i8"),
    ("r20_i4_strided_packet", "FETCH-10", ["contiguous"], "even count"),
]


@pytest.mark.parametrize(("name", "rule", "words", "hint"), FIXTURES)
def test_refusal_fixtures(name: str, rule: str, words: list[str], hint: str) -> None:
    fixture = kf.fixture(name)
    (d,) = fixture.trace().diagnostics  # the first and only diagnostic
    assert d.code == rule
    assert d.line == kf.marked_line(fixture)
    for word in words:
        assert word in d.message
    assert hint in d.help


def test_fixture_labels_name_the_numbers() -> None:
    (r19,) = kf.fixture("r19_sub_short_read").trace().diagnostics
    assert "2 x i8 = 2 bytes" in r19.notes[0]
    (r20,) = kf.fixture("r20_i4_strided_packet").trace().diagnostics
    assert "[16 : 2]" in r20.notes[0] and "nibbles 2 apart" in r20.notes[0]
    (r18,) = kf.fixture("r18_sub_i4_widen").trace().diagnostics
    assert "64 bytes" in r18.notes[0]


OTHER_FIXTURES = sorted(set(kf.fixture_names()) - {name for name, *_ in FIXTURES})


@pytest.mark.parametrize("name", OTHER_FIXTURES)
def test_other_fixtures_pass_fetch_rules(name: str) -> None:
    """Fixtures of other rules are not refused by begin, fetch or an adapter."""
    result = kf.fixture(name).trace()
    assert [d.code for d in result.diagnostics if d.stage in MY_STAGES] == []


# --- read plans (docs/machine/fetch.md) --------------------------------------------------------------


def _fetches(name: str) -> list[ops.Fetch]:
    return [op for op in kf.example(name).trace().kernel.ops if isinstance(op, ops.Fetch)]


def test_read_plan_gemm_main_fetch_broadcasts() -> None:
    """examples/gemm.py: the main fetch re-reads each `a` row 4 times."""
    sub, main = _fetches("gemm_kernel")
    plan = fetch_read_plan(main.input.type, main.time, main.packet)
    assert str(plan) == "[32 : 64, 4 : 0 | 64 : 1]"
    assert plan == ReadPlan(E((32, 64), (4, 0)), E((64, 1)))
    assert str(fetch_read_plan(sub.input.type, sub.time, sub.packet)) == "[8 : 64, 4 : 512 | 64 : 1]"


def test_read_plan_example_4_weights() -> None:
    w, a = _fetches("gemm_i8_kernel")
    plan = fetch_read_plan(w.input.type, w.time, w.packet)
    assert plan.time_entries == E((8, 128), (4, 1024)) and plan.packet_entries == E((128, 1))
    assert plan.packet_elems == 128 and plan.innermost_packet == Entry(128, 1)
    assert fetch_read_plan(a.input.type, a.time, a.packet) == ReadPlan(E((32, 128), (4, 0)), E((128, 1)))


def test_read_plan_small_cases() -> None:
    sub, _ = _fetches("dot_product_kernel")
    assert str(fetch_read_plan(sub.input.type, sub.time, sub.packet)) == "[| 2048 : 1]"
    (f,) = _fetches("fetch_commit_simple")  # A / 8 % 2 in time, (A % 8, B) in the packet: one run
    assert fetch_read_plan(f.input.type, f.time, f.packet) == ReadPlan(E((2, 64)), E((64, 1)))
    assert ReadPlan(E((3, 1)), ()).innermost_packet == Entry(1, 1)
    assert str(ReadPlan(E((3, 1)), ())) == "[3 : 1 |]"


def test_read_plan_refused_placement_is_none() -> None:
    op = fetch_op("Z % 5, Z / 5", "Z % 3", "Z / 3")
    assert fetch_read_plan(op.input.type, op.time, op.packet) is None


# --- begin (docs/machine/fetch.md) ------------------------------------------------------------------


def _begin(dtype: DType = DType.I8, cluster: str = "1 # 2", slice_: str = "1 # 256") -> ops.Begin:
    dm = DmType(dtype, ONE, m(cluster), m(slice_), m("A, E"))
    return ops.Begin(view=ops.Value(0, dm), context="main",
                     result=ops.Value(1, StreamType(dtype, ONE, m(cluster), m(slice_), ONE, m("A, E"))))


def test_begin_rules() -> None:
    assert check_begin(_begin()) is None
    assert code(check_begin(_begin(DType.I9))) == "TYPE-3"
    assert code(check_begin(_begin(cluster="1 # 4"))) == "SPACE-2"
    assert code(check_begin(_begin(slice_="1 # 32"))) == "SPACE-3"


# --- FETCH-1 .. FETCH-10 on hand-built ops ----------------------------------------------------


def test_fetch_1_overshooting_time() -> None:
    v = check_fetch(fetch_op("X", "X, X", "1"))
    assert code(v) == "FETCH-1" and "(X, X)" in v.message


def test_fetch_1_space_of_the_stream() -> None:
    v = check_fetch(fetch_op("A, E", "A", "E", slice_="1 # 32"))
    assert code(v) == "FETCH-1" and "SPACE-3" in v.notes[0]


def test_fetch_2_no_common_refinement() -> None:
    """docs/machine/fetch.md: input `A % 5, A / 5` read as `A % 3, A / 3` is refused."""
    v = check_fetch(fetch_op("Z % 5, Z / 5", "Z % 3", "Z / 3"))
    assert code(v) == "FETCH-2" and "common refinement" in v.label


def test_fetch_2_ragged_piece_split_across_levels() -> None:
    """docs/machine/index.md: `K # 32 / 8` / `K # 32 % 8` over a DM `K = 20` is refused; the whole
    `K # 32` as the packet is a padded over-read and passes."""
    assert code(check_fetch(fetch_op("Q", "Q # 32 / 8", "Q # 32 % 8", DType.BF16))) == "FETCH-2"
    assert check_fetch(fetch_op("Q", "1", "Q # 32", DType.BF16)) is None


def test_fetch_2_broadcast_of_missing_digits_passes() -> None:
    """A fragment disjoint from every input digit (§0.5's `N / 512` over `N % 512`) is a broadcast."""
    op = fetch_op("X % 512", "X / 512", "X % 512")
    assert check_fetch(op) is None
    assert fetch_read_plan(op.input.type, op.time, op.packet) == ReadPlan(E((2, 0)), E((512, 1)))


def test_fetch_3_unread_part() -> None:
    v = check_fetch(fetch_op("A, E", "A % 4", "E"))
    assert code(v) == "FETCH-3" and "`A / 4`" in v.message
    assert unread_fragments((m("1"), m("X")), (m("X % 8"), m("X / 16"))) != ()
    assert unread_fragments((m("1"), m("X")), (m("X / 8"), m("X % 8"))) == ()


def test_fetch_4_too_many_entries() -> None:
    digits = ", ".join(["X % 2"] + [f"X / {2 ** k} % 2" for k in range(1, 9)])  # 9 reversed digits
    v = check_fetch(fetch_op("X", digits, "X / 512"))
    assert code(v) == "FETCH-4" and "10 sequencer entries" in v.message
    # the same digits in DM order coalesce into one entry
    assert check_fetch(fetch_op("X", "X / 2", "X % 2")) is None


def test_fetch_5_entry_too_long() -> None:
    v = check_fetch(fetch_op("Y", "Y / 2", "Y % 2"))
    assert code(v) == "FETCH-5" and "131072" in v.message


def test_fetch_6_half_byte_packet() -> None:
    assert check_fetch(fetch_op("Q", "Q / 4", "Q % 4", DType.I4)) is None  # 4 x i4 = 2 bytes
    v = check_fetch(fetch_op("Q", "Q / 5", "Q % 5", DType.I4))
    assert code(v) == "FETCH-6" and "5 x i4 = 2.5 bytes" in v.label


def test_fetch_7_digit_placed_twice() -> None:
    v = check_fetch(fetch_op("A, E", "A, B / 32", "E", slice_="B"))
    assert code(v) == "FETCH-7" and "B / 32" in v.message


def test_fetch_8_sub_reads() -> None:
    assert check_fetch(fetch_op("X", "X / 8", "X % 8", context="sub")) is None  # 8 bytes
    assert check_fetch(fetch_op("X", "X / 16", "X % 16", DType.I4, context="sub")) is None
    assert code(check_fetch(fetch_op("X", "X", "1", context="sub"))) == "FETCH-8"  # size-1 packet
    assert code(check_fetch(fetch_op("X", "X / 8", "X % 8, 4", context="sub"))) == "FETCH-8"
    assert code(check_fetch(fetch_op("X", "X % 8", "X / 8", context="sub"))) == "FETCH-8"  # stride 8
    assert code(check_fetch(fetch_op("X", "X / 8", "X % 8, 8", context="sub"))) is None  # 8 : 0
    assert check_fetch(fetch_op("X", "X / 2", "X % 2")) is None  # main: any read


def test_fetch_10_four_bit_reads() -> None:
    assert check_fetch(fetch_op("X", "X / 2", "X % 2", DType.I4)) is None
    assert code(check_fetch(fetch_op("X", "X", "1", DType.F4E2M1))) == "FETCH-6"
    assert code(check_fetch(fetch_op("X", "X % 2", "X / 2", DType.I4))) == "FETCH-10"  # stride 2
    assert code(check_fetch(fetch_op("X", "X / 2", "X % 2, 2", DType.I4))) == "FETCH-10"  # broadcast


# --- the fetch adapter (docs/machine/fetch-adapter.md) --------------------------------------------------------


def test_flut_1_and_ctx_3() -> None:
    assert check_table_lookup(adapter(ops.FetchTableLookup, DType.F8E4M3, DType.BF16)) is None
    assert check_table_lookup(adapter(ops.FetchTableLookup, DType.F4E2M1, DType.F8E5M2)) is None
    v = check_table_lookup(adapter(ops.FetchTableLookup, DType.F8E4M3, DType.F32))
    assert code(v) == "FLUT-1" and "bf16" in v.help and "fetch_cast" in v.help
    v = check_table_lookup(adapter(ops.FetchTableLookup, DType.F8E4M3, DType.BF16, "sub"))
    assert code(v) == "CTX-3"
    # FLUT-1 is listed first (docs/machine/fetch-adapter.md)
    assert code(check_table_lookup(adapter(ops.FetchTableLookup, DType.I8, DType.BF16, "sub"))) == "FLUT-1"


@pytest.mark.parametrize(("src", "dst", "ok"), [
    (DType.I8, DType.I8, True), (DType.BF16, DType.BF16, True), (DType.I8, DType.I32, True),
    (DType.I4, DType.I32, True), (DType.F32, DType.BF16, True), (DType.F8E5M2, DType.F32, True),
    (DType.I8, DType.BF16, False), (DType.F8E4M3, DType.BF16, False), (DType.F32, DType.F8E4M3, False),
    (DType.I8, DType.I9, False), (DType.I32, DType.I8, False),
])
def test_fcast_1_table(src: DType, dst: DType, ok: bool) -> None:
    v = check_fetch_cast(adapter(ops.FetchCast, src, dst))
    assert (v is None) == ok
    if not ok:
        assert v.code == "FCAST-1"


def test_fcast_1_help_points_elsewhere() -> None:
    assert "fetch_table_lookup(bf16)" in check_fetch_cast(adapter(ops.FetchCast, DType.F8E4M3, DType.BF16)).help
    assert ".cast(" in check_fetch_cast(adapter(ops.FetchCast, DType.F32, DType.F8E4M3)).help


def test_fetch_9_sub_widening_ratio() -> None:
    assert check_fetch_cast(adapter(ops.FetchCast, DType.I8, DType.I32, "sub")) is None  # ratio 4
    assert check_fetch_cast(adapter(ops.FetchCast, DType.I4, DType.I32, "main")) is None
    v = check_fetch_cast(adapter(ops.FetchCast, DType.I4, DType.I32, "sub"))
    assert code(v) == "FETCH-9" and "8x" in v.message


def test_fzps_rules() -> None:
    zps = ops.FetchZeroPointSub
    assert check_zero_point_sub(adapter(zps, DType.I8, DType.I9, zero_point=-128)) is None
    assert check_zero_point_sub(adapter(zps, DType.I4, DType.I5, zero_point=7)) is None
    v = check_zero_point_sub(adapter(zps, DType.I8, DType.I5, zero_point=0))
    assert code(v) == "FZPS-1" and "fetch_zero_point_sub(i9" in v.help
    v = check_zero_point_sub(adapter(zps, DType.I4, DType.I5, zero_point=8))
    assert code(v) == "FZPS-2" and "[-8, 7]" in v.message
    assert code(check_zero_point_sub(adapter(zps, DType.I8, DType.I9, zero_point=128))) == "FZPS-2"


# --- the same rules through the DSL ---------------------------------------------------------

Chip = m("1")
Cluster = m("1 # 2")
Slice = m("1 # 256")


@device(chip=1)  # noqa: F405
def lookup_in_sub(ctx: Context, x: HbmTensor[f8e4m3, Chip, m("A, E")]) -> None:  # noqa: F405
    x = x.to_dm(ctx.tdma, DmTensor[f8e4m3, Chip, Cluster, Slice, m("A, E")])  # noqa: F405
    (ctx.sub.begin(x.view())
     .fetch(m("A"), m("E"))
     .fetch_table_lookup(bf16)  # noqa: F405
     .collect(m("A, E / 16"), m("E % 16"))
     .commit_trim(m("E % 16"))
     .commit())


@device(chip=1)  # noqa: F405
def zero_point_too_big(ctx: Context, x: HbmTensor[i8, Chip, m("A, E")]) -> None:  # noqa: F405
    x = x.to_dm(ctx.tdma, DmTensor[i8, Chip, Cluster, Slice, m("A, E")])  # noqa: F405
    (ctx.main.begin(x.view())
     .fetch(m("A"), m("E"))
     .fetch_zero_point_sub(i9, 200)  # noqa: F405
     .collect(m("A"), m("E"))
     .commit_trim(m("E")))


@device(chip=1)  # noqa: F405
def lookup_then_cast(ctx: Context, x: HbmTensor[f4e2m1, Chip, m("A, B")]) -> None:  # noqa: F405
    x = x.to_dm(ctx.tdma, DmTensor[f4e2m1, Chip, Cluster, Slice, m("A, B")])  # noqa: F405
    (ctx.main.begin(x.view())
     .fetch(m("A"), m("B"))
     .fetch_table_lookup(f8e4m3)  # noqa: F405
     .fetch_cast(f32)  # noqa: F405
     .collect(m("A, B / 8"), m("B % 8"))
     .commit_trim(m("B % 8"))
     .commit())


def test_dsl_adapter_refusals() -> None:
    assert [(d.code, d.stage) for d in lookup_in_sub.trace().diagnostics] == [("CTX-3", "fetch_table_lookup")]
    assert [(d.code, d.stage) for d in zero_point_too_big.trace().diagnostics] == [("FZPS-2", "fetch_zero_point_sub")]
    assert [d.code for d in lookup_then_cast.trace().diagnostics] == []


def test_frag_text() -> None:
    from ir.mapping.ops import DigitRange

    assert frag_text(DigitRange("K", 64, 128), 128) == "K / 64"
    assert frag_text(DigitRange("J", 1, 8), 512) == "J % 8"
    assert frag_text(DigitRange("J", 8, 32), 512) == "J / 8 % 4"
    assert frag_text(DigitRange("B", 1, 64), 64) == "B"
