"""Resident DM parameters (docs/parameters.md): SRAM a `DmTensor[...].alloc(device)` buffer
keeps across launches, on both executing backends against numpy oracles, the launch and
trace refusals with their codes, and the `dm[...] at N` signature of the VISA text."""

from __future__ import annotations

import io
import re

import ml_dtypes
import numpy as np
import pytest

import npu_opt
from backends.visa_backend import VisaBackend
from driver.run_command import run_command
from ir.errors import NpuOptError
from tests.params import resident_kernels as k
from tests.params.data import BACKENDS
from visa import parse_visa
from visa.interp import execute_inout
from visa.schedule.rates import builtin_rates
from visa.schedule.steps import build_steps
from tu_ops.target import rngd
from visa.printer import print_artifact
from visa.verify import verify_text

RNG = np.random.default_rng(27)
SHAPE = (512, 16)
HOST = (1, 1, 64, 8, 16)  # Chip 1, Cluster `1 # 2` (one live), Slice S / 8, then S % 8 and H


def batch(lo: int = -1000, hi: int = 1000) -> np.ndarray:
    return RNG.integers(lo, hi, SHAPE, dtype=np.int32)


def host(a: np.ndarray) -> np.ndarray:
    """The host form of a (S, H) array held as `Rows`: row s sits at slice s // 8, cell s % 8."""
    return a.reshape(HOST)


def fresh(target: str = "rngd", spec=k.Rows) -> npu_opt.DmBuffer:
    return spec.alloc(npu_opt.Device(target))


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_resident_accumulator_sums_every_launch(backend):
    acc = fresh()
    np.testing.assert_array_equal(acc.read(), np.zeros(HOST, np.int32))  # a new buffer reads zero
    xs = [batch() for _ in range(3)]
    for x in xs:
        assert npu_opt.run(k.add_into, x, acc, backend=backend) is None  # a resident buffer is not returned
    want = xs[0] + xs[1] + xs[2]
    np.testing.assert_array_equal(acc.read(), host(want))
    np.testing.assert_array_equal(npu_opt.run(k.read_out, acc, backend=backend), want)


def test_cpu_and_visa_leave_the_same_bits():
    xs = [batch(-2**31, 2**31 - 1) for _ in range(2)]  # sums that wrap
    bufs = []
    for backend in BACKENDS:
        acc = fresh()
        for x in xs:
            npu_opt.run(k.add_into, x, acc, backend=backend)
        bufs.append(acc.read())
    np.testing.assert_array_equal(bufs[0], bufs[1])
    want = (xs[0].astype(np.int64) + xs[1]).astype(np.int32)  # i32 add, two's complement wrap
    np.testing.assert_array_equal(bufs[0], host(want))


@pytest.mark.parametrize("backend", BACKENDS)
def test_host_write_then_two_resident_parameters(backend):
    w, start, x = batch(), batch(), batch()
    wbuf, acc = fresh(), fresh()
    wbuf.write(host(w))
    acc.write(host(start))
    out = npu_opt.run(k.add_resident, x, wbuf, acc, backend=backend)
    np.testing.assert_array_equal(out, x + w)
    np.testing.assert_array_equal(acc.read(), host(start + w))
    np.testing.assert_array_equal(wbuf.read(), host(w))  # read only: unchanged
    npu_opt.run(k.add_resident, x, wbuf, acc, backend=backend)  # the second launch sees the first's write
    np.testing.assert_array_equal(acc.read(), host(start + 2 * w))


@pytest.mark.parametrize("backend", BACKENDS)
def test_one_buffer_for_two_read_only_parameters(backend):
    a = batch()
    buf = fresh()
    buf.write(host(a))
    np.testing.assert_array_equal(npu_opt.run(k.sum_two, buf, buf, backend=backend), 2 * a)


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_launch_writes_twice_and_reads_its_own_write(backend):
    start, x = batch(), batch()
    acc = fresh()
    acc.write(host(batch()))  # overwritten by the launch's first write
    npu_opt.run(k.load_then_bump, start, x, acc, backend=backend)
    np.testing.assert_array_equal(acc.read(), host(start + x))


@pytest.mark.parametrize("backend", BACKENDS)
def test_an_unwritten_mut_buffer_keeps_its_contents(backend):
    a = batch()
    acc = fresh()
    acc.write(host(a))
    np.testing.assert_array_equal(npu_opt.run(k.untouched, acc, backend=backend), a)
    np.testing.assert_array_equal(acc.read(), host(a))


@pytest.mark.parametrize("backend", BACKENDS)
def test_memset_of_a_tile_writes_only_the_tile(backend):
    a = batch()
    acc = fresh()
    acc.write(host(a))
    npu_opt.run(k.fill_half, acc, backend=backend)
    want = a.copy()
    want[:, :8] = 7
    np.testing.assert_array_equal(acc.read(), host(want))


def test_read_gives_a_copy_and_write_checks_the_host_form():
    acc = fresh()
    acc.read()[...] = 5
    assert not acc.read().any()
    with pytest.raises(NpuOptError) as e:
        acc.write(np.zeros(SHAPE, np.int32))
    assert e.value.code == "USAGE" and "(1, 1, 64, 8, 16)" in str(e.value)
    with pytest.raises(NpuOptError) as e:
        acc.write(np.zeros(HOST, np.int8))
    assert e.value.code == "USAGE"


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_buffer_over_two_chips_holds_each_chip_s_rows(backend):
    a = RNG.uniform(-1, 1, (2, *SHAPE)).astype(ml_dtypes.bfloat16)  # chip c holds a[c]
    buf = fresh(spec=k.TwoChips)
    assert buf.shape == (2, *HOST[1:])
    buf.write(a.view(np.uint16).reshape(buf.shape))  # bit patterns, read back as bfloat16
    assert buf.read().dtype == ml_dtypes.bfloat16
    got = npu_opt.run(k.two_chip_read, buf, backend=backend)
    np.testing.assert_array_equal(np.asarray(got).view(np.uint16), a.view(np.uint16))


# --- refusals -------------------------------------------------------------------------

def test_writing_a_read_only_resident_parameter_is_param_1():
    (d,) = npu_opt.check(k.write_read_only).diagnostics
    assert d.code == "PARAM-1" and "`acc`" in d.message and d.line == k.write_read_only.line + 2


def test_resident_parameters_past_a_slice_are_resident_4_at_the_parameter():
    (d,) = npu_opt.check(k.too_big).diagnostics
    assert d.code == "RESIDENT-4" and "560000" in d.message and d.line == k.too_big.line + 2  # `b`'s line


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("case", ["array", "other type", "buffer for hbm"])
def test_an_argument_that_is_not_the_parameter_s_buffer_is_resident_1(backend, case):
    x, acc = batch(), fresh()
    args = {"array": (x, host(batch())), "other type": (x, fresh(spec=k.Wide)), "buffer for hbm": (acc, acc)}[case]
    before = acc.read()
    with pytest.raises(NpuOptError) as e:
        npu_opt.run(k.add_into, *args, backend=backend)
    assert e.value.code == "RESIDENT-1"
    np.testing.assert_array_equal(acc.read(), before)


@pytest.mark.parametrize("backend", BACKENDS)
def test_one_buffer_bound_to_a_writable_and_another_parameter_is_resident_2(backend):
    acc = fresh()
    with pytest.raises(NpuOptError) as e:
        npu_opt.run(k.add_resident, batch(), acc, acc, backend=backend)
    assert e.value.code == "RESIDENT-2" and "`acc`" in str(e.value)


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_buffer_of_another_device_is_resident_3(backend):
    acc = fresh("rngd-2chip")
    with pytest.raises(NpuOptError) as e:
        npu_opt.run(k.add_into, batch(), acc, backend=backend)
    assert e.value.code == "RESIDENT-3"


def test_alloc_takes_a_device():
    with pytest.raises(NpuOptError) as e:
        k.Rows.alloc("rngd")
    assert e.value.code == "USAGE"


# --- the VISA text ----------------------------------------------------------------------

def _text(kernel) -> str:
    return npu_opt.compile(kernel).text


def test_the_signature_places_resident_parameters_one_after_the_other():
    text = _text(k.add_resident)
    assert 'param %1 "w" : dm[i32, "1", "1 # 2", "S / 8", "S % 8, H"] at 0\n' in text
    assert 'param %2 "acc" inout : dm[i32, "1", "1 # 2", "S / 8", "S % 8, H"] at 512\n' in text
    assert "final %2 = " in text
    assert print_artifact(parse_visa(text)) == text
    kernel = VisaBackend().compile(k.add_resident).kernel
    assert kernel.dm_allocations and all(a.base >= 1024 for a in kernel.dm_allocations)  # none over them
    assert "dm_peak_bytes=2048\n" in text  # the two resident 512-byte runs, then two 512-byte temporaries
    assert not re.search(r"= dma src=%[12] ", text)  # no DMA brings them in


def test_the_parsed_artifact_runs_in_the_interpreter():
    art = verify_text(_text(k.add_into))
    x, start = batch(), batch()
    acc = fresh()
    acc.write(host(start))
    (), (final,) = execute_inout(art, [x, acc])
    np.testing.assert_array_equal(final, host(start + x))


@pytest.mark.parametrize("old, new, fragment", [
    (" at 512\n", " at 8\n", "places it at 512"),
    (" at 512\n", "\n", "names its DM address"),
])
def test_an_edited_address_is_refused(old, new, fragment):
    text = _text(k.add_resident)
    assert old in text
    with pytest.raises(Exception) as e:
        verify_text(text.replace(old, new, 1))
    assert fragment in str(e.value) or "DMAOP" in str(e.value)


# --- npu-opt run ---------------------------------------------------------------------------

@pytest.mark.parametrize("backend", BACKENDS)
def test_npu_opt_run_starts_a_resident_buffer_from_its_input_and_writes_its_final_contents(tmp_path, backend):
    x, start = batch(), batch()
    np.save(tmp_path / "x.npy", x)
    np.save(tmp_path / "acc.npy", host(start))
    out, err = io.StringIO(), io.StringIO()
    status = run_command(f"{k.__file__}::add_into", [f"x={tmp_path / 'x.npy'}", f"acc={tmp_path / 'acc.npy'}"],
                         backend, str(tmp_path / "res"), out=out, err=err)
    assert status == 0, err.getvalue()
    np.testing.assert_array_equal(np.load(tmp_path / "res" / "acc.npy"), host(start + x))
    np.save(tmp_path / "bad.npy", start)  # the (S, H) array, not the host form
    status = run_command(f"{k.__file__}::add_into", [f"x={tmp_path / 'x.npy'}", f"acc={tmp_path / 'bad.npy'}"],
                         backend, str(tmp_path / "res"), out=out, err=err)
    assert status == 2 and "error[USAGE]: input `acc`" in err.getvalue()


def test_the_schedule_sees_the_program_read_the_resident_bytes():
    """A feed of a resident parameter reads its signature range, so a later write of those
    bytes waits for it (WAR) like for any DM tensor; the parameter costs no DMA step."""
    def steps_of(kernel):
        return build_steps(parse_visa(_text(kernel)).kernel, builtin_rates("rngd"), rngd())

    def dm_reads(steps):
        return {(a.lo, a.hi) for s in steps for a in s.accesses if a.space == "dm" and not a.write}

    assert (0, 512) in dm_reads(steps_of(k.sum_two))  # `a`, the feed's source, whole
    steps = steps_of(k.add_resident)
    assert (512, 1024) in dm_reads(steps)  # acc (w at 0 is the interleaved operand)
    writes = [(s.label, a.lo, a.hi) for s in steps for a in s.accesses if a.space == "dm" and a.write]
    assert any((lo, hi) == (512, 1024) for _, lo, hi in writes)  # acc, by the dma_into
    assert [r.mnemonic for s in steps for r in s.records if r.mnemonic.startswith("dma")] == ["dma_into", "dma", "dma"]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("device", ["rngd-2chip", "rngd"])
def test_a_two_chip_kernel_launched_on_rngd_runs_on_rngd_2chip(backend, device):
    """`rngd` names one chip: a 2-chip kernel launched there runs on the shipped `rngd-2chip`
    (as it compiles for it), so a buffer of that device, or of `rngd` itself, binds."""
    buf = k.Rows2.alloc(npu_opt.Device(device))
    x = RNG.integers(-1000, 1000, (2, 512, 16), dtype=np.int32)
    buf.write(x.reshape(buf.shape))
    np.testing.assert_array_equal(npu_opt.run(k.read_out_2chip, buf, backend=backend), x)
    other = k.Rows2.alloc(npu_opt.Device("rngd-4chip"))
    with pytest.raises(NpuOptError) as e:
        npu_opt.run(k.read_out_2chip, other, backend=backend)
    assert e.value.code == "RESIDENT-3" and "'rngd-2chip'" in str(e.value)
