"""Cast and Commit rules (docs/machine/commit.md): CAST-1..4, TRIM-1..2, CTX-4, CCAST-1..2, COMMIT-1..7,
SPACE-2/3 and MEM-1 on the committed tensor, and the commit write plan."""

from __future__ import annotations

import attrs
import pytest

from ir import ops
from ir.dtypes import DType
from ir.mapping import m
from ir.mapping.ops import Entry
from ir.rules.cast import check_cast, check_commit_cast, check_trim
from ir.rules.commit import check_commit
from ir.valid_count_ops import CommitPacked, check_packed
from ir.rules.commit_plan import commit_write_plan
from ir.types import MAIN, SUB, DmType, StreamType
from tests import kernel_files as kf
from tests.ir import kernels_commit as kc

MY_CODES = ("CAST-", "TRIM-", "CCAST-", "CTX-4", "COMMIT-")
MY_OPS = (ops.Cast, ops.CommitTrim, ops.CommitCast, ops.Commit)
CHECKS = {ops.Cast: check_cast, ops.CommitTrim: check_trim, ops.CommitCast: check_commit_cast,
          ops.Commit: check_commit}
CHECKS[CommitPacked] = check_packed  # the commit after commit_valid_count_pack (ir.valid_count_ops)

AX = {"A": 8, "R": 8, "N": 512, "M": 512, "P": 32, "K": 20}


def _trace(source: str, name: str):
    return kc.kernel(source, name).trace()


def _mine(diagnostics, extra: tuple[str, ...] = ()) -> list[tuple[str, int | None]]:
    return [(d.code, d.line) for d in diagnostics if d.code.startswith(MY_CODES + extra)]


def _stream(dtype: DType, time: str, packet: str, context: str = MAIN, cluster: str = "1 # 2",
            slice_: str = "1 # 256") -> StreamType:
    return StreamType(dtype, m("1"), m(cluster, axes=AX), m(slice_, axes=AX), m(time, axes=AX),
                      m(packet, axes=AX), context)


def _commit(stream: StreamType, element: str) -> ops.Commit:
    el = m(element, axes=AX)
    out = DmType(stream.dtype, stream.chip, stream.cluster, stream.slice, el)
    return ops.Commit(input=ops.Value(0, stream), element=el, result=ops.Value(1, out))


def _cast(stream: StreamType, dtype: DType, packet: str) -> ops.Cast:
    p = m(packet, axes=AX)
    out = attrs.evolve(stream, dtype=dtype, packet=p)
    return ops.Cast(input=ops.Value(0, stream), dtype=dtype, packet=p, result=ops.Value(1, out))


def _trim(stream: StreamType, packet: str) -> ops.CommitTrim:
    p = m(packet, axes=AX)
    return ops.CommitTrim(input=ops.Value(0, stream), packet=p,
                          result=ops.Value(1, attrs.evolve(stream, packet=p)))


# --- the write plan (docs/machine/commit.md) -------------------------------------------------------


def _commit_op(name: str) -> ops.Commit:
    return next(op for op in kf.example(name).trace().kernel.ops if isinstance(op, ops.Commit))


def test_gemm_write_plan():
    op = _commit_op("gemm_kernel")
    plan = commit_write_plan(op.input.type, op.element)
    assert plan.time == (Entry(128, 8),) and plan.packet == (Entry(8, 1),)
    assert (plan.piece_elems, plan.piece_bytes, plan.piece_starts, plan.contiguous) == (8, 16, (), True)
    assert len(plan.entries) == 2


def test_gemv_write_plan_is_one_8_byte_write():
    op = _commit_op("gemv_kernel")
    plan = commit_write_plan(op.input.type, op.element)
    assert plan.time == () and plan.packet == (Entry(4, 1),)
    assert plan.piece_bytes == 8


@pytest.mark.parametrize(("name", "time", "packet", "piece_bytes"), [
    ("dot_product_kernel", (), (Entry(8, 1),), 16),
    ("gemm_i8_kernel", (Entry(128, 8),), (Entry(8, 1),), 32),
    ("gemm_bf16_kernel", (Entry(128, 8),), (Entry(8, 1),), 32),
    ("row_sum_kernel", (Entry(8, 2),), (Entry(2, 1),), 8),
    ("fetch_commit_simple", (Entry(16, 8),), (Entry(8, 1),), 32),
])
def test_example_write_plans(name, time, packet, piece_bytes):
    op = _commit_op(name)
    plan = commit_write_plan(op.input.type, op.element)
    assert (plan.time, plan.packet, plan.piece_bytes) == (time, packet, piece_bytes)


def test_split_packet_write_plan_has_pieces():
    plan = commit_write_plan(_stream(DType.F32, "A", "R"), m("R / 4, A, R % 4", axes=AX))
    assert plan.time == (Entry(8, 4),) and plan.packet == (Entry(2, 32), Entry(4, 1))
    assert (plan.piece_elems, plan.piece_starts, plan.contiguous) == (4, (Entry(2, 32),), False)


def test_write_plan_of_an_unplaceable_commit_raises():
    with pytest.raises(ValueError, match="not placeable"):
        commit_write_plan(_stream(DType.F32, "A", "R % 4"), m("A, R / 2", axes=AX))


# --- valid kernels: no diagnostic of this family -----------------------------------------------


@pytest.mark.parametrize("name", kf.example_names())
def test_examples_have_no_commit_diagnostic(name):
    result = kf.example(name).trace()
    assert _mine(result.diagnostics, ("SPACE-", "MEM-")) == []
    mine = [op for op in result.kernel.ops if isinstance(op, MY_OPS)]
    assert any(isinstance(op, ops.Commit) for op in mine)
    for op in mine:  # checked directly too, whatever the other rule families say
        assert CHECKS[type(op)](op) is None, op.text()


@pytest.mark.parametrize("name", sorted(kc.VALID_KERNELS))
def test_valid_kernels_have_no_commit_diagnostic(name):
    result = _trace(kc.VALID_KERNELS[name], name)
    assert _mine(result.diagnostics, ("SPACE-", "MEM-")) == []
    for op in result.kernel.ops:
        if isinstance(op, MY_OPS):
            assert CHECKS[type(op)](op) is None, op.text()


# --- fixtures of docs/reference/diagnostics.md -----------------------------------------------------------------


@pytest.mark.parametrize("name", ["R9", "R10", "R17"])
def test_fixtures(name):
    fn, code = kc.FIXTURES[name]
    fixture = kf.fixture(fn)
    assert _mine(fixture.trace().diagnostics) == [(code, kf.marked_line(fixture))]


def test_r9_names_the_bytes():
    fn, _ = kc.FIXTURES["R9"]
    d = next(d for d in kf.fixture(fn).trace().diagnostics if d.code == "TRIM-1")
    assert d.stage == "commit_trim"
    assert "1 x i32 = 4 bytes" in d.notes[0]
    assert 'm("1 # 2")' in d.help


def test_r10_lists_the_legal_targets():
    fn, _ = kc.FIXTURES["R10"]
    d = next(d for d in kf.fixture(fn).trace().diagnostics if d.code == "CAST-1")
    assert "i16, i4, i8" in d.notes[0]


def test_r17_names_the_slice():
    fn, _ = kc.FIXTURES["R17"]
    d = next(d for d in kf.fixture(fn).trace().diagnostics if d.code == "COMMIT-7")
    assert d.notes[0] == '`B / 32` in element m("B / 32, A, E") is already placed by `B` in Slice m("B")'


# --- one kernel per rule -------------------------------------------------------------------------

RULE_KERNELS = sorted(k for k, (code, _) in kc.RULE_KERNELS.items() if not code.startswith("DMA-"))


@pytest.mark.parametrize("name", RULE_KERNELS)
def test_rule_kernels(name):
    code, src = kc.RULE_KERNELS[name]
    kernel = kc.kernel(src, name)
    assert _mine(kernel.trace().diagnostics, ("SPACE-", "MEM-")) == [(code, kf.marked_line(kernel))]


def test_every_rule_has_a_kernel_or_an_op():
    covered = {kc.RULE_KERNELS[k][0] for k in RULE_KERNELS} | {c for _, c in kc.FIXTURES.values()}
    by_hand = {"CAST-2", "COMMIT-1"}  # unreachable through the DSL: see the hand-built ops below
    wanted = ({f"CAST-{i}" for i in range(1, 5)} | {"TRIM-1", "TRIM-2", "CTX-4", "CCAST-1", "CCAST-2"}
              | {f"COMMIT-{i}" for i in range(1, 8)} | {"MEM-1"})
    assert wanted - covered == by_hand


# --- hand-built ops: rules no DSL chain reaches, and orders --------------------------------------


def test_cast2_input_packet_is_not_one_flit():
    found = check_cast(_cast(_stream(DType.F32, "A", "R % 4"), DType.BF16, "R % 4 # 16"))
    assert found.code == "CAST-2" and "4 x f32 = 16 bytes" in found.label


def test_cast_rule_order():
    s = _stream(DType.F32, "A", "R % 4")
    assert check_cast(_cast(s, DType.F32, "R")).code == "CAST-1"  # identity before anything
    s = _stream(DType.I32, "A", "R")
    assert check_cast(_cast(s, DType.I8, "R # 16")).code == "CAST-3"
    assert check_cast(_cast(s, DType.I8, "R # 32")) is None
    assert check_cast(_cast(s, DType.I4, "R # 64")) is None


def test_commit1_packet_is_not_a_commit_width():
    found = check_commit(_commit(_stream(DType.I32, "A", "1"), "A"))
    assert found.code == "COMMIT-1" and "1 x i32 = 4 bytes" in found.label


def test_commit1_before_commit7():
    s = _stream(DType.I8, "A", "R % 4", slice_="A # 256")
    assert check_commit(_commit(s, "A, R % 4")).code == "COMMIT-1"
    s = _stream(DType.I8, "1", "P % 8", slice_="A # 256")
    assert check_commit(_commit(s, "A, P % 8")).code == "COMMIT-7"


def test_space_of_the_committed_tensor():
    s = _stream(DType.I8, "A", "P % 8", cluster="1 # 3")
    assert check_commit(_commit(s, "A, P % 8")).code == "SPACE-2"
    s = _stream(DType.I8, "A", "P % 8", slice_="1 # 32")
    assert check_commit(_commit(s, "A, P % 8")).code == "SPACE-3"


def test_trim2_cannot_grow_the_packet():
    found = check_trim(_trim(_stream(DType.BF16, "A", "R % 4"), "R"))
    assert found.code == "TRIM-2" and "8 cells" in found.label


def test_trim_may_drop_live_cells():
    assert check_trim(_trim(_stream(DType.I32, "A", "R"), "R = 4")) is None
    assert check_trim(_trim(_stream(DType.BF16, "A", "R # 16"), "R")) is None
    assert check_trim(_trim(_stream(DType.BF16, "A", "R # 16"), "R # 12")) is None  # 24 bytes


def test_commit_cast_rule_order():
    def op(stream, dtype):
            return ops.CommitCast(input=ops.Value(0, stream), dtype=dtype, relu=False,
                              result=ops.Value(1, attrs.evolve(stream, dtype=dtype)))

    sub = _stream(DType.I32, "A", "R % 2", context=SUB)
    assert check_commit_cast(op(sub, DType.I8)).code == "CTX-4"
    assert check_commit_cast(op(_stream(DType.I32, "A", "R % 2"), DType.BF16)).code == "CCAST-1"
    assert check_commit_cast(op(_stream(DType.F32, "A", "R % 2"), DType.BF16)).code == "CCAST-2"
    assert check_commit_cast(op(_stream(DType.F32, "A", "R % 4"), DType.BF16)) is None


# --- COMMIT-2/3 details ----------------------------------------------------------------------------


def test_commit2_missing_axis_and_no_common_refinement():
    assert check_commit(_commit(_stream(DType.F32, "A", "R"), "A, R % 4")).code == "COMMIT-2"
    ax = {"F": 6, "Q": 8}
    s = StreamType(DType.I8, m("1"), m("1 # 2"), m("1 # 256"), m("F % 2", axes=ax), m("F / 2, Q", axes=ax))
    el = m("F % 3, F / 3, Q", axes=ax)
    op = ops.Commit(input=ops.Value(0, s), element=el,
                    result=ops.Value(1, DmType(DType.I8, s.chip, s.cluster, s.slice, el)))
    found = check_commit(op)
    assert found.code == "COMMIT-2" and "no common refinement" in found.label


def test_commit3_written_twice():
    found = check_commit(_commit(_stream(DType.I8, "P / 8", "P % 8, 1"), "P / 8, P % 8"))
    assert found is None
    found = check_commit(_commit(_stream(DType.I8, "P % 4", "P % 8"), "P % 8"))
    assert found.code == "COMMIT-3" and "written twice" in found.label


def test_commit3_ragged_padding_lands_in_element_padding():
    """K = 20, an i8 packet `K # 24` (a live run of 20 and 4 padding cells)."""
    s = _stream(DType.I8, "1", "K # 24")
    assert check_commit(_commit(s, "K # 24")) is None  # the identical ragged piece
    assert check_commit(_commit(s, "K # 32")) is None  # its padding lands on K # 32's padding
    found = check_commit(_commit(s, "K"))
    assert found.code == "COMMIT-3" and "ragged piece" in found.label


def test_commit3_padding_matches_padding():
    s = _stream(DType.BF16, "A", "R # 16")
    assert check_commit(_commit(s, "A, R # 16")) is None
    assert check_commit(_commit(s, "A, R")).code == "COMMIT-3"


def test_commit_default_element_of_padded_streams_is_writable():
    assert check_commit(_commit(_stream(DType.I32, "A, 1 # 2", "1 # 4, R % 2"), "A, 1 # 2, 1 # 4, R % 2")) is None
    assert check_commit(_commit(_stream(DType.BF16, "1 # 2", "1 # 4"), "1 # 8")) is None


def test_commit6_pieces_start_on_8_byte_boundaries():
    code, src = kc.RULE_KERNELS["COMMIT-6/start"]
    d = next(d for d in _trace(src, "COMMIT-6/start").diagnostics if d.code == code)
    assert "12 bytes apart" in d.message and "packet [2 : 6, 4 : 1]" in d.notes[0]


def test_overshooting_element_is_a_refusal_not_an_exception():
    ax = {"P": 16}
    s = StreamType(DType.I8, m("1"), m("1 # 2"), m("1 # 256"), m("1"), m("P % 8", axes=ax))
    el = m("P / 4, P % 8", axes=ax)
    op = ops.Commit(input=ops.Value(0, s), element=el,
                    result=ops.Value(1, DmType(DType.I8, s.chip, s.cluster, s.slice, el)))
    found = check_commit(op)
    assert found is not None and found.code == "COMMIT-7"
