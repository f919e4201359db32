"""Doubled input packing end to end (furiosa-opt v0.7): kernels whose 8- and 16-bit packets
carry 16 live elements check, run on cpu against numpy's transpose, compile to a
`transpose` record with `fetch_in_width_shift=1`, verify and round-trip as VISA text, and
the interpreter gives the cpu backend's bits; the record's shift is what the verifier and
the interpreter read, and the engine spends one cycle per packet whatever it carries."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import npu_opt
from ir.errors import VisaFormatError
from npu_opt.compile_api import compile_kernel
from npu_opt.run import run
from tests.kernel_files import example, load_source
from tu_ops import rngd
from visa import parse_visa
from visa.artifact import VisaTextError
from visa.interp import execute
from visa.printer import print_artifact
from visa.schedule import builtin_rates
from visa.schedule.steps import build_steps
from visa.verify import verify_text

# u8 x[G, R, J]: G tiles of 8 rows, J = 16 columns in one doubled packet per row.
ONE_PACKET_U8 = '''from npu_opt import *

axes(G=3, R=8, J=16)

Chip = m("1")
Cluster = m("1 # 2")
Slice = m("1 # 256")

@device(chip=1)
def one_packet_u8(ctx: Context, x: HbmTensor[u8, Chip, m("G, R, J")]) -> HbmTensor[u8, Chip, m("G, J, R")]:
    x = x.to_dm(ctx.tdma, DmTensor[u8, Chip, Cluster, Slice, m("G, R, J")])
    y = (ctx.main.begin(x.view()).fetch(m("G, R"), m("J")).collect(m("G, R"), m("J # 32"))
         .transpose(m("G, J"), m("R # 32"))
         .commit_trim(m("R")).commit(m("G, J, R")))
    return y.to_hbm(ctx.tdma)
'''

# i16 x[R, V]: 12 live columns per packet (past 8: doubled), 4 rows per transposed packet;
# the four padding columns of each 16-column row are trimmed.
TRIMMED_I16 = '''from npu_opt import *

axes(R=4, V=12)

Chip = m("1")
Cluster = m("1 # 2")
Slice = m("1 # 256")

@device(chip=1)
def trimmed_i16(ctx: Context, x: HbmTensor[i16, Chip, m("R, V")]) -> HbmTensor[i16, Chip, m("V, R")]:
    x = x.to_dm(ctx.tdma, DmTensor[i16, Chip, Cluster, Slice, m("R, V")])
    y = (ctx.main.begin(x.view()).fetch(m("R"), m("V")).collect(m("R"), m("V # 16"))
         .transpose(m("V"), m("R # 16"))
         .commit_trim(m("R")).commit(m("V, R")))
    return y.to_hbm(ctx.tdma)
'''

INLINE = {"one_packet_u8": ONE_PACKET_U8, "trimmed_i16": TRIMMED_I16}
EXAMPLES = ("transpose_tile_wide", "transpose_i8_wide")


def kernel(name: str):
    if name in INLINE:
        return getattr(load_source(INLINE[name], name), name)
    return example(name)


def _case(name: str, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """(input, what numpy says the kernel returns): every tile transposed."""
    if name == "transpose_tile_wide":
        x = rng.uniform(-4, 4, (256, 16, 16)).astype(ml_dtypes.bfloat16)
        return x, np.swapaxes(x, 1, 2)
    if name == "transpose_i8_wide":
        x = rng.integers(-128, 128, (256, 8, 32), dtype=np.int8)
        return x, np.swapaxes(x, 1, 2)
    if name == "one_packet_u8":
        x = rng.integers(0, 256, (3, 8, 16), dtype=np.uint8)
        return x, np.swapaxes(x, 1, 2)
    x = rng.integers(-2**15, 2**15, (4, 12), dtype=np.int16)
    return x, x.T


@pytest.mark.parametrize("name", [*EXAMPLES, *INLINE])
def test_doubled_kernel_matches_numpy_and_visa_bit_for_bit(name):
    k = kernel(name)
    assert npu_opt.check(k).diagnostics == ()
    x, want = _case(name, np.random.default_rng(len(name)))
    got = np.asarray(run(k, x, backend="cpu"))
    assert got.shape == want.shape and got.dtype == want.dtype
    np.testing.assert_array_equal(got.view(np.uint8), np.ascontiguousarray(want).view(np.uint8))
    outcome = compile_kernel(k)
    assert outcome.status == "ok", outcome.diagnostics
    (line,) = [t for t in outcome.text.splitlines() if " transpose in=" in t]
    assert "valid_size_per_packet=16 fetch_in_width_shift=1 :" in line
    verify_text(outcome.text)
    assert print_artifact(parse_visa(outcome.text)) == outcome.text
    out = np.asarray(execute(parse_visa(outcome.text), [x]))
    np.testing.assert_array_equal(out.view(np.uint8), got.view(np.uint8))


def test_record_parameters_of_the_two_examples():
    lines = {name: next(t for t in compile_kernel(example(name)).text.splitlines() if " transpose in=" in t)
             for name in EXAMPLES}
    assert ("in_rows=4 in_cols=16 out_rows=16 packets_per_col=1 valid_size_per_packet=16 fetch_in_width_shift=1"
            in lines["transpose_tile_wide"])
    assert ("in_rows=8 in_cols=32 out_rows=32 packets_per_col=2 valid_size_per_packet=16 fetch_in_width_shift=1"
            in lines["transpose_i8_wide"])


def test_base_packing_prints_no_shift():
    text = compile_kernel(example("transpose_tile")).text
    (line,) = [t for t in text.splitlines() if " transpose in=" in t]
    assert "valid_size_per_packet=8 :" in line and "fetch_in_width_shift" not in text


def _transpose_cycles(name: str) -> int:
    artifact = parse_visa(compile_kernel(example(name)).text)
    steps = build_steps(artifact.kernel, builtin_rates("rngd"), rngd())
    (cycles,) = [r.cycles for s in steps for r in s.records if r.mnemonic == "transpose"]
    return cycles


def test_a_doubled_tile_takes_half_the_engine_cycles():
    """The same 16 x 16 bf16 tile: 32 packets of 8 elements, or 16 packets of 16, one cycle each."""
    assert _transpose_cycles("transpose_tile") == 32
    assert _transpose_cycles("transpose_tile_wide") == 16
    assert _transpose_cycles("transpose_i8_wide") == 16      # 8 rows x 2 packets


@pytest.mark.parametrize("edit,code", [
    ((" fetch_in_width_shift=1", ""), "TRANSPOSE-6"),
    (("fetch_in_width_shift=1", "fetch_in_width_shift=2"), "TRANSPOSE-18"),
    (("fetch_in_width_shift=1", "fetch_in_width_shift=0"), "TRANSPOSE-18"),
], ids=["dropped", "two", "zero"])
def test_a_changed_shift_is_refused_by_the_verifier(edit, code):
    text = compile_kernel(example("transpose_i8_wide")).text
    bad = text.replace(*edit)
    assert bad != text
    with pytest.raises(VisaTextError) as info:
        verify_text(bad)
    assert info.value.rule == code


def test_the_interpreter_unpacks_by_the_record_shift():
    """Without the verifier, a record whose shift disagrees with its valid width is not run."""
    text = compile_kernel(example("transpose_i8_wide")).text
    x = np.zeros((256, 8, 32), np.int8)
    with pytest.raises(VisaFormatError, match="unpacks 8 elements per packet"):
        execute(parse_visa(text.replace(" fetch_in_width_shift=1", "")), [x])
