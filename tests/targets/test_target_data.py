"""Targets are data (issue 59, item 1): every trace rule reads the constants of the target it
checks against, a variant file states only what differs from its base, and a file in
tu_ops/targets/ is all a new shipped target takes."""

from __future__ import annotations

import numpy as np
import pytest

import npu_opt
from npu_opt import *  # noqa: F403 - the DSL, as a kernel file writes it
from tu_ops import rngd
from tu_ops.target import BUILTIN_TARGETS, load_target, target_sha256
from tu_ops.target_file import target_to_data

# 1 MiB of i8 in one slice: twice rngd's 512 KiB DM, exactly the DM of the variant below
axes(K=1 << 20)
_ONE, _CLUSTER, _SLICE = m("1"), m("1 # 2"), m("1 # 64")


@device(chip=1)
def copy_big(ctx: Context, x: HbmTensor[i8, _ONE, m("K")]) -> HbmTensor[i8, _ONE, m("K")]:
    d = x.to_dm(ctx.tdma, DmTensor[i8, _ONE, _CLUSTER, _SLICE, m("K")])
    return d.to_hbm(ctx.tdma)


BIG_DM = """\
schema = 1
base = "rngd"
name = "rngd-bigdm"
description = "rngd with twice the DM per slice"

[constants]
DM_SLICE_BYTES = 1048576
"""


@pytest.fixture
def big_dm(tmp_path):
    path = tmp_path / "bigdm.toml"
    path.write_text(BIG_DM)
    return path


def test_the_variant_holds_its_base_and_the_keys_it_states(big_dm):
    t = load_target(big_dm)
    assert t.name == "rngd-bigdm" and t.constants.DM_SLICE_BYTES == 1 << 20
    base, mine = target_to_data(rngd()), target_to_data(t)
    differs = {(k, kk) for k in base for kk in (base[k] if isinstance(base[k], dict) else [None])
               if (base[k].get(kk) if kk is not None else base[k]) != (mine[k].get(kk) if kk is not None else mine[k])}
    assert differs == {("name", None), ("description", None), ("constants", "DM_SLICE_BYTES")}
    # a variant is named in an artifact by the hash of what it resolves to
    assert t.file_sha256 is None and target_sha256(t) != target_sha256(rngd())


def test_a_variant_of_a_variant_and_a_circle(tmp_path, big_dm):
    (tmp_path / "bigger.toml").write_text('schema = 1\nbase = "bigdm.toml"\nname = "bigger"\n'
                                          '[constants]\nVRF_BYTES = 16384\n')
    t = load_target(tmp_path / "bigger.toml")
    assert (t.constants.DM_SLICE_BYTES, t.constants.VRF_BYTES, t.description) == (
        1 << 20, 16384, "rngd with twice the DM per slice")
    (tmp_path / "a.toml").write_text('schema = 1\nbase = "b.toml"\nname = "a"\n')
    (tmp_path / "b.toml").write_text('schema = 1\nbase = "a.toml"\nname = "b"\n')
    with pytest.raises(npu_opt.NpuOptError, match="circle"):
        load_target(tmp_path / "a.toml")
    (tmp_path / "c.toml").write_text('schema = 1\nbase = "nowhere"\nname = "c"\n')
    with pytest.raises(npu_opt.NpuOptError, match="key `base`"):
        load_target(tmp_path / "c.toml")
    (tmp_path / "d.toml").write_text('schema = 1\nbase = "rngd"\nname = "d"\n[constants]\nDM_BYTES = 1\n')
    with pytest.raises(npu_opt.NpuOptError, match="constants.DM_BYTES"):
        load_target(tmp_path / "d.toml")


def test_rngd_refuses_the_tensor_at_trace_time():
    report = npu_opt.check(copy_big)
    assert [d.code for d in report.diagnostics] == ["DMA-3"]
    assert "DM holds 524288" in report.diagnostics[0].message


def test_a_target_with_twice_the_dm_takes_it_end_to_end(big_dm):
    assert npu_opt.check(copy_big, target=big_dm).ok
    assert npu_opt.check(copy_big, target=load_target(big_dm)).ok
    artifact = npu_opt.compile_api.compile(copy_big, target=big_dm)
    assert 'target "rngd-bigdm"' in artifact.text
    x = (np.arange(1 << 20) % 251 - 125).astype(np.int8)
    for backend in ("cpu", "visa"):
        out = npu_opt.run(copy_big, x, backend=backend, target=str(big_dm))
        np.testing.assert_array_equal(np.asarray(out), x)


def test_the_shipped_targets_are_the_files_of_tu_ops_targets():
    from importlib import resources

    names = {f.name[:-5] for f in (resources.files("tu_ops") / "targets").iterdir()
             if f.name.endswith(".toml") and not f.name.endswith(".schedule.toml")}
    assert set(BUILTIN_TARGETS) == names
