"""`npu-opt run FILE::KERNEL --input NAME=FILE.npy ... [--backend cpu|visa] [--numerics chip|reference]
[-o DIR]` (docs/reference/cli.md).

Loads the kernel file, binds each `--input` to the kernel parameter of that name, runs
the kernel with `npu_opt.run` (`--numerics` is its `numerics=`), and writes its results into DIR (docs/testing.md):
`out.npy` for one result, `out0.npy`, `out1.npy`, ... for a tuple, nothing for none, then
the final contents of each in-out parameter as `NAME.npy` (`NAME.inout.npy` if a result
is already called that).
`.npy` has no bf16/f8/f4 dtypes, so those results are written as their unsigned bit
patterns (`uint16`, `uint8`), and inputs may be given either as bit patterns or as
`ml_dtypes` arrays (which `.npy` stores as raw `V2`/`V1` records). Files are written
atomically (a temporary name in DIR, then `os.replace`).

Exit status: 0 ok; 1 the kernel was refused (its diagnostics are printed); 2 a bad
invocation or input, printed as one `error[USAGE]: ...` line; 3 an internal error.
"""

from __future__ import annotations

import functools
import inspect
import io
import math
import os
import stat
import sys
from pathlib import Path
from typing import Any, TextIO

import numpy as np

from ir.codes import CODES
from ir.diagnostic import render_all
from ir.dtypes import DType
from ir.errors import CompileError, NpuOptError
from npu_opt.device import DeviceKernel
from driver.discover import discover
from driver.replay import write_atomic
from npu_opt.params import BadParam, build_value, leaves
from npu_opt.run import NUMERICS, run
from ir.resident import Device, DmBuffer
from npu_opt.tensors import TensorSpec
from ir.words import a_an

__all__ = ["run_command", "KNOWN_BACKENDS", "EXIT_OK", "EXIT_REFUSED", "EXIT_USAGE", "EXIT_ICE"]

from driver.exit_codes import EXIT_ICE, EXIT_OK, EXIT_REFUSED, EXIT_USAGE  # noqa: E402

KNOWN_BACKENDS = ("cpu", "visa")

_NPY_MAGIC = b"\x93NUMPY"
# float dtypes with no .npy form: written as, and accepted as, their unsigned bit patterns.
_BIT_FLOATS = (DType.BF16, DType.F8E4M3, DType.F8E5M2, DType.F4E2M1)
@functools.cache
def _ml_floats() -> dict[np.dtype, np.dtype]:
    """The ml_dtypes float dtypes and the unsigned dtype of their bit patterns (built on first use, not at
    module import: `compile` reaches this module and must not load ml_dtypes)."""
    return {np.dtype(d.host_dtype): d.bits_dtype for d in _BIT_FLOATS}


class _Usage(Exception):
    """A bad invocation or input: printed as one `error[USAGE]: ...` line, exit 2."""


def run_command(target: str, inputs: list[str], backend: str = "cpu", out_dir: str = ".",
                *, numerics: str = "chip", out: TextIO | None = None, err: TextIO | None = None) -> int:
    """Run `target` (`FILE::KERNEL`) on the `NAME=FILE.npy` inputs; return the exit status."""
    out = sys.stdout if out is None else out
    err = sys.stderr if err is None else err
    try:
        path, name = _split_target(target)
        _check_options(backend, numerics)
        kernel = _load_kernel(path, name)
        arrays, resident = _read_inputs(kernel, inputs)
        dest = _out_dir(out_dir)
        status, result = _execute(kernel, arrays, backend, numerics, err)
        if status != EXIT_OK:
            return status
        from backends.cpu.host import returns_tuple

        written = _write_results(result, dest, kernel.name, _inout_names(kernel), returns_tuple(kernel))
        written += _write_resident(resident, dest, {p.name for p, _ in written})
    except _Usage as e:
        print(f"error[USAGE]: {e}", file=err)
        return EXIT_USAGE
    except _Internal as e:
        print(f"error[ICE]: {e}; please report this npu-opt bug", file=err)
        return EXIT_ICE
    print_written(kernel.name, written, out)
    return EXIT_OK


def print_written(kernel_name: str, written: list[tuple[Path, np.ndarray]], out: TextIO) -> None:
    """One `wrote FILE: dtype shape` line per result file (`npu-opt run`, `npu-opt visa --exec`)."""
    if not written:
        print(f"{kernel_name} returns no result; nothing written", file=out)
    for file, array in written:
        print(f"wrote {file}: {array.dtype} {tuple(array.shape)}", file=out)


# --- invocation ------------------------------------------------------------------------------


def _split_target(target: str) -> tuple[str, str]:
    path, sep, name = target.rpartition("::")
    if not sep or not path or not name:
        raise _Usage(f"expected FILE::KERNEL, got {target!r} "
                     "(e.g. examples/gemm_i8.py::gemm_i8_kernel)")
    return path, name


def _check_options(backend: str, numerics: str) -> None:
    """`_Usage` for a backend or numerics `run` does not know, or a numerics the backend has not."""
    if backend not in KNOWN_BACKENDS:
        raise _Usage(f"unknown backend {backend!r}; expected one of: {', '.join(KNOWN_BACKENDS)}")
    if numerics not in NUMERICS:
        raise _Usage(f"unknown numerics {numerics!r}; expected one of: {', '.join(NUMERICS)}")
    if numerics != "chip" and backend != "cpu":
        raise _Usage(f"--numerics {numerics} is an option of the cpu backend; the {backend} backend "
                     "computes what the chip computes")


def _load_kernel(path: str, name: str) -> DeviceKernel:
    if Path(path).is_dir():
        raise _Usage(f"{path} is a directory; `npu-opt run` takes FILE::KERNEL")
    found = discover([path])
    if found.errors:
        e = found.errors[0]
        where = e.file + (f":{e.line}" if e.line else "")
        raise _Usage(f"cannot load {where}: {e.message}")
    matches = [k for k in found.kernels if k.name == name]
    if not matches:
        names = ", ".join(k.name for k in found.kernels)
        available = f"available: {names}" if names else "it defines no @device kernel"
        raise _Usage(f"no kernel `{name}` in {path}; {available}")
    if len(matches) > 1:
        raise _Usage(f"kernel name `{name}` is defined more than once in {path}")
    return matches[0]


def _parameters(kernel: DeviceKernel) -> list[tuple[str, DType | None]]:
    """Every tensor parameter after `ctx` by its path name (`x`, `io.0`, `p.dst`), with the
    dtype of its annotation when it can be read."""
    try:
        trees = kernel.param_trees()
    except Exception:  # noqa: BLE001 - a broken annotation is reported by the trace, not here
        return [(p.name, None) for p in list(inspect.signature(kernel.fn).parameters.values())[1:]]
    out = []
    for tree in trees:
        for leaf in leaves(tree):
            spec = leaf.spec.tensor
            items = spec.items if isinstance(spec, TensorSpec) else ()
            out.append((leaf.name, items[0] if items and isinstance(items[0], DType) else None))
    return out


def _read_inputs(kernel: DeviceKernel, inputs: list[str]) -> tuple[list[Any], list[tuple[str, DmBuffer]]]:
    """The arguments of `run`: the `--input` arrays, grouped like the parameters (a tuple
    for a tuple parameter, an instance for a struct); and (name, buffer) of every resident
    DM parameter the kernel writes."""
    arrays = dict(zip((n for n, _ in _parameters(kernel)), bind_inputs(kernel.name, _parameters(kernel), inputs)))
    trees = kernel.param_trees()
    if any(isinstance(t, BadParam) for t in trees):
        return list(arrays.values()), []  # the trace refuses the kernel; `run` reports it
    written: list[tuple[str, DmBuffer]] = []

    def make(leaf: Any) -> Any:
        value = _argument(leaf, arrays[leaf.name])
        if isinstance(value, DmBuffer) and leaf.spec.writable:
            written.append((leaf.name, value))
        return value

    return [build_value(t, make) for t in trees], written


def _argument(leaf: Any, array: np.ndarray) -> Any:
    """The array itself, or for a resident DM parameter a buffer (on the default target's
    device) that starts with the array's contents (docs/parameters.md)."""
    spec = leaf.spec.tensor
    if not (isinstance(spec, TensorSpec) and spec.kind == "dm"):
        return array
    try:
        buf = spec.alloc(Device("rngd"))
        buf.write(array)
    except NpuOptError as e:
        raise _Usage(f"input `{leaf.name}`: {e}") from None
    return buf


def _inout_names(kernel: DeviceKernel) -> list[str]:
    """The path names of the in-out parameters, in order (their final contents are written
    as `<name>.npy`)."""
    try:
        return [leaf.name for tree in kernel.param_trees() for leaf in leaves(tree)
                if leaf.spec.writable and getattr(leaf.spec.tensor, "kind", None) != "dm"]  # not returned by `run`
    except Exception:  # noqa: BLE001 - a broken annotation is reported by the trace
        return []


def bind_inputs(kernel_name: str, params: list[tuple[str, Any]], inputs: list[str]) -> list[np.ndarray]:
    """Host arrays for `NAME=FILE.npy` arguments, in parameter order (`params`: name, dtype);
    a malformed, duplicate, unknown or missing input is a usage error naming it."""
    takes = ", ".join(n for n, _ in params) or "no inputs"
    given: dict[str, str] = {}
    for spec in inputs:
        name, sep, file = spec.partition("=")
        name = name.strip()
        if not sep or not name or not file:
            raise _Usage(f"--input expects NAME=FILE.npy, got {spec!r}")
        if name in given:
            raise _Usage(f"input `{name}` is given twice")
        given[name] = file
    names = [n for n, _ in params]
    extra = [n for n in given if n not in names]
    if extra:
        raise _Usage(f"unknown input `{extra[0]}`: kernel {kernel_name} takes {takes}")
    missing = [n for n in names if n not in given]
    if missing:
        raise _Usage(f"missing input `{missing[0]}`: kernel {kernel_name} takes {takes} "
                     f"(pass --input {missing[0]}=FILE.npy)")
    return [_host_array(_load_npy(name, given[name]), name, dtype) for name, dtype in params]


def _load_npy(name: str, file: str) -> np.ndarray:
    try:
        if not stat.S_ISREG(os.stat(file).st_mode):  # a FIFO or a device would block or never end
            raise _Usage(f"input `{name}`: {file} is not a regular file")
        with open(file, "rb") as f:
            if f.read(len(_NPY_MAGIC)) != _NPY_MAGIC:
                raise _Usage(f"input `{name}`: {file} is not a .npy file")
            f.seek(0)
            _check_npy_size(f, name, file)
            f.seek(0)
            return np.load(f, allow_pickle=False)
    except _Usage:
        raise
    except FileNotFoundError:
        raise _Usage(f"input `{name}`: {file}: no such file") from None
    except (OSError, ValueError, EOFError) as e:
        raise _Usage(f"input `{name}`: cannot read {file}: {e}") from None


def _check_npy_size(f: Any, name: str, file: str) -> None:
    """A header whose shape claims more bytes than the file holds is refused before any
    array is allocated (a forged 2**40 x 128 header was a MemoryError)."""
    version = np.lib.format.read_magic(f)
    reader = {(1, 0): np.lib.format.read_array_header_1_0, (2, 0): np.lib.format.read_array_header_2_0}
    if version not in reader:
        return  # np.load reports the unsupported version itself
    shape, _, dtype = reader[version](f)
    need = math.prod(shape) * dtype.itemsize
    have = os.fstat(f.fileno()).st_size - f.tell()
    if need > have:
        raise _Usage(f"input `{name}`: cannot read {file}: it declares shape {shape} of {dtype} ({need} bytes) "
                     f"but holds only {have} bytes of data")


def _host_array(array: np.ndarray, name: str, dtype: DType | None) -> np.ndarray:
    """Bit patterns (or `.npy`'s raw records of ml_dtypes arrays) of a bf16/f8/f4 parameter
    become the ml_dtypes host form; everything else goes to `run` as read."""
    if dtype not in _BIT_FLOATS:
        return array
    bits = dtype.bits_dtype
    if array.dtype.kind == "V" and array.dtype.itemsize == bits.itemsize and array.dtype.fields is None:
        array = array.view(bits)
    if array.dtype == bits:
        if dtype == DType.F4E2M1 and array.size and int(array.max()) > 0xF:
            raise _Usage(f"input `{name}`: f4e2m1 codes must be 0..15, found {int(array.max())}")
        return array.view(dtype.host_dtype)
    return array


def _out_dir(out_dir: str) -> Path:
    if out_dir == "":
        raise _Usage("-o takes a directory; an empty name would write into the working directory (write -o . for that)")
    dest = Path(out_dir)
    if dest.exists() and not dest.is_dir():
        raise _Usage(f"output directory {out_dir} is a file")
    return dest


# --- running and writing -----------------------------------------------------------------------


class _Internal(Exception):
    """The backend returned something that is not numpy arrays: an npu-opt bug."""


def _execute(kernel: DeviceKernel, arrays: list[np.ndarray], backend: str, numerics: str,
             err: TextIO) -> tuple[int, Any]:
    try:
        return EXIT_OK, run(kernel, *arrays, backend=backend, numerics=numerics)
    except CompileError as e:
        print(render_all(e.diagnostics, "human") if e.diagnostics else f"error[{e.code}]: {e}", file=err)
        codes = {d.code for d in e.diagnostics} or {e.code}
        return (EXIT_ICE if "ICE" in codes else EXIT_USAGE if "USAGE" in codes else EXIT_REFUSED), None
    except NpuOptError as e:
        first = e.message.splitlines()[0] if e.message else type(e).__name__
        print(f"error[{e.code}]: {first}", file=err)
        return exec_status(e.code), None
    except Exception as e:  # noqa: BLE001 - a crash of the backend is an internal error (exit 3)
        print(f"error[ICE]: the {backend} backend raised {type(e).__name__}: {e}; "
              "please report this npu-opt bug", file=err)
        return EXIT_ICE, None


def exec_status(code: str) -> int:
    """The exit status of a run stopped by an error of `code`: 3 for ours (ICE), 2 for an
    input it could not use (USAGE, and the run-time checks of the launch's values such as
    RUNTIME-10 or GATHER-6: `run` and `visa --exec` alike), else 1 (a refused kernel)."""
    if code == "ICE":
        return EXIT_ICE
    info = CODES.get(code)
    return EXIT_USAGE if code == "USAGE" or (info is not None and info.phase == "run") else EXIT_REFUSED


def _results(result: Any) -> list[np.ndarray]:
    if result is None:
        return []
    values = list(result) if isinstance(result, tuple) else [result]
    for v in values:
        if not isinstance(v, np.ndarray):
            raise _Internal(f"the backend returned {a_an(type(v).__name__)}, not a numpy array")
    return values


def _stored(array: np.ndarray) -> np.ndarray:
    """The `.npy` form of a result: ml_dtypes floats as their unsigned bit patterns."""
    raw = _ml_floats().get(array.dtype)
    return np.ascontiguousarray(array).view(raw) if raw is not None else array


def _write_results(result: Any, dest: Path, kernel_name: str, inout: list[str],
                   tuple_result: bool) -> list[tuple[Path, np.ndarray]]:
    """Results as `out.npy` (`out0.npy`, ... for several), then each in-out parameter's
    final contents as `<name>.npy` (`<name>.inout.npy` when a result holds that name)."""
    values = [_stored(v) for v in _results(result)]
    if not values:
        return []
    n = len(values) - len(inout)
    names = ["out.npy"] if n == 1 and not tuple_result else [f"out{i}.npy" for i in range(n)]
    names += [f"{name}.inout.npy" if f"{name}.npy" in names else f"{name}.npy" for name in inout]
    try:
        dest.mkdir(parents=True, exist_ok=True)
        for file, array in zip(names, values):
            _save_atomic(dest / file, array)
    except OSError as e:
        raise _Usage(f"cannot write the results of {kernel_name} into {dest}: {e}") from None
    return [(dest / file, array) for file, array in zip(names, values)]


def _write_resident(resident: list[tuple[str, DmBuffer]], dest: Path, taken: set[str]) -> list[tuple[Path, np.ndarray]]:
    """The final contents of each written resident buffer, in its host form, as `<name>.npy`
    (`<name>.inout.npy` when a result holds that name)."""
    out = []
    for name, buf in resident:
        target = dest / (f"{name}.inout.npy" if f"{name}.npy" in taken else f"{name}.npy")
        array = _stored(buf.read())
        try:
            dest.mkdir(parents=True, exist_ok=True)
            _save_atomic(target, array)
        except OSError as e:
            raise _Usage(f"cannot write the final contents of `{name}` into {dest}: {e}") from None
        out.append((target, array))
    return out


def _save_atomic(target: Path, array: np.ndarray) -> None:
    data = io.BytesIO()
    np.save(data, array, allow_pickle=False)
    write_atomic(target, data.getvalue())
