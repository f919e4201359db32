"""The VISA interpreter (issue 7): artifacts executed by address arithmetic agree with the
examples/ oracles and with the `cpu` backend bit for bit; the `visa` backend and the
`npu-opt visa` command around it.

(a) the hand-built examples 4 / 4b (tests/tu_ops/builders.py, the visa/visa.lark fields)
equal their oracles exactly; (b) every example, every padded / special-value contraction
of the cpu fast-path suite, every feed combination of the LOWER-3 matrix and the layout
kernels of the lowering tests, compiled and interpreted, equal the cpu backend's bits.
"""

from __future__ import annotations

import ast
import re
import io
import zlib
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

from backends.base import Backend
from backends.visa_backend import VisaBackend
from ir.errors import CompileError, NpuOptError
from ir.resident import Device, DmBuffer
from npu_opt.testing import oracles
from npu_opt.compile_api import compile_kernel
from npu_opt.run import run
from driver.visa_command import visa_command
from tests.backends import test_contract_fast as fast
from tests.kernel_files import example, example_names, fixture, load_source
from tests.lowering import kernels as lowering_kernels
from tests.lowering.test_matrix import CASES as MATRIX
from tests.tu_ops.builders import gemm
from tu_ops import rngd
from visa import parse_visa, print_visa
from visa.interp import InterpError, execute, execute_inout

TARGET = rngd()
INTERP_DIR = Path(__file__).resolve().parents[2] / "visa" / "interp"


def bits(out):
    """Results as unsigned bit patterns (a list, one per result)."""
    outs = out if isinstance(out, tuple) else (out,)
    return [np.ascontiguousarray(o).view(f"u{np.asarray(o).dtype.itemsize}") for o in outs]


def assert_same_bits(out, ref) -> None:
    got, want = bits(out), bits(ref)
    assert len(got) == len(want)
    for g, w, o, r in zip(got, want, out if isinstance(out, tuple) else (out,), ref if isinstance(ref, tuple) else (ref,)):
        assert o.dtype == r.dtype and g.shape == w.shape
        np.testing.assert_array_equal(g, w)


def artifact(kernel):
    outcome = compile_kernel(kernel)
    assert outcome.status == "ok", outcome.diagnostics
    return parse_visa(outcome.text)


def host_inputs(kernel, rng, kind="uniform"):
    """docs/testing.md inputs for every parameter ("bits": any bit pattern for floats)."""
    from ir.topology import host_array_shape
    from tests.differential.strategies import equal_chip_copies
    arrays = []
    for p in artifact(kernel).kernel.params:
        if p.at is not None:  # a resident DM parameter: a buffer of random contents
            buf = DmBuffer(p.type, str(p.type), Device("rngd"))
            buf.write(rng.integers(-1000, 1000, buf.shape).astype(p.type.dtype.host_dtype))
            arrays.append(buf)
            continue
        d, shape = p.type.dtype, host_array_shape(p.type)
        if d.value == "f4e2m1":
            arrays.append(rng.integers(0, 16, shape).astype(np.uint8))
        elif d.is_float and kind == "bits":
            arrays.append(rng.integers(0, 1 << d.bits_dtype.itemsize * 8, shape, dtype=np.uint64).astype(d.bits_dtype))
        elif d.value == "bf16":
            arrays.append(oracles.f32_to_bf16_bits(rng.uniform(-1, 1, shape).astype(np.float32)))
        elif d.value == "f32":
            arrays.append(rng.uniform(-1, 1, shape).astype(np.float32))
        elif d.is_float:
            arrays.append(rng.integers(0, 0x78, shape).astype(np.uint8) | (rng.integers(0, 2, shape) << 7).astype(np.uint8))
        else:
            arrays.append(rng.integers(d.min, d.max + 1, shape).astype(d.host_dtype))
        arrays[-1] = equal_chip_copies(arrays[-1], p.type.chip)   # rule 11: a broadcast Chip's copies agree
    return arrays


def agree(kernel, arrays) -> None:
    """Compiled and interpreted, `kernel` gives the cpu backend's bits."""
    ref = run(kernel, *arrays, backend="cpu")
    out = execute(artifact(kernel), arrays, as_tuple=isinstance(ref, tuple))
    if ref is None:
        assert out is None
    else:
        assert_same_bits(out, ref)


# ---- (a) the hand-built examples 4 and 4b against the examples/ oracles -----------------


@pytest.mark.parametrize("seed", [0, 1])
def test_hand_built_example_4_equals_its_oracle(seed):
    rng = np.random.default_rng(seed)
    a = rng.integers(-128, 128, (512, 128), dtype=np.int8)
    w = rng.integers(-128, 128, (512, 128), dtype=np.int8)
    want = oracles.gemm_i8_oracle(a, w)
    for source in (gemm("i8"), parse_visa(print_visa(gemm("i8"), TARGET))):
        out = execute(source, [a, w])
        assert out.dtype == np.int32
        np.testing.assert_array_equal(out, want)


@pytest.mark.parametrize("seed", [0, 1])
def test_hand_built_example_4b_equals_its_oracle(seed):
    rng = np.random.default_rng(seed)
    a = oracles.f32_to_bf16_bits(rng.uniform(-1, 1, (512, 128)).astype(np.float32))
    w = oracles.f32_to_bf16_bits(rng.uniform(-1, 1, (512, 128)).astype(np.float32))
    out = execute(parse_visa(print_visa(gemm("bf16"), TARGET)), [a, w.view(ml_dtypes.bfloat16)])
    assert out.dtype == np.float32
    np.testing.assert_array_equal(out.view(np.uint32), oracles.gemm_bf16_oracle_exact(a, w).view(np.uint32))
    a64, w64 = oracles.bf16_bits_to_f32(a).astype(np.float64), oracles.bf16_bits_to_f32(w).astype(np.float64)
    assert oracles.float_tolerance_ok(out[:64], a64[:64, None, :], w64[None, :, :], 128)


# ---- (b) compiled kernels against the cpu backend ------------------------------------------

ORACLES = {
    "dot_product_kernel": oracles.dot_oracle_exact, "gemv_kernel": oracles.gemv_oracle_exact,
    "gemm_kernel": oracles.gemm_oracle_exact, "gemm_bf16_kernel": oracles.gemm_bf16_oracle_exact,
    "gemm_i8_kernel": oracles.gemm_i8_oracle, "row_sum_kernel": oracles.row_sum_oracle,
    "fetch_commit_simple": oracles.fetch_commit_oracle,
    # the accumulator's host form is (1, 1, S / 8, S % 8, H): the batch's rows in order; i32 wraps
    "resident_accumulate": lambda x, acc: x.reshape(acc.shape) + acc.read(),
    "resident_readout": lambda offset, acc: offset + acc.read().reshape(offset.shape),
}


@pytest.mark.parametrize("name", example_names())
def test_every_example_agrees_with_cpu_and_its_oracle(name):
    kernel = example(name)
    arrays = host_inputs(kernel, np.random.default_rng(zlib.crc32(name.encode())))
    copies = [a.copy() for a in arrays]
    ref = run(kernel, *copies, backend="cpu")  # in-out arrays are written in place
    resident = [c.read() for c, p in zip(copies, artifact(kernel).kernel.params) if p.at is not None and p.inout]
    if resident:  # `run` keeps a resident buffer's contents in the buffer (the examples have no HBM in-out)
        ref = (() if ref is None else ref if isinstance(ref, tuple) else (ref,)) + tuple(resident)
        ref = ref[0] if len(ref) == 1 else ref
    results, finals = execute_inout(artifact(kernel), arrays)      # results, then the in-out contents
    out = results + finals
    assert_same_bits(out[0] if len(out) == 1 else out, ref)
    if name in ORACLES:
        np.testing.assert_array_equal(bits(out)[0], bits(ORACLES[name](*arrays))[0])


@pytest.mark.parametrize("name", ["dot_product_kernel", "gemv_kernel", "row_sum_kernel", "fetch_commit_simple"])
def test_examples_agree_on_any_bit_pattern(name):
    """NaN, infinities, subnormals and signed zeros take the flushed float arithmetic."""
    kernel = example(name)
    agree(kernel, host_inputs(kernel, np.random.default_rng(3), "bits"))


def _fast_cases():
    for name, (_, _, family) in fast.CASES.items():
        kinds = fast.KINDS[family][:2] if name in fast.BIG else fast.KINDS[family]
        for kind in kinds:
            yield pytest.param(name, kind, id=f"{name}-{kind}")


@pytest.mark.parametrize("name,kind", list(_fast_cases()))
def test_contractions_with_padding_and_special_values_agree(name, kind):
    """Padded time, leaves and columns, f8 operands, both sides of the no-flush guard."""
    getter, shapes, family = fast.CASES[name]
    rng = np.random.default_rng(zlib.crc32(f"{name}/{kind}".encode()))
    agree(getter(), [fast.DATA[family](rng, shape, kind) for shape in shapes])


@pytest.mark.parametrize("case,factory", [(c[0], c[1]) for c in MATRIX], ids=[c[0] for c in MATRIX])
def test_every_feed_combination_agrees(case, factory):
    """Every (element type, flits, destination) of the LOWER-3 matrix: conversions, 4-bit
    nibbles, lookups, zero points, casts, sub-context reads and writes."""
    kernel = factory()
    for kind in ("uniform", "bits"):
        agree(kernel, host_inputs(kernel, np.random.default_rng(zlib.crc32(case.encode())), kind))


@pytest.mark.parametrize("factory", [lowering_kernels.ragged_commit_kernel, lowering_kernels.relayout_kernel,
                                     lowering_kernels.two_cluster_kernel, lowering_kernels.long_loop_kernel,
                                     lambda: lowering_kernels.transpose_kernel(3)],
                         ids=["ragged", "relayout", "two-cluster", "long-loop", "transpose"])
def test_layout_kernels_agree(factory):
    kernel = factory()
    agree(kernel, host_inputs(kernel, np.random.default_rng(5)))


# ---- the API: host arrays in and out ---------------------------------------------------------

TWO = '''\
from npu_opt import *

axes(X=64)
Chip, Cluster, Slice = m("1"), m("1 # 2"), m("1 # 64")


@device(chip=1)
def two_results(ctx: Context, x: HbmTensor[i32, Chip, m("X")],
                y: HbmTensor[bf16, Chip, m("X")]) -> tuple[HbmTensor[i32, Chip, m("X")], HbmTensor[bf16, Chip, m("X")]]:
    dx = x.to_dm(ctx.tdma, DmTensor[i32, Chip, Cluster, Slice, m("X")])
    dy = y.to_dm(ctx.tdma, DmTensor[bf16, Chip, Cluster, Slice, m("X")])
    return dx.to_hbm(ctx.tdma), dy.to_hbm(ctx.tdma)
'''


def test_host_forms_and_tuples():
    kernel = load_source(TWO, "visa-interp-two").two_results
    x = np.arange(64, dtype=np.int32) - 7
    y = oracles.f32_to_bf16_bits(np.linspace(-1, 1, 64).astype(np.float32))
    out = execute(artifact(kernel), [x, y])
    assert isinstance(out, tuple) and len(out) == 2
    assert out[1].dtype == np.dtype(ml_dtypes.bfloat16)
    np.testing.assert_array_equal(out[0], x)
    np.testing.assert_array_equal(out[1].view(np.uint16), y)
    assert_same_bits(VisaBackend().run(kernel, [x, y.view(ml_dtypes.bfloat16)]), run(kernel, x, y, backend="cpu"))


def test_bad_arrays_are_usage_errors():
    art = parse_visa(print_visa(gemm("i8"), TARGET))
    a = np.zeros((512, 128), np.int8)
    for arrays, fragment in [([a], "takes 2 array(s)"), ([a, a.astype(np.int16)], "pass an int8"),
                             ([a, a[:, :64]], "needs shape (512, 128)")]:
        with pytest.raises(NpuOptError, match=re.escape(fragment)) as info:
            execute(art, arrays)
        assert info.value.code == "USAGE"


def test_an_inconsistent_artifact_is_refused_not_crashed():
    text = print_visa(gemm("i8"), TARGET).replace("flits_per_packet=4 collect_flits=Flit2 beats=256",
                                                  "flits_per_packet=4 collect_flits=Flit2 beats=100")
    with pytest.raises(InterpError, match="beats 100") as info:
        execute(parse_visa(text), [np.zeros((512, 128), np.int8)] * 2)
    assert "%6 = feed_buffer" in str(info.value)


def test_a_one_byte_dma_command_is_an_empty_nest_run_once():
    """visa/visa.lark drops size-1 entries, the 1-byte packet 1:1:1 too: `packet_bytes=1,
    entries=[]` copies the one byte at src_base to dst_base (as `--verify` counts it)."""
    from tests.differential.test_regressions import ONE_BYTE_RESULT
    kernel = load_source(ONE_BYTE_RESULT, "visa-interp-one-byte").i8_dot
    text = compile_kernel(kernel).text
    assert "packet_bytes=1, entries=[]" in text
    rng = np.random.default_rng(3)
    for arrays in ([np.arange(64, dtype=np.int8) - 32, np.ones(64, np.int8)], host_inputs(kernel, rng)):
        agree(kernel, arrays)
    x, w = np.full(64, 3, np.int8), np.ones(64, np.int8)
    np.testing.assert_array_equal(execute(parse_visa(text), [x, w]), np.array([np.int8(192 - 256)]))
    # the index path (an out-of-range walk) runs the empty nest once too, and faults there
    with pytest.raises(InterpError, match=r"destination touches bytes 1\.\.1, outside the 1-byte memory"):
        execute(parse_visa(text.replace("dst_base=0, packet_bytes=1, entries=[]",
                                        "dst_base=1, packet_bytes=1, entries=[]")), [x, w])
    # a packet of more than one byte is an entry; without it the command is malformed
    with pytest.raises(InterpError, match="no entry for its 2-byte packet"):
        execute(parse_visa(text.replace("packet_bytes=1, entries=[]", "packet_bytes=2, entries=[]")), [x, w])


def test_interpreter_modules_stay_small():
    """(What the interpreter may import is checked for the whole tree in tests/test_layers.py.)"""
    for path in INTERP_DIR.glob("*.py"):
        assert len(path.read_text().splitlines()) < 400, path.name


# ---- the visa backend ----------------------------------------------------------------------


def test_visa_backend_implements_the_protocol_and_agrees():
    backend = VisaBackend()
    assert isinstance(backend, Backend) and backend.name == "visa" and backend.executes
    kernel = example("gemm_i8_kernel")
    arrays = host_inputs(kernel, np.random.default_rng(11))
    np.testing.assert_array_equal(backend.run(kernel, arrays), oracles.gemm_i8_oracle(*arrays))
    assert backend.diagnostics(kernel) == ()


def test_visa_backend_refuses_before_reading_data():
    """R15 passes the trace (the cpu backend runs it) but not the lowering (MEM-3 [L])."""
    kernel = fixture("r15_dm_full")
    with pytest.raises(CompileError) as info:
        VisaBackend().run(kernel, [object(), object()])
    assert info.value.diagnostics[0].code == "MEM-3"
    assert [d.code for d in VisaBackend().diagnostics(kernel)] == ["MEM-3"]


def test_an_artifact_the_interpreter_cannot_run_is_an_internal_error(monkeypatch):
    """If the compiler ever emitted an inconsistent artifact, `run(..., backend="visa")` says ICE."""
    kernel = example("gemm_i8_kernel")
    good = VisaBackend.compile
    monkeypatch.setattr(VisaBackend, "compile", lambda self, k, t="rngd": parse_visa(
        print_visa(good(self, k, t).kernel, TARGET).replace("beats=256", "beats=100")))
    with pytest.raises(CompileError) as info:
        VisaBackend().run(kernel, host_inputs(kernel, np.random.default_rng(0)))
    assert info.value.diagnostics[0].code == "ICE"


# ---- npu-opt visa FILE [--verify] [--exec ...] -------------------------------------------------


@pytest.fixture()
def spec_file(tmp_path):
    path = tmp_path / "gemm_i8_kernel.visa"
    path.write_text(print_visa(gemm("i8"), TARGET))
    return path


def _cmd(*args, **kw):
    out, err = io.StringIO(), io.StringIO()
    return visa_command(*args, out=out, err=err, **kw), out.getvalue(), err.getvalue()


def test_visa_command_summarizes_and_verifies(spec_file):
    status, out, err = _cmd(str(spec_file), verify=True)
    assert (status, err) == (0, "")
    assert "kernel gemm_i8_kernel: target rngd" in out and "programs: 2" in out
    assert "contract_outer=1" in out and "mac_ops=131072" in out and "verified" in out


def test_visa_command_reports_a_corrupt_artifact_with_line_and_column(spec_file, tmp_path):
    bad = tmp_path / "bad.visa"
    bad.write_text(spec_file.read_text().replace("beats=256", "beats=255"))
    status, _, err = _cmd(str(bad), verify=True)
    assert status == 2 and err.startswith(f"error[FEED-3]: {bad}:19:3: [FEED-3]")
    bad.write_text(spec_file.read_text().replace("visa 2\n", "visa 2\nbogus\n"))
    status, _, err = _cmd(str(bad))
    assert status == 2 and err.startswith(f"error[USAGE]: {bad}:2:1:")
    assert _cmd(str(tmp_path / "missing.visa"))[0] == 2


def test_visa_command_executes_like_npu_opt_run(spec_file, tmp_path):
    rng = np.random.default_rng(2)
    a, w = (rng.integers(-128, 128, (512, 128), dtype=np.int8) for _ in range(2))
    np.save(tmp_path / "a.npy", a)
    np.save(tmp_path / "w.npy", w)
    inputs = [f"a={tmp_path / 'a.npy'}", f"w={tmp_path / 'w.npy'}"]
    status, out, err = _cmd(str(spec_file), exec_=True, inputs=inputs, out_dir=str(tmp_path / "res"))
    assert (status, err) == (0, "") and "wrote" in out
    np.testing.assert_array_equal(np.load(tmp_path / "res" / "out.npy"), oracles.gemm_i8_oracle(a, w))
    for inputs_, exec_, fragment in [(inputs[:1], True, "missing input `w`"), (inputs, False, "--input needs --exec"),
                                     ([*inputs, "b=x.npy"], True, "unknown input `b`")]:
        status, _, err = _cmd(str(spec_file), exec_=exec_, inputs=inputs_, out_dir=str(tmp_path / "res"))
        assert status == 2 and fragment in err, err
