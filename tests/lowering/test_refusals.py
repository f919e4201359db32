"""Lowering refusals ([L] rules, DTYPE-EMU with target files) and internal compiler errors
(LOWER-2, LOWER-3), and the `npu` backend object."""

from __future__ import annotations

import json
import tomllib
from importlib import resources

import attrs
import pytest

import tu_ops.feed
import tu_ops.lower.build
import tu_ops.lower.dispatch
from backends.base import Backend
from backends.npu import NpuBackend, lower_kernel
from ir import ops as ir
from ir.dtypes import DType
from ir.errors import CompileError, NpuOptError
from tests.backends.examples import FIXTURES, example, load
from tests.lowering.kernels import DTYPES as D
from tests.lowering.kernels import contract_kernel, trf_kernel, trf_pressure_kernel
from tu_ops import ConversionKind, DestKind, FeedElementType, load_target
from tu_ops.lower import EmulateDtypes, Options
from tu_ops.lower.errors import version
from tu_ops.lower.passes import WarningSink


def target_file(tmp_path, name: str, edit) -> object:
    """A target description file under tmp_path: rngd with `edit(data)` applied."""
    data = tomllib.loads((resources.files("tu_ops") / "targets" / "rngd.toml").read_text(encoding="utf-8"))
    data["name"] = name
    edit(data)
    path = tmp_path / f"{name}.json"
    path.write_text(json.dumps(data))
    return load_target(path)


def refusal(kernel, *args, **kwargs):
    with pytest.raises(CompileError) as info:
        lower_kernel(kernel, *args, **kwargs)
    return info.value.diagnostics


# --- MEM-3 / MEM-4 -------------------------------------------------------------------------


def test_r15_is_refused_with_mem3_naming_slice_and_bytes():
    kernel = load(FIXTURES / "refused.py").r15_dm_full
    assert kernel.trace().diagnostics == ()
    (d,) = refusal(kernel)
    assert d.code == "MEM-3" and d.severity == "error"
    assert "DM" in d.message and "slice 0" in d.message
    assert "327680 bytes requested" in d.message and "327680 bytes in use" in d.message
    assert "limit 524288" in d.message
    assert d.stage == "to_dm" and d.file.endswith("refused.py")
    source = (FIXTURES / "refused.py").read_text().splitlines()[d.line - 1]
    assert "dy = y.to_dm" in source and source[d.col - 1:].startswith("to_dm")
    assert d.help and "shrink" in d.help
    assert NpuBackend().diagnostics(kernel)[0].code == "MEM-3"


def small_trf(tmp_path):
    def edit(data):
        data["constants"].update(TRF_BYTES=32768, TRF_LANE_BYTES=4096, TRF_HALF_BYTES=16384)
    return target_file(tmp_path, "small-trf", edit)


def test_trf_pressure_fits_rngd_and_a_small_target_refuses_mem4(tmp_path):
    small = small_trf(tmp_path)
    assert small.constants.TRF_BYTES == 32768
    lowered = lower_kernel(trf_pressure_kernel(3, 2048))            # 3 x 16 KiB in a 64 KiB TRF
    assert sorted(a.base_row for a in lowered.trf_allocations) == [0, 64, 128]
    lower_kernel(trf_pressure_kernel(2, 2048), small)               # 2 x 16 KiB fit 32 KiB
    (d,) = refusal(trf_pressure_kernel(3, 2048), small)
    assert d.code == "MEM-4" and d.stage == "to_trf"
    assert "TRF" in d.message and "slice 0" in d.message and "lanes 0..7" in d.message
    assert "16384 bytes requested" in d.message and "32768 bytes in use" in d.message
    assert "limit 32768" in d.message and "shrink" in d.help
    assert d.line is not None and d.col is not None


def test_a_tensor_larger_than_a_small_targets_trf_is_refused_at_trace_time_not_an_ice(tmp_path):
    """The trace's TRF-2 reads the target's TRF_BYTES (issue 59): the tensor is refused at the
    user's line before the lowering would find it does not fit (MEM-4)."""
    (d,) = refusal(trf_kernel(D["i8"], row_bytes=8192, lanes=8), small_trf(tmp_path))
    assert d.code == "TRF-2" and "32768" in d.message and d.line is not None


def test_trf_allocation_reuses_rows_of_dead_tensors():
    lowered = lower_kernel(example("gemm_i8", "gemm_i8_kernel"))
    assert [a.base_row for a in lowered.trf_allocations] == [0]
    load_op = next(op for op in lowered.ops() if op.MNEMONIC == "trf_load")
    assert load_op.live_rows == ()


# --- DTYPE-EMU / W-DTYPE-EMU ---------------------------------------------------------------


def _mac(data, stream: str, native: bool) -> None:
    for e in data["dtypes"]["mac"]:
        if e["stream"] == stream and e["weight"] == stream:
            e["native"] = native


def test_non_native_pair_without_emulation_path_is_dtype_emu(tmp_path):
    target = target_file(tmp_path, "no-bf16-mac", lambda d: _mac(d, "bf16", False))
    (d,) = refusal(example("gemm_bf16", "gemm_bf16_kernel"), target)
    assert d.code == "DTYPE-EMU" and d.stage == "contract_outer"
    assert "bf16 x bf16" in d.message and "not native" in d.message
    assert d.help and "no-bf16-mac" in d.help


def test_dtype_emu_help_shows_the_explicit_stage(tmp_path):
    target = target_file(tmp_path, "no-f8-mac", lambda d: _mac(d, "f8e5m2", False))
    (d,) = refusal(contract_kernel(D["f8e5m2"], D["f8e5m2"], 2), target)
    assert d.code == "DTYPE-EMU" and "`.fetch_table_lookup(bf16)`" in d.help


def emulating(tmp_path):
    def edit(data):
        _mac(data, "f8e5m2", False)
        data["dtypes"]["fetch_table_lookup"].append({"from": "f8e5m2", "to": "f8e4m3", "native": True})
        data["emulation"] = [{"table": "mac", "entry": ["f8e5m2", "f8e5m2", "f32"],
                              "insert": "fetch_table_lookup", "to": "f8e4m3"}]
    return target_file(tmp_path, "f8-emulated", edit)


def test_compat_inserts_the_lookup_and_warns(tmp_path):
    target = emulating(tmp_path)
    kernel = contract_kernel(D["f8e5m2"], D["f8e5m2"], 2, weight_context="main")
    traced = kernel.trace(target).kernel
    sink = WarningSink()
    out = EmulateDtypes(Options(target=target), sink).run(traced)
    lookups = [op for op in out.ops if isinstance(op, ir.FetchTableLookup)]
    assert [op.dtype for op in lookups] == [DType.F8E4M3, DType.F8E4M3]
    for lookup in lookups:
        fetch = out.ops[out.ops.index(lookup) - 1]
        assert isinstance(fetch, ir.Fetch) and lookup.input == fetch.result and lookup.loc == fetch.loc
    outer = next(op for op in out.ops if isinstance(op, ir.ContractOuter))
    assert (outer.input.type.dtype, outer.trf.type.dtype) == (DType.F8E4M3, DType.F8E4M3)
    assert [w.code for w in sink.warnings] == ["W-DTYPE-EMU", "W-DTYPE-EMU"]
    assert all(w.stage == "fetch" and "fetch_table_lookup(f8e4m3)" in w.message for w in sink.warnings)


def test_compat_lowering_records_the_inserted_lookup(tmp_path):
    target = emulating(tmp_path)
    lowered = lower_kernel(contract_kernel(D["f8e5m2"], D["f8e5m2"], 2, weight_context="main"), target)
    assert [w.code for w in lowered.warnings] == ["W-DTYPE-EMU", "W-DTYPE-EMU"]
    feeds = [op for op in lowered.ops() if op.MNEMONIC == "feed_buffer"]
    assert all(f.element_type is FeedElementType.F8E4M3 and len(f.conversions) == 1 for f in feeds)
    diags = NpuBackend().diagnostics(contract_kernel(D["f8e5m2"], D["f8e5m2"], 2, weight_context="main"), target)
    assert [x.code for x in diags] == ["W-DTYPE-EMU", "W-DTYPE-EMU"]


def test_compat_off_refuses_the_emulated_path(tmp_path):
    target = emulating(tmp_path)
    kernel = contract_kernel(D["f8e5m2"], D["f8e5m2"], 2, weight_context="main")
    (d,) = refusal(kernel, target, Options(target=target, compat=False))
    assert d.code == "DTYPE-EMU" and "compat mode is off" in d.message and "--no-compat" in d.help
    assert NpuBackend().diagnostics(kernel, target, compat=False)[0].code == "DTYPE-EMU"


def test_emulation_in_the_sub_context_is_refused(tmp_path):
    diags = refusal(contract_kernel(D["f8e5m2"], D["f8e5m2"], 2), emulating(tmp_path))
    assert diags[0].code == "DTYPE-EMU" and "ctx.sub" in diags[0].message
    assert all(d.severity == "error" for d in diags)


def test_a_pair_the_target_lacks_is_refused_by_its_stage_rule(tmp_path):
    def edit(data):
        data["dtypes"]["mac"] = [e for e in data["dtypes"]["mac"] if e["stream"] != "bf16"]
    (d,) = refusal(example("gemm_bf16", "gemm_bf16_kernel"), target_file(tmp_path, "no-bf16", edit))
    assert d.code == "OUTER-1" and d.stage == "contract_outer"


# --- LOWER-3: internal compiler errors -----------------------------------------------------


def _assert_ice(d, rule: str | None) -> None:
    assert d.code == "ICE" and d.severity == "error"
    if rule is not None:
        assert f"failing rule: {rule}" in d.notes
    assert d.help and version() in d.help and "report" in d.help


def test_a_bad_lowered_field_is_an_ice_not_a_refusal(monkeypatch):
    real = tu_ops.lower.build.lower_feed

    def bad_feed(*args, **kwargs):
        feed = real(*args, **kwargs)
        return attrs.evolve(feed, flits_per_packet=feed.flits_per_packet + 1)

    monkeypatch.setattr(tu_ops.lower.build, "lower_feed", bad_feed)
    (d,) = refusal(example("gemm_i8", "gemm_i8_kernel"))
    _assert_ice(d, "FEED-3")
    assert d.stage == "begin" and d.file.endswith("gemm_i8.py") and d.line is not None


def test_the_v03_failure_would_be_an_ice(monkeypatch):
    """docs/ci.md: if the weight FeedBuffer of example 4 were refused by its own
    verifier (the reference's RawInt8 bug), the kernel is an ICE, never a success."""
    trf_load = DestKind.TRF_LOAD.op_class
    monkeypatch.setattr(trf_load, "FEED_ELEMENTS", trf_load.FEED_ELEMENTS - {FeedElementType.RawInt8})
    kernel = example("gemm_i8", "gemm_i8_kernel")
    (d,) = refusal(kernel)
    _assert_ice(d, "FEED-2")
    assert NpuBackend().diagnostics(kernel)[0].code == "ICE"


def test_an_exception_inside_lowering_is_an_ice(monkeypatch):
    def boom(*args, **kwargs):
        raise RuntimeError("lowering bug")

    monkeypatch.setitem(tu_ops.lower.dispatch.LOWERINGS, ir.ToTrf, boom)
    (d,) = refusal(example("gemm_i8", "gemm_i8_kernel"))
    _assert_ice(d, None)
    assert any("RuntimeError: lowering bug" in n for n in d.notes)
    assert any("lower-ops" in n for n in d.notes)


# --- the backend object --------------------------------------------------------------------


def test_npu_backend_follows_the_protocol():
    backend = NpuBackend()
    assert isinstance(backend, Backend) and backend.name == "npu" and backend.executes is False
    assert backend.diagnostics(example("gemm_i8", "gemm_i8_kernel")) == ()
    with pytest.raises(NpuOptError) as info:
        backend.run(example("gemm_i8", "gemm_i8_kernel"), [])
    assert info.value.code == "USAGE"


def test_trace_refusals_come_first():
    kernel = load(FIXTURES / "refused.py").r01_half_flit
    assert [d.code for d in NpuBackend().diagnostics(kernel)] == ["COLLECT-2"]
    with pytest.raises(CompileError) as info:
        lower_kernel(kernel)
    assert info.value.diagnostics[0].code == "COLLECT-2"


def test_lower_kernel_accepts_a_trace_result_and_a_kernel():
    kernel = example("gemm_i8", "gemm_i8_kernel")
    options = Options(axes=kernel.axes)
    a = lower_kernel(kernel.trace(), "rngd", options)
    b = lower_kernel(kernel.trace().kernel, "rngd", options)
    assert a == b == lower_kernel(kernel)  # the warnings and the verify time are not compared
