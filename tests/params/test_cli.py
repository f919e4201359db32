"""`npu-opt run` and `npu-opt visa --exec` with in-out and grouped parameters: one
`--input` per tensor by path name; results as out*.npy, in-out contents as NAME.npy."""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np

from driver.run_command import run_command
from driver.visa_command import visa_command

HERE = Path(__file__).parent
X = np.arange(512, dtype=np.int64).astype(np.int8).reshape(64, 8)


def _run(tmp_path: Path, target: str, inputs: dict[str, np.ndarray], backend: str = "cpu") -> tuple[int, str]:
    args = []
    for name, array in inputs.items():
        np.save(tmp_path / f"{name}_in.npy", array)
        args.append(f"{name}={tmp_path / f'{name}_in.npy'}")
    out, err = io.StringIO(), io.StringIO()
    status = run_command(target, args, backend, str(tmp_path / "res"), out=out, err=err)
    return status, out.getvalue() + err.getvalue()


def test_struct_members_are_inputs_by_path_and_in_out_contents_are_written(tmp_path):
    status, text = _run(tmp_path, f"{HERE / 'kernels_struct.py'}::struct_in_out",
                        {"p.src": X, "p.dst": np.zeros((8, 64), np.int8)}, backend="visa")
    assert status == 0, text
    np.testing.assert_array_equal(np.load(tmp_path / "res" / "out.npy"), X)
    np.testing.assert_array_equal(np.load(tmp_path / "res" / "p.dst.npy"), X.T)


def test_an_in_out_parameter_named_like_a_result_file_gets_its_own_name(tmp_path):
    status, text = _run(tmp_path, f"{HERE / 'kernels.py'}::swap_into", {"x": X, "out": np.ones((8, 64), np.int8)})
    assert status == 0, text
    assert (np.load(tmp_path / "res" / "out.npy") == 1).all()       # the result: out's old contents
    np.testing.assert_array_equal(np.load(tmp_path / "res" / "out.inout.npy"), X.T)


def test_a_unit_kernel_writes_only_its_in_out_parameter(tmp_path):
    status, text = _run(tmp_path, f"{HERE / 'kernels.py'}::copy_into", {"x": X, "out": np.zeros((64, 8), np.int8)})
    assert status == 0, text
    assert sorted(p.name for p in (tmp_path / "res").iterdir()) == ["out.npy"]
    np.testing.assert_array_equal(np.load(tmp_path / "res" / "out.npy"), X)


def test_visa_exec_writes_the_final_contents(tmp_path):
    import npu_opt
    from tests.params import kernels as k

    art = tmp_path / "copy_into.visa"
    art.write_text(npu_opt.compile(k.copy_into).text)
    np.save(tmp_path / "x.npy", X)
    np.save(tmp_path / "o.npy", np.zeros((64, 8), np.int8))
    out, err = io.StringIO(), io.StringIO()
    status = visa_command(str(art), exec_=True, inputs=[f"x={tmp_path / 'x.npy'}", f"out={tmp_path / 'o.npy'}"],
                          out_dir=str(tmp_path / "res"), out=out, err=err)
    assert status == 0, err.getvalue()
    assert "param out (inout)" in out.getvalue()
    np.testing.assert_array_equal(np.load(tmp_path / "res" / "out.npy"), X)
