"""A stage declared once (ir.stage_spec.StageSpec) runs through every layer, in a registry of
its own (ir.declare.Registry): the toy `reverse_packet(group)` after `collect`
(tests/engines/toy_stage.py) is traced from the DSL, run on the cpu backend, lowered (the
feed delivers to its record), printed, parsed, verified and interpreted; cpu == VISA bit for
bit, both equal an exact oracle, and the global tables never see it."""

from __future__ import annotations

import sys

import attrs
import numpy as np
import pytest

import npu_opt
from ir.declare import Registry
from tests.kernel_text import traced_op_classes
from ir import ops
from ir.stage_spec import STAGES, declare_stage, spec_named
from npu_opt import Context, DmTensor, HbmTensor, axes, device, i32, m
from tests.engines import toy_stage
from tu_ops import rngd
from tu_ops.base import TU_OPS
from tu_ops.feed import DestKind
from visa.interp import execute
from visa.parser import parse_visa
from visa.printer import print_artifact
from visa.verify import verify_text

X = (np.arange(8 * 32, dtype=np.int64) * 2654435761 % 2**32 - 2**31).astype(np.int32).reshape(8, 32)


axes(A=8, E=32)
CHIP, CLUSTER, SLICE = m("1"), m("1 # 2"), m("1 # 256")


def _kernel(group):

    @device(chip=1)
    def reverse(ctx: Context, x: HbmTensor[i32, CHIP, m("A, E")]) -> HbmTensor[i32, CHIP, m("A, E")]:
        d = x.to_dm(ctx.tdma, DmTensor[i32, CHIP, CLUSTER, SLICE, m("A, E")])
        s = ctx.main.begin(d.view()).fetch(m("A, E / 8"), m("E % 8")).collect(m("A, E / 8"), m("E % 8"))
        return s.reverse_packet(group).commit_trim(m("E % 8")).commit().to_hbm(ctx.tdma)

    return reverse


def _oracle(x, group):
    """Each run of `group` of the 8 elements of a packet (E % 8) reversed, index by index."""
    out = np.empty_like(x)
    for a in range(x.shape[0]):
        for e in range(x.shape[1]):
            base, k = e - e % group, e % group
            out[a, base + group - 1 - k] = x[a, e]
    return out


def _global_tables_know_no_toy():
    assert "reverse_packet" not in traced_op_classes() and TU_OPS.get("reverse_packet") is None
    assert spec_named("reverse_packet") is None and "REVERSE_PACKET" not in DestKind.__members__


@pytest.mark.parametrize("group", [8, 4, 2])
def test_a_declared_stage_runs_end_to_end(group):
    _global_tables_know_no_toy()
    registry = Registry()
    with registry.declaring():
        spec = toy_stage.declare()
    with registry:
        kernel = _kernel(group)
        cpu = npu_opt.run(kernel, X)
        text = npu_opt.compile(kernel).text
        assert f"reverse_packet in=%2 group={group} :" in text and "dest=(REVERSE_PACKET, %3)" in text
        assert print_artifact(parse_visa(text)) == text
        verify_text(text, rngd())
        visa = execute(parse_visa(text), [X])
        assert "REVERSE_PACKET" in DestKind.__members__ and DestKind["REVERSE_PACKET"].op_class.SPEC is spec
    np.testing.assert_array_equal(cpu, _oracle(X, group))
    np.testing.assert_array_equal(cpu.view(np.uint32), visa.view(np.uint32))
    _global_tables_know_no_toy()


def test_the_declarations_rule_is_checked_when_traced_and_when_verified():
    registry = Registry()
    with registry.declaring():
        toy_stage.declare()
    with registry:
        with pytest.raises(npu_opt.CompileError) as info:
            npu_opt.compile(_kernel(3))
        assert info.value.diagnostics[0].code == "TYPE-6"
        text = npu_opt.compile(_kernel(4)).text
        with pytest.raises(npu_opt.NpuOptError) as info:  # a damaged record: its traced rule refuses it
            verify_text(text.replace("group=4 :", "group=3 :"), rngd())
        assert info.value.code == "TYPE-6"
        with pytest.raises(npu_opt.NpuOptError) as info:  # the output type is derived, not trusted
            verify_text(text.replace('group=4 : stream[i32, "A, E / 8", "E % 8"] -> stream[i32, "A, E / 8", "E % 8"]',
                                     'group=4 : stream[i32, "A, E / 8", "E % 8"] -> stream[i32, "E / 8, A", "E % 8"]'),
                        rngd())


def test_the_toy_stage_is_one_source_file():
    """Every function the walk ran for the toy that is not the shared machinery's is in its
    one module: the traced op, its rule, its data movement and the declaration (a stage with
    rule codes of its own adds ir/codes.py and a page, and a built-in one a line in the
    `load` of ir/stage_spec.py: four files)."""
    with Registry().declaring():
        spec = toy_stage.declare()
        own = {spec.op.__module__, spec.run.__module__, *(fn.__module__ for fn in spec.op.RULES)}
    assert own == {"tests.engines.toy_stage"}
    assert sys.modules["tests.engines.toy_stage"].__file__.endswith("toy_stage.py")


def _before_collect():
    """The toy after `fetch`, inside the feed: `begin ... fetch ... reverse_packet ... collect`."""

    @device(chip=1)
    def early(ctx: Context, x: HbmTensor[i32, CHIP, m("A, E")]) -> HbmTensor[i32, CHIP, m("A, E")]:
        d = x.to_dm(ctx.tdma, DmTensor[i32, CHIP, CLUSTER, SLICE, m("A, E")])
        s = ctx.main.begin(d.view()).fetch(m("A, E / 8"), m("E % 8")).reverse_packet(4)
        return s.collect(m("A, E / 8"), m("E % 8")).commit_trim(m("E % 8")).commit().to_hbm(ctx.tdma)

    return early


def test_where_a_stage_sits_is_part_of_its_declaration():
    """A stage after `fetch` would sit inside the feed, which one FeedBuffer record holds: the
    declaration is refused when it is made, naming the stage it would follow."""
    with Registry().declaring():
        with pytest.raises(TypeError, match="would follow `fetch`, inside a feed"):
            declare_stage(toy_stage.spec(after=(ops.Fetch,)))
        with pytest.raises(TypeError, match="place 'feed' is not one of 'stream'"):
            declare_stage(attrs.evolve(toy_stage.spec(), place="feed"))
    _global_tables_know_no_toy()


def test_an_op_the_feed_lowering_does_not_read_is_an_internal_error_not_a_drop():
    """Entered past `declare_stage` (as a table edited by hand would), the toy after `fetch` is
    offered by the DSL and run by the cpu backend; the lowering must not drop it (cpu and
    visa would then disagree): the compile is an ICE naming the op."""
    registry = Registry()
    with registry.declaring():
        spec = toy_stage.spec(after=(ops.Fetch,), then=ops.Fetch)
        STAGES[spec.op] = spec
    with registry:
        kernel = _before_collect()
        assert npu_opt.check(kernel).ok
        np.testing.assert_array_equal(npu_opt.run(kernel, X), _oracle(X, 4))
        with pytest.raises(npu_opt.CompileError) as info:
            npu_opt.compile(kernel)
    (ice,) = info.value.diagnostics
    assert ice.code == "ICE" and "the feed lowering does not read `reverse_packet`" in " ".join(ice.notes)
