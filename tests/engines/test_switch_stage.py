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
    from visa.schedule.rates import builtin_rates

    feed = parse_visa(npu_opt.compile(load_kernel(source("transpose"))).text).kernel.steps[1].ops[0]
    assert feed.busy_cycles(builtin_rates("rngd"), rngd()) == 64 * 8 * 1


@pytest.mark.parametrize("name", ["broadcast01", "inter_transpose", "custom_permutation"])
def test_cpu_matches_the_naive_model(name: str) -> None:
    """The differential suite's naive model (a move by logical index, no compiler code)."""
    from tests.differential.naive_model import evaluate

    kernel = load_kernel(source(name))
    (model,) = evaluate(kernel, X)
    np.testing.assert_array_equal(npu_opt.run(kernel, X), model)


# Custom broadcasts onto padded input slices: (declared axes, dtype, input Slice, host
# layout of the input, out_slice, ring_size, host layout of the result)
PADDED = {
    # `S, 1 # 16`: the tile W copies each live slice's stream onto its 15 idle neighbours
    "fill_pad": ("S=16, T=4, E=16, W=16", "bf16", "S, 1 # 16", "S", "S, W", 16, "S, W"),
    # `1 # 2, H, 1 # 2`: one tile axis L fills both padded digits (L / 2 outer, L % 2 inner)
    "split_tile": ("H=64, L=4, T=4, E=8", "f32", "1 # 2, H, 1 # 2", "H", "L / 2, H, L % 2", 256, "L, H"),
}

PADDED_TEMPLATE = """from npu_opt import *
axes({axes})
Chip = m("1"); Cluster = m("1 # 2")
@device(chip=1)
def {name}(ctx: Context, x: HbmTensor[{dt}, Chip, m("{host}, T, E")]) -> HbmTensor[{dt}, Chip, m("{result}, T, E")]:
    x = x.to_dm(ctx.tdma, DmTensor[{dt}, Chip, Cluster, m("{in_slice}"), m("T, E")])
    y = (ctx.main.begin(x.view())
         .fetch(m("T"), m("E"))
         .switch(m("{out_slice}"), m("T"), SwitchConfig.CUSTOM_BROADCAST(ring_size={ring}))
         .collect(m("T"), m("E"))
         .commit_trim(m("E"))
         .commit())
    return y.to_hbm(ctx.tdma, HbmTensor[{dt}, Chip, m("{result}, T, E")])
"""


@pytest.mark.parametrize("name", sorted(PADDED))
def test_custom_broadcast_onto_padded_slices(name: str) -> None:
    """Every slice of the output holds a copy of its live input slice's stream, no digit
    moving to Time: the result is the input repeated along the tile axes."""
    import ml_dtypes

    axes_text, dt, in_slice, host, out_slice, ring, result = PADDED[name]
    kernel = load_kernel(PADDED_TEMPLATE.format(axes=axes_text, name=name, dt=dt, host=host, in_slice=in_slice,
                                                out_slice=out_slice, ring=ring, result=result))
    sizes = dict((k, int(v)) for k, v in (a.split("=") for a in axes_text.split(", ")))
    x = np.random.default_rng(3).standard_normal((sizes[host], 4, sizes["E"]))
    x = x.astype(ml_dtypes.bfloat16 if dt == "bf16" else np.float32)
    # the result is (tiles..., input axis, T, E) or (input axis, tiles..., T, E)
    want = np.broadcast_to(x[:, None], (sizes[host], 16, 4, 16)) if name == "fill_pad" \
        else np.broadcast_to(x, (4, sizes[host], 4, 8))
    cpu = np.asarray(npu_opt.run(kernel, x))
    assert cpu.tobytes() == np.ascontiguousarray(want).tobytes()
    assert np.asarray(npu_opt.run(kernel, x, backend="visa")).tobytes() == cpu.tobytes()


def test_good_switching_feeds_verify() -> None:
    from tests.tu_ops.switch_cases import CUSTOM, GOOD
    from tu_ops import rngd

    GOOD.verify(rngd())
    CUSTOM.verify(rngd())
