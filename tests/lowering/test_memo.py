"""The compile path's memos (ir/memo.py: trace-rule geometry, DMA command bodies, type text)
answer a question again only for the same inputs: a tile loop's identical tiles share the
work, tiles differing in an offset, and kernels differing in an axis size, get their own
records. Each memoised compile is held to the same compile with every memo off."""

import re
from pathlib import Path

import attrs

from backends.npu import lower_kernel
from driver.discover import discover
from ir import ops
from ir.verdicts import rule_key
from ir.memo import clear_memos, memos_disabled
from npu_opt.compile_api import compile_kernel
from tests.kernel_files import load_source
from tu_ops import rngd
from tu_ops.dma_view import DmaWindowOp
from tu_ops.dma_commands import _dma_body

ROOT = Path(__file__).resolve().parents[2]
TILED = (ROOT / "examples" / "gemm_tiled.py").read_text()


def tiled(mt: int, nt: int, k: int):
    text = re.sub(r"^MT = \d+", f"MT = {mt}", TILED, flags=re.M)
    text = re.sub(r"^NT = \d+", f"NT = {nt}", text, flags=re.M)
    text = text.replace("K=128)", f"K={k})")
    return load_source(text, f"memo_tiled_{mt}x{nt}_k{k}").gemm_tiled


def test_memoised_compiles_equal_fresh_ones():
    """Kernels sharing most mappings but differing in tile counts (tile offsets) and in K
    (axis sizes), compiled one after the other with warm memos, each against its own compile
    with the memos off: a memo keyed on less than its inputs hands one kernel another's record."""
    kernels = [tiled(2, 2, 128), tiled(1, 2, 128), tiled(2, 2, 256), tiled(1, 3, 64)]
    clear_memos()
    warm = [compile_kernel(k) for k in kernels]
    with memos_disabled():
        fresh = [compile_kernel(k) for k in kernels]
    for w, f in zip(warm, fresh):
        assert w.status == f.status == "ok"
        assert w.text == f.text
    assert len({w.text for w in warm}) == len(kernels)


def test_tiles_differing_only_in_their_offset():
    """The weight tiles of a 1 x 3 loop read the same view type at three offsets: the DMA
    body is shared, and each record carries its own offset (j * 512 rows * K * 2 bytes)."""
    k = 64
    lowered = lower_kernel(tiled(1, 3, k))
    windows = [op for op in lowered.ops() if isinstance(op, DmaWindowOp)]
    weights = [w for w in windows if "N" in str(w.src_view[-1])]
    assert [w.src_offset for w in weights] == [j * 512 * k * 2 for j in range(3)]
    bodies = {tuple(c.src_base - w.src_offset for c in w.commands) for w in weights}
    assert len(bodies) == 1
    assert len({tuple(c.src_base for c in w.commands) for w in weights}) == 3


def test_dma_bodies_differ_with_an_axis_size():
    """Two DMAs whose types differ only in the size of K have their own command bodies, and
    asking again returns the remembered one."""
    lowered = [lower_kernel(tiled(1, 1, k)) for k in (64, 128)]
    firsts = [next(op for op in low.ops() if isinstance(op, DmaWindowOp)) for low in lowered]
    target = rngd()
    a, b = (_dma_body(*w.view_types(), target) for w in firsts)
    assert a != b
    assert _dma_body(*firsts[0].view_types(), target) is a
    with memos_disabled():
        assert _dma_body(*firsts[1].view_types(), target) == b


def test_rule_verdicts_equal_fresh_ones():
    """Every refusal fixture and example traced with the verdict memo warm from all the others
    reports what it reports with the memo off (code, message, line)."""
    kernels = discover([str(ROOT / "tests" / "fixtures"), str(ROOT / "examples")]).kernels
    assert len(kernels) > 20
    clear_memos()
    warm = [k.trace().diagnostics for k in kernels]
    with memos_disabled():
        fresh = [k.trace().diagnostics for k in kernels]
    assert warm == fresh
    assert sum(1 for d in warm if d) >= 20


def test_the_rule_key_keeps_which_operands_are_one_value():
    """Ops differing only in value numbers share a key; an op reading one value twice and
    one reading two values of the same type do not."""
    t = tiled(1, 1, 64).trace().kernel
    outer = next(op for op in t.ops if isinstance(op, ops.ContractOuter))
    renumbered = attrs.evolve(outer, input=ops.Value(outer.input.id + 100, outer.input.type),
                              result=ops.Value(outer.result.id + 100, outer.result.type))
    assert rule_key(renumbered, ops.Value) == rule_key(outer, ops.Value)
    same = attrs.evolve(outer, trf=ops.Value(outer.input.id, outer.trf.type))
    assert rule_key(same, ops.Value) != rule_key(outer, ops.Value)
