"""`npu-opt run FILE::KERNEL --input NAME=FILE.npy ...` (docs/reference/cli.md, docs/testing.md)."""

from __future__ import annotations

import textwrap
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

from npu_opt.testing import oracles as o
from driver.run_command import run_command
from npu_opt.testing import assert_close

ROOT = Path(__file__).parents[2]
EXAMPLES = ROOT / "examples"
GEMM_I8 = f"{EXAMPLES / 'gemm_i8.py'}::gemm_i8_kernel"

PAIR = '''
from npu_opt import *

axes(A=8, B=64, E=16)

Chip = m("1")
Cluster = m("1 # 2")
Slice = m("1 # 256")

@device(chip=1)
def copy_pair(ctx: Context, x: HbmTensor[i8, Chip, m("A, B")], h: HbmTensor[bf16, Chip, m("A, E")]
              ) -> tuple[HbmTensor[i8, Chip, m("A, B")], HbmTensor[bf16, Chip, m("A, E")]]:
    x = x.to_dm(ctx.tdma, DmTensor[i8, Chip, Cluster, Slice, m("A, B")])
    h = h.to_dm(ctx.tdma, DmTensor[bf16, Chip, Cluster, Slice, m("A, E")])
    y = ctx.main.begin(x.view()).fetch(m("A"), m("B")).collect(m("A, B / 32"), m("B % 32"))
    z = ctx.main.begin(h.view()).fetch(m("A"), m("E")).collect(m("A"), m("E"))
    return y.commit_trim(m("B % 32")).commit().to_hbm(ctx.tdma), z.commit_trim(m("E")).commit().to_hbm(ctx.tdma)
'''


@pytest.fixture(scope="module")
def i8_inputs(tmp_path_factory):
    rng = np.random.default_rng(7)
    a = rng.integers(-128, 128, (512, 128), dtype=np.int8)
    w = rng.integers(-128, 128, (512, 128), dtype=np.int8)
    d = tmp_path_factory.mktemp("i8")
    np.save(d / "a.npy", a)
    np.save(d / "w.npy", w)
    return a, w, d


def bf16_bits(rng, *shape: int) -> np.ndarray:
    return o.f32_to_bf16_bits(rng.uniform(-1, 1, shape).astype(np.float32))


def run(capsys, target: str, inputs: list[str], out_dir: Path | str, backend: str = "cpu"):
    status = run_command(target, inputs, backend, str(out_dir))
    captured = capsys.readouterr()
    assert "Traceback" not in captured.out + captured.err
    return status, captured.out, captured.err


def usage(capsys, target: str, inputs: list[str], out_dir: Path | str, backend: str = "cpu") -> str:
    """Run a bad invocation: exit 2, one `error[USAGE]:` line, nothing written."""
    status, out, err = run(capsys, target, inputs, out_dir, backend)
    assert status == 2, err
    assert err.startswith("error[USAGE]: ") and err.count("\n") == 1, err
    assert not list(Path(out_dir).glob("out*.npy"))
    return err


# --- round trips ---------------------------------------------------------------------------------

def test_gemm_i8_round_trip_is_exact(i8_inputs, tmp_path, capsys):
    a, w, d = i8_inputs
    status, out, err = run(capsys, GEMM_I8, [f"a={d / 'a.npy'}", f"w={d / 'w.npy'}"], tmp_path / "res")
    assert status == 0, err
    assert f"wrote {tmp_path / 'res' / 'out.npy'}: int32 (512, 512)" in out
    result = np.load(tmp_path / "res" / "out.npy")
    assert_close(result, o.gemm_i8_oracle(a, w), "i32")
    assert sorted(p.name for p in (tmp_path / "res").iterdir()) == ["out.npy"]  # no temporaries left


def test_gemm_bf16_bit_exact_from_bits_and_from_ml_dtypes(tmp_path, capsys):
    rng = np.random.default_rng(11)
    a, w = bf16_bits(rng, 512, 128), bf16_bits(rng, 512, 128)
    np.save(tmp_path / "a.npy", a)                                # bit patterns
    np.save(tmp_path / "w.npy", w.view(ml_dtypes.bfloat16))       # stored by numpy as |V2
    target = f"{EXAMPLES / 'gemm_bf16.py'}::gemm_bf16_kernel"
    status, _, err = run(capsys, target, [f"a={tmp_path / 'a.npy'}", f"w={tmp_path / 'w.npy'}"], tmp_path)
    assert status == 0, err
    result = np.load(tmp_path / "out.npy")
    assert result.dtype == np.float32
    a64, w64 = o.bf16_bits_to_f32(a).astype(np.float64), o.bf16_bits_to_f32(w).astype(np.float64)
    assert_close(result, o.gemm_bf16_oracle_exact(a, w), "f32", operands=(a64[:, None, :], w64[None, :, :]))


def test_bf16_result_is_written_as_uint16_bits(tmp_path, capsys):
    rng = np.random.default_rng(3)
    lhs, rhs = bf16_bits(rng, 2048), bf16_bits(rng, 2048)
    np.save(tmp_path / "lhs.npy", lhs)
    np.save(tmp_path / "rhs.npy", rhs)
    target = f"{EXAMPLES / 'dot_product.py'}::dot_product_kernel"
    status, _, err = run(capsys, target, [f"lhs={tmp_path / 'lhs.npy'}", f"rhs={tmp_path / 'rhs.npy'}"], tmp_path)
    assert status == 0, err
    result = np.load(tmp_path / "out.npy")
    assert result.dtype == np.uint16 and result.shape == (1,)
    assert_close(result, o.dot_oracle_exact(lhs, rhs), "bf16")


def test_tuple_result_writes_out0_out1(tmp_path, capsys):
    path = tmp_path / "pair.py"
    path.write_text(textwrap.dedent(PAIR))
    rng = np.random.default_rng(5)
    x, h = rng.integers(-128, 128, (8, 64), dtype=np.int8), bf16_bits(rng, 8, 16)
    np.save(tmp_path / "x.npy", x)
    np.save(tmp_path / "h.npy", h)
    status, out, err = run(capsys, f"{path}::copy_pair", [f"x={tmp_path / 'x.npy'}", f"h={tmp_path / 'h.npy'}"],
                           tmp_path / "o")
    assert status == 0, err
    assert sorted(p.name for p in (tmp_path / "o").iterdir()) == ["out0.npy", "out1.npy"]
    assert_close(np.load(tmp_path / "o" / "out0.npy"), x)
    out1 = np.load(tmp_path / "o" / "out1.npy")
    assert out1.dtype == np.uint16
    assert_close(out1, h, "bf16")


# --- refusals and bad invocations ----------------------------------------------------------------

def test_refused_kernel_prints_diagnostics_and_exits_1(tmp_path, capsys):
    np.save(tmp_path / "x.npy", np.zeros((8, 64), np.int8))
    target = f"{ROOT / 'tests' / 'fixtures' / 'refused.py'}::r01_half_flit"
    status, _, err = run(capsys, target, [f"x={tmp_path / 'x.npy'}"], tmp_path)
    assert status == 1
    assert "error[COLLECT-2]" in err and "refused.py:" in err
    assert not list(tmp_path.glob("out*.npy"))


def test_missing_kernel_part(i8_inputs, tmp_path, capsys):
    err = usage(capsys, str(EXAMPLES / "gemm_i8.py"), [], tmp_path)
    assert "expected FILE::KERNEL" in err


def test_unknown_kernel_lists_the_available_ones(tmp_path, capsys):
    err = usage(capsys, f"{EXAMPLES / 'gemm_i8.py'}::gemm", [], tmp_path)
    assert "no kernel `gemm` in" in err and "available: gemm_i8_kernel" in err


def test_missing_extra_duplicate_and_malformed_inputs(i8_inputs, tmp_path, capsys):
    _, _, d = i8_inputs
    a, w = f"a={d / 'a.npy'}", f"w={d / 'w.npy'}"
    assert "missing input `w`: kernel gemm_i8_kernel takes a, w" in usage(capsys, GEMM_I8, [a], tmp_path)
    assert "unknown input `b`: kernel gemm_i8_kernel takes a, w" in \
        usage(capsys, GEMM_I8, [a, w, f"b={d / 'a.npy'}"], tmp_path)
    assert "input `a` is given twice" in usage(capsys, GEMM_I8, [a, a, w], tmp_path)
    assert "--input expects NAME=FILE.npy, got 'a.npy'" in usage(capsys, GEMM_I8, ["a.npy", w], tmp_path)


def test_unreadable_npy(i8_inputs, tmp_path, capsys):
    _, _, d = i8_inputs
    w = f"w={d / 'w.npy'}"
    text = tmp_path / "a.txt"
    text.write_text("1 2 3\n")
    assert "input `a`: " in usage(capsys, GEMM_I8, [f"a={text}", w], tmp_path)
    assert "is not a .npy file" in usage(capsys, GEMM_I8, [f"a={text}", w], tmp_path)
    assert "no such file" in usage(capsys, GEMM_I8, [f"a={tmp_path / 'nope.npy'}", w], tmp_path)
    cut = tmp_path / "cut.npy"
    cut.write_bytes((d / "a.npy").read_bytes()[:200])
    assert "cannot read" in usage(capsys, GEMM_I8, [f"a={cut}", w], tmp_path)


def test_bad_input_shape_is_a_usage_error(i8_inputs, tmp_path, capsys):
    _, _, d = i8_inputs
    np.save(tmp_path / "small.npy", np.zeros((4, 4), np.int8))
    err = usage(capsys, GEMM_I8, [f"a={tmp_path / 'small.npy'}", f"w={d / 'w.npy'}"], tmp_path)
    assert "(4, 4)" in err or "shape" in err


def test_files_that_do_not_load(tmp_path, capsys):
    broken = tmp_path / "broken.py"
    broken.write_text("def oops(:\n    pass\n")
    err = usage(capsys, f"{broken}::oops", [], tmp_path)
    assert "cannot load" in err and "broken.py:1" in err and "Python syntax error" in err
    assert "no such file or directory" in usage(capsys, f"{tmp_path / 'missing.py'}::k", [], tmp_path)
    assert "is a directory" in usage(capsys, f"{tmp_path}::k", [], tmp_path)
    empty = tmp_path / "empty.py"
    empty.write_text("x = 1\n")
    assert "defines no @device kernel" in usage(capsys, f"{empty}::k", [], tmp_path)


def test_backends(i8_inputs, tmp_path, capsys):
    a, w, d = i8_inputs
    inputs = [f"a={d / 'a.npy'}", f"w={d / 'w.npy'}"]
    assert "unknown backend 'gpu'" in usage(capsys, GEMM_I8, inputs, tmp_path, backend="gpu")


def test_cpu_and_visa_backends_write_identical_outputs(i8_inputs, tmp_path, capsys):
    """docs/ci.md: both backends write the same .npy, equal to the oracle."""
    a, w, d = i8_inputs
    inputs = [f"a={d / 'a.npy'}", f"w={d / 'w.npy'}"]
    for backend in ("cpu", "visa"):
        status, _, err = run(capsys, GEMM_I8, inputs, tmp_path / backend, backend)
        assert status == 0, err
    cpu, visa = np.load(tmp_path / "cpu" / "out.npy"), np.load(tmp_path / "visa" / "out.npy")
    assert cpu.tobytes() == visa.tobytes()
    assert_close(visa, o.gemm_i8_oracle(a, w), "i32")


def test_output_directory_that_is_a_file(i8_inputs, tmp_path, capsys):
    _, _, d = i8_inputs
    blocker = tmp_path / "blocker"
    blocker.write_text("")
    err = usage(capsys, GEMM_I8, [f"a={d / 'a.npy'}", f"w={d / 'w.npy'}"], blocker)
    assert "is a file" in err
