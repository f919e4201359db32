"""`npu-opt compile`: artifacts, .fail files, manifest, exit codes, reproducibility, cache."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from driver.cli import main

ROOT = Path(__file__).parents[2]
EXAMPLES = ROOT / "examples"
FIXTURES = sorted(str(p) for p in (ROOT / "tests" / "fixtures").glob("refused*.py"))
EXAMPLE_KERNELS = {"dot_product_kernel", "gemv_kernel", "gemm_kernel", "gemm_i8_kernel",
                   "gemm_bf16_kernel", "row_sum_kernel", "fetch_commit_simple", "transpose_tile",
                   "gemm_i8_requant_kernel", "gemm_bf16_relu_kernel", "gemv_switch_kernel", "gemm_tiled", "residual_add_kernel", "leaky_relu_kernel",
                   "dense_bf16_kernel", "softmax_rows_kernel", "rmsnorm_kernel",
                   "slice_sum_i32", "slice_sum_f32",
                   "paged_kv_gather", "embedding_lookup", "two_chip_add", "paged_kv_cache",   # examples/topology/
                   "take_along_axis", "put_along_axis",
                   "varlen_pack", "masked_softmax_kernel", "tune_gemm", "tune_gemm_bf16",
                   "lifted_widen", "every_dimension",   # examples/fetch_lift.py
                   "transpose_tile_wide", "transpose_i8_wide",   # examples/transpose_wide_rows.py
                   "chip_reduce_scatter", "chip_all_gather", "chip_ring_all_reduce", "chip_butterfly_all_reduce",
                   "cluster_reduce_scatter", "cluster_all_gather", "cluster_all_reduce",   # examples/topology/*_collectives.py
                   "moe_experts", "paged_kv_decode", "kv_page_bump",   # examples/runtime/
                   "gemm_rolled",   # examples/loops/
                   "mlp_up", "mlp_down",   # examples/interop/mlp_kernels.py
                   "resident_accumulate", "resident_readout"}   # examples/resident_accumulator.py


def files(directory: Path, suffix: str) -> set[str]:
    return {p.stem for p in directory.glob(f"*{suffix}")}


@pytest.fixture(scope="module")
def compiled_examples(tmp_path_factory):
    out = tmp_path_factory.mktemp("examples_out")
    status = main(["compile", str(EXAMPLES), "-o", str(out), "--jobs", "1"])
    return status, out


def test_examples_compile_to_one_visa_each_and_a_manifest(compiled_examples):
    status, out = compiled_examples
    assert status == 0
    assert files(out, ".visa") == EXAMPLE_KERNELS
    assert files(out, ".fail") == set()
    manifest = json.loads((out / "manifest.json").read_text())
    assert list(manifest) == ["npu_opt_version", "target", "kernels"]
    assert manifest["target"]["name"] == "rngd"
    for entry in manifest["kernels"]:
        assert list(entry) == ["name", "qualname", "file", "status", "code", "artifact", "sha256", "timings_ms",
                               "makespan"]
        assert isinstance(entry["makespan"], int) and entry["makespan"] > 0
        assert entry["status"] == "ok" and entry["code"] is None
        data = (out / entry["artifact"]).read_bytes()
        assert hashlib.sha256(data).hexdigest() == entry["sha256"]
        assert data.startswith(b"visa 2\n") and data.endswith(b"\n")


def test_refusal_fixtures_exit_1_with_fail_files(tmp_path):
    assert main(["compile", *FIXTURES, "-o", str(tmp_path), "--jobs", "1"]) == 1
    fails = files(tmp_path, ".fail")
    assert len(fails) == 22 and files(tmp_path, ".visa") == set()
    r15 = (tmp_path / "r15_dm_full.fail").read_text()
    assert r15.startswith("error[MEM-3]") and "--- json" in r15
    r01 = (tmp_path / "r01_half_flit.fail").read_text()
    human, _, js = r01.partition("--- json\n")
    assert "refused.py:14:11" in human
    obj = json.loads(js.splitlines()[0])
    assert obj["code"] == "COLLECT-2" and obj["line"] == 14 and obj["col"] == 11
    manifest = json.loads((tmp_path / "manifest.json").read_text())
    codes = {e["name"]: e["code"] for e in manifest["kernels"]}
    assert codes["r15_dm_full"] == "MEM-3" and codes["r07_time_order"] == "TIME-2"


def test_examples_then_fixtures_into_one_directory_keep_every_visa(tmp_path, compiled_examples):
    _, out = compiled_examples
    target = tmp_path / "both"
    shutil.copytree(out, target)
    assert main(["compile", *FIXTURES, "-o", str(target), "--jobs", "1"]) == 1
    assert files(target, ".visa") == EXAMPLE_KERNELS


def test_stale_files_of_the_other_kind_are_removed(tmp_path):
    src = tmp_path / "k.py"
    good = (EXAMPLES / "widening_copy.py").read_text()
    src.write_text(good)
    out = tmp_path / "out"
    assert main(["compile", str(src), "-o", str(out)]) == 0
    assert files(out, ".visa") == {"fetch_commit_simple"}
    src.write_text(good.replace('.commit_trim(m("B"))', '.commit_trim(m("B = 1"))'))
    assert main(["compile", str(src), "-o", str(out)]) == 1
    assert files(out, ".visa") == set() and files(out, ".fail") == {"fetch_commit_simple"}
    src.write_text(good)
    assert main(["compile", str(src), "-o", str(out)]) == 0
    assert files(out, ".fail") == set() and files(out, ".visa") == {"fetch_commit_simple"}


def test_forced_internal_error_exits_3_with_a_report_request(tmp_path, monkeypatch):
    import backends.npu

    def broken(*args, **kwargs):
        raise RuntimeError("forced failure for the test")

    monkeypatch.setattr(backends.npu, "lower_kernel", broken)
    assert main(["compile", str(EXAMPLES / "gemm_i8.py"), "-o", str(tmp_path), "--jobs", "1"]) == 3
    text = (tmp_path / "gemm_i8_kernel.fail").read_text()
    assert text.startswith("error[ICE]") and "please report" in text


def test_ice_wins_over_refusal(tmp_path, monkeypatch):
    import backends.npu

    real = backends.npu.lower_kernel

    def flaky(kernel, *args, **kwargs):
        if kernel.name == "gemm_kernel":
            raise RuntimeError("forced")
        return real(kernel, *args, **kwargs)

    monkeypatch.setattr(backends.npu, "lower_kernel", flaky)
    assert main(["compile", str(EXAMPLES / "gemm.py"), FIXTURES[0], "-o", str(tmp_path), "--jobs", "1"]) == 3


def test_file_that_fails_to_import_is_exit_2_and_the_rest_compile(tmp_path):
    kernels = tmp_path / "kernels"
    kernels.mkdir()
    shutil.copy(EXAMPLES / "gemv.py", kernels / "gemv.py")
    (kernels / "broken.py").write_text("import no_such_module_anywhere\n")
    out = tmp_path / "out"
    assert main(["compile", str(kernels), "-o", str(out)]) == 2
    assert files(out, ".visa") == {"gemv_kernel"}
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["errors"][0]["file"].endswith("broken.py") and manifest["errors"][0]["code"] == "USAGE"


def test_typecheck_backend_writes_nothing(tmp_path):
    out = tmp_path / "none"
    assert main(["compile", str(EXAMPLES), "-o", str(out), "--backend", "typecheck"]) == 0
    assert not out.exists() or not any(out.iterdir())


def test_two_runs_and_job_counts_give_identical_bytes(tmp_path, compiled_examples):
    _, first = compiled_examples
    second = tmp_path / "second"
    assert main(["compile", str(EXAMPLES), "-o", str(second), "--jobs", "2"]) == 0
    for name in EXAMPLE_KERNELS:
        assert (first / f"{name}.visa").read_bytes() == (second / f"{name}.visa").read_bytes()


def test_identical_bytes_across_hash_seeds(tmp_path, compiled_examples):
    _, first = compiled_examples
    out = tmp_path / "seeded"
    env = dict(os.environ, PYTHONHASHSEED="4242")
    subprocess.run([sys.executable, "-m", "npu_opt", "compile", str(EXAMPLES / "gemm_i8.py"), "-o", str(out)],
                   env=env, check=True, capture_output=True)
    assert (out / "gemm_i8_kernel.visa").read_bytes() == (first / "gemm_i8_kernel.visa").read_bytes()


def test_unchanged_recompile_is_a_cache_hit(tmp_path, monkeypatch):
    out = tmp_path / "cached"
    assert main(["compile", str(EXAMPLES / "gemv.py"), "-o", str(out)]) == 0
    before = (out / "gemv_kernel.visa").read_bytes()
    import driver.compile_command as cc

    def must_not_run(*args, **kwargs):
        raise AssertionError("the cache should have answered")

    monkeypatch.setattr(cc, "compile_kernel", must_not_run)
    assert main(["compile", str(EXAMPLES / "gemv.py"), "-o", str(out)]) == 0
    assert (out / "gemv_kernel.visa").read_bytes() == before
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["kernels"][0]["timings_ms"] == {}


def test_no_partial_files_are_left(tmp_path, compiled_examples):
    _, out = compiled_examples
    assert not [p for p in out.iterdir() if p.name.endswith(".tmp")]
