"""`.switch(out_slice, out_time, config)` end to end, every SwitchConfig variant: the cpu
backend returns what the numpy oracle says (the input, repeated along each broadcast
tile's axis), the VISA interpreter agrees bit for bit, and the artifact prints, parses,
verifies and carries the switch in its feed."""

from __future__ import annotations

import numpy as np
import pytest

import npu_opt
from npu_opt import SwitchConfig
from tests.differential.harness import load_kernel
from tests.engines.switch_kernels import CONFIGS, expected, source
from visa.verify import verify_text

X = np.random.default_rng(14).integers(-128, 128, (256, 8, 16), dtype=np.int8)


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_switch_config_runs_on_cpu_and_visa(name: str) -> None:
    kernel = load_kernel(source(name))
    cpu = npu_opt.run(kernel, X)
    np.testing.assert_array_equal(cpu, expected(name, X))
    visa = npu_opt.run(kernel, X, backend="visa")
    assert visa.dtype == cpu.dtype and visa.tobytes() == cpu.tobytes()


@pytest.mark.parametrize("name", ["broadcast1", "custom_broadcast"])
def test_switch_in_the_sub_context(name: str) -> None:
    kernel = load_kernel(source(name, context="sub"))
    visa = npu_opt.run(kernel, X, backend="visa")
    np.testing.assert_array_equal(visa, expected(name, X))


@pytest.mark.parametrize("name, config", [("transpose", "TRANSPOSE"), ("custom_broadcast", "CUSTOM_BROADCAST")])
def test_artifact_carries_the_switch_and_verifies(name: str, config: str) -> None:
    text = npu_opt.compile(load_kernel(source(name))).text
    (line,) = [x for x in text.splitlines() if "feed_buffer" in x]
    assert f"switch={{config={config}," in line
    assert ("bitmap=[]" in line) == (config != "CUSTOM_BROADCAST")
    verify_text(text)


def test_artifacts_without_switch_print_no_switch_field() -> None:
    text = npu_opt.compile(load_kernel(source("forwarding").replace(
        '         .switch(m("A"), m("B"), SwitchConfig.FORWARDING)\n', ""))).text
    assert "switch=" not in text


def test_switch_config_is_exported() -> None:
    assert SwitchConfig.BROADCAST1(slice1=4, slice0=64).fields() == {"slice1": 4, "slice0": 64}


@pytest.mark.parametrize("old, new", [
    ("ring_size=64", "ring_size=32"),                                               # wrong ring
    ('out_slice="A / 64, A % 2, A / 2 % 32"', 'out_slice="A / 64, A / 2 % 32, A % 2"'),  # not the frame
    ("config=TRANSPOSE, slice1=32", "config=TRANSPOSE, slice1=16"),                 # other fields
])
def test_edited_switch_field_is_feed_13(old: str, new: str) -> None:
    from visa.artifact import VisaTextError

    text = npu_opt.compile(load_kernel(source("transpose"))).text
    assert old in text
    with pytest.raises(VisaTextError) as e:
        verify_text(text.replace(old, new))
    assert e.value.code == "FEED-13"


def test_schedule_charges_the_book_switch_cycles() -> None:
    """ring_size x input Time x flits per packet: TRANSPOSE(32, 2) rings 64 slices, 8 steps, 1 flit."""
    from tu_ops import rngd
    from visa import parse_visa
    from visa.schedule.durations import record_cycles
    from visa.schedule.rates import builtin_rates

    feed = parse_visa(npu_opt.compile(load_kernel(source("transpose"))).text).kernel.steps[1].ops[0]
    assert record_cycles(feed, builtin_rates("rngd"), rngd()) == 64 * 8 * 1


@pytest.mark.parametrize("name", ["broadcast01", "inter_transpose", "custom_permutation"])
def test_cpu_matches_the_naive_model(name: str) -> None:
    """The differential suite's naive model (a move by logical index, no compiler code)."""
    from tests.differential.naive_model import evaluate

    kernel = load_kernel(source(name))
    (model,) = evaluate(kernel, X)
    np.testing.assert_array_equal(npu_opt.run(kernel, X), model)


FILL_PADDING = """from npu_opt import *
axes(S=16, T=4, E=16, W=16)
Chip = m("1"); Cluster = m("1 # 2")
@device(chip=1)
def fill_pad(ctx: Context, x: HbmTensor[bf16, Chip, m("S, T, E")]) -> HbmTensor[bf16, Chip, m("S, W, T, E")]:
    x = x.to_dm(ctx.tdma, DmTensor[bf16, Chip, Cluster, m("S, 1 # 16"), m("T, E")])
    y = (ctx.main.begin(x.view())
         .fetch(m("T"), m("E"))
         .switch(m("S, W"), m("T"), SwitchConfig.CUSTOM_BROADCAST(ring_size=16))
         .collect(m("T"), m("E"))
         .commit_trim(m("E"))
         .commit())
    return y.to_hbm(ctx.tdma, HbmTensor[bf16, Chip, m("S, W, T, E")])
"""


def test_custom_broadcast_fills_padded_slices() -> None:
    """Input on Slice `S, 1 # 16` (15 of every 16 slices padding): the tile W copies each
    live slice's stream onto its 15 idle neighbours, no digit moving to Time."""
    import ml_dtypes

    kernel = load_kernel(FILL_PADDING)
    x = np.random.default_rng(3).standard_normal((16, 4, 16)).astype(ml_dtypes.bfloat16)
    want = np.broadcast_to(x[:, None], (16, 16, 4, 16)).view(np.uint16)
    cpu = np.asarray(npu_opt.run(kernel, x)).view(np.uint16)
    np.testing.assert_array_equal(cpu, want)
    visa = np.asarray(npu_opt.run(kernel, x, backend="visa")).view(np.uint16)
    np.testing.assert_array_equal(visa, want)


def test_good_switching_feeds_verify() -> None:
    from tests.tu_ops.switch_cases import CUSTOM, GOOD
    from tu_ops import rngd

    GOOD.verify(rngd())
    CUSTOM.verify(rngd())
