"""`npu-opt synth` on two spellings whose kernel is a GEMM over a host-side view of the user's
arrays (docs/synth.md, "Merged indices and operands stored transposed"): a weight shared over
a batch, `out[b,m,n] = a[b,m,k] * w[n,k]`, is a GEMM whose rows are `b` and `m` merged; an
operand stored with the contracted index first (numpy's `a @ b`, `out[m,n] = a[m,k] * b[k,n]`)
is transposed on the host by `Contraction.pad`. Seeded shapes, each winner equal to an
independent numpy einsum on the cpu backend and the VISA interpreter."""

from __future__ import annotations

import json
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest

from backends import get_backend
from driver.cli import main
from driver.discover import load_file
from synth.offer import proxy_sizes, runs_in_full
from synth.space import points, source
from synth.spec import Contraction, contraction

SHARED = "out[b,m,n] = a[b,m,k] * w[n,k]"
NUMPY = "out[m,n] = a[m,k] * b[k,n]"


def _draw(seed: int, einsum: str) -> tuple[str, dict[str, int]]:
    rng = np.random.default_rng(seed)
    dtype = ["i8:i32", "bf16:f32"][seed % 2]
    # rows 48 (padded to 64) where 96 was drawn: a row count of three 32-row blocks has a
    # space of 744 candidates (several CPU-seconds a search) and is test_synth_small's case
    sizes = dict(m=int(rng.choice([32, 40, 64, 48])), n=int(rng.choice([32, 64, 100])),
                 k=int(rng.choice([32, 64])))
    if "b[" in einsum.split("=")[0] or einsum == SHARED:
        sizes["b"] = int(rng.integers(1, 4))
    return dtype, sizes


def _check(einsum: str, seed: int, tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    dtype, sizes = _draw(seed, einsum)
    out = tmp_path / "out"
    text = ",".join(f"{k}={v}" for k, v in sizes.items())
    assert main(["synth", einsum, "--dtype", dtype, "--sizes", text, "-o", str(out), "--top", "1"]) == 0, \
        capsys.readouterr().err
    data = json.loads((out / "synth.json").read_text())
    assert data["winner"] is not None and data["refused_by_rule"] == {}
    module, error = load_file(out / "synth_kernel.py")
    assert error is None
    spec = contraction(einsum, dtype=dtype, sizes=sizes)
    _run_both(module, spec, *_numpy(einsum, sizes, spec, np.random.default_rng(100 + seed)))


def _numpy(einsum: str, sizes: dict[str, int], spec: Contraction, rng: np.random.Generator
           ) -> tuple[list[np.ndarray], np.ndarray]:
    """Seeded operands of the given sizes in the user's layout (and a bias `c[n]` when the
    einsum adds one) and the result numpy's einsum makes of them, ReLU applied with the bias."""
    din, dout = spec.host_dtypes()
    lhs, rhs = einsum.replace(" ", "").split("=")
    bias = "+c[n]" in rhs
    rhs = rhs.removeprefix("relu(").split("+")[0]
    letters = [s[s.index("[") + 1:s.index("]")].replace(",", "") for s in [lhs, *rhs.split("*")]]
    ops = [rng.integers(-128, 128, tuple(sizes[i] for i in idx), dtype=np.int8) if din == np.int8
           else rng.integers(-8, 9, tuple(sizes[i] for i in idx)).astype(din) for idx in letters[1:]]
    wide = [x.astype(np.int64 if x.dtype == np.int8 else np.float64) for x in ops]
    want = np.einsum(f"{letters[1]},{letters[2]}->{letters[0]}", *wide)
    if bias:
        c = rng.integers(-5000, 5000, sizes["n"]).astype(np.int32)
        want = np.maximum(want + c, 0)
        ops.append(c)
    return ops, want.astype(dout)


def _run_both(module: ModuleType, spec: Contraction, ops: list[np.ndarray], want: np.ndarray) -> None:
    for backend in ("cpu", "visa"):
        result = np.zeros(spec.shape(spec.result[1]), spec.host_dtypes()[1])
        get_backend(backend).run(module.synth_kernel, (*spec.pad(*ops), result))
        assert np.array_equal(spec.unpad(result), want), backend


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_a_weight_shared_over_a_batch_is_a_gemm_of_the_merged_rows(seed: int, tmp_path: Path,
                                                                   capsys: pytest.CaptureFixture) -> None:
    _check(SHARED, seed, tmp_path, capsys)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_numpys_layout_is_transposed_on_the_host_and_equals_numpy(seed: int, tmp_path: Path,
                                                                   capsys: pytest.CaptureFixture) -> None:
    _check(NUMPY, seed, tmp_path, capsys)


def test_the_kernel_sees_the_merged_rows_and_the_transposed_operand() -> None:
    shared = contraction(SHARED, sizes=dict(b=3, m=40, n=64, k=32))
    assert shared.form == "gemm" and shared.result[1] == ("bm", "n") and shared.operands[0] == ("a", ("bm", "k"))
    assert shared.padded["bm"] == 128 and shared.shape(("bm", "k")) == (128, 32)
    plain = contraction(NUMPY, sizes=dict(m=32, n=64, k=32))
    assert plain.operands == (("a", ("m", "k")), ("b", ("n", "k"))) and plain.transposed == ("b",)


def test_a_merged_spelling_too_large_to_run_is_checked_at_proxy_sizes_it_accepts() -> None:
    spec = contraction(SHARED, sizes=dict(b=16, m=1024, n=512, k=256))
    assert not runs_in_full(spec)
    point = {lever: values[0] for lever, values in points(spec).items()}
    sizes = proxy_sizes(spec, point)
    proxy = contraction(SHARED, sizes=sizes)  # the proxy is the user's spelling at smaller sizes
    assert set(sizes) == {"b", "m", "n", "k"} and runs_in_full(proxy)
    assert sizes["b"] == 1 and proxy.padded["bm"] <= spec.padded["bm"]


def test_the_kernel_file_says_what_the_host_does() -> None:
    shared = source(contraction(SHARED, sizes=dict(b=2, m=64, n=64, k=32)),
                    {lever: values[0] for lever, values in points(contraction(SHARED, sizes=dict(
                        b=2, m=64, n=64, k=32))).items()})
    assert "Host-side view: b and m are merged into one row index bm (BM=128)" in shared
    spec = contraction(NUMPY, sizes=dict(m=64, n=64, k=32))
    plain = source(spec, {lever: values[0] for lever, values in points(spec).items()})
    assert "Host-side transpose: b[k,n] is stored with the contracted index first" in plain
    usual = contraction("out[m,n] = a[m,k] * w[n,k]", sizes=dict(m=64, n=64, k=32))
    assert "Host-side" not in source(usual, {lever: values[0] for lever, values in points(usual).items()})


# other spellings of the two views: the weight first, the merged rows last in the result, both
# operands k-first, a bias and ReLU after the merged GEMM, the merged rows split over two chips
# (rows that pad to 64 or 128: 96 unpadded rows, three 32-row blocks, make spaces of 600-870 candidates)
VARIANTS = [
    ("out[b,m,n] = w[n,k] * a[b,m,k]", dict(b=2, m=48, n=64, k=32), []),
    ("out[n,b,m] = a[b,m,k] * w[n,k]", dict(b=3, m=40, n=40, k=64), []),
    ("out[b,m,n] = a[k,b,m] * w[k,n]", dict(b=2, m=40, n=32, k=32), []),
    ("out[m,n] = a[k,m] * b[k,n]", dict(m=40, n=32, k=64), []),
    ("out[b,m,n] = relu(a[b,m,k] * w[n,k] + c[n])", dict(b=2, m=64, n=64, k=32), []),
    ("out[b,m,n] = a[b,m,k] * w[n,k]", dict(b=2, m=64, n=64, k=32), ["--target", "rngd-2chip"]),
]


@pytest.mark.parametrize("einsum, sizes, extra", VARIANTS, ids=[str(n) for n in range(len(VARIANTS))])
def test_other_spellings_of_the_views_equal_numpy(einsum: str, sizes: dict[str, int], extra: list[str],
                                                  tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    out = tmp_path / "out"
    text = ",".join(f"{k}={v}" for k, v in sizes.items())
    assert main(["synth", einsum, "--sizes", text, "-o", str(out), "--top", "1", *extra]) == 0, \
        capsys.readouterr().err
    module, error = load_file(out / "synth_kernel.py")
    assert error is None
    spec = contraction(einsum, sizes=sizes, chips=2 if extra else 1)
    _run_both(module, spec, *_numpy(einsum, sizes, spec, np.random.default_rng(5)))
