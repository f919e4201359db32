"""`to_vrf` with the sub context as operand: the reference's main-context form
`.to_vrf(&mut ctx.sub)` reads `.to_vrf(ctx.sub, m("..."))` under the surface's operands-first
rule. It is the same store as `.to_vrf(m("..."))`: byte-identical VISA, equal cpu results,
both equal to a numpy oracle. Any other unit as the operand is CTX-1 at the call's line."""

from __future__ import annotations

import re

import numpy as np
import pytest

import npu_opt
from tests.differential.harness import load_kernel
from tu_ops import rngd
from visa.interp import execute
from visa.parser import parse_visa
from visa.verify import verify_text

# The VRF operand is made by a main-context Vector Engine pass (s + 0.25) and stored with
# the spelling under test; a second pass multiplies every row of x by it.
TEMPLATE = '''from npu_opt import *

axes(A=8, E=64)

Chip, Cluster, Slice = m("1"), m("1 # 2"), m("1 # 256")

@device(chip=1)
def scale_rows(ctx: Context, x: HbmTensor[f32, Chip, m("A, E")],
               s: HbmTensor[f32, Chip, m("A")]) -> HbmTensor[f32, Chip, m("A, E")]:
    s = s.to_dm(ctx.tdma, DmTensor[f32, Chip, Cluster, Slice, m("A")])
    s_vrf = (ctx.main.begin(s.view()).fetch(m("1"), m("A")).collect(m("1"), m("A"))
             .vector_init().vector_intra_slice_tag(TagMode.ZERO)
             .vector_clip(ClipBinaryOpF32.ADD, 0.25)
             .vector_final().to_vrf({store}))
    x = x.to_dm(ctx.tdma, DmTensor[f32, Chip, Cluster, Slice, m("A, E")])
    y = (ctx.main.begin(x.view()).fetch(m("A, E / 4"), m("E % 4"))
         .collect(m("A, E / 4"), m("E % 4 # 8")).vector_init()
         .vector_intra_slice_tag(TagMode.ZERO).vector_narrow_trim(m("E % 4"))
         .vector_fp_binary(FpBinaryOp.MUL_F(FpMulAlu.MUL0), s_vrf)
         .vector_widen_pad(m("E % 4 # 8"))
         .vector_final().commit_trim(m("E % 4")).commit())
    return y.to_hbm(ctx.tdma)
'''
STORE_LINE = 14

SPELLINGS = {
    "element": 'm("A")',
    "element_keyword": 'element=m("A")',
    "operand": 'ctx.sub, m("A")',
    "operand_keywords": 'sub=ctx.sub, element=m("A")',
    "operand_inferred": "ctx.sub",   # the element inferred from [time, packet] = A
}

RNG = np.random.default_rng(5)
X = (RNG.standard_normal((8, 64)) * 10).astype(np.float32)
S = RNG.standard_normal(8).astype(np.float32)


def _kernel(store: str):
    return load_kernel(TEMPLATE.replace("{store}", store))


def _visa(kernel) -> bytes:
    """The artifact, with the temporary source file's path (one per spelling) named alike."""
    text = npu_opt.compile(kernel).text
    paths = set(re.findall(r"; loc (\S+\.py):", text))
    assert len(paths) == 1
    return text.replace(paths.pop(), "kernel.py").encode()


def test_every_spelling_gives_the_same_visa_and_result() -> None:
    want = (X * (S + np.float32(0.25))[:, None]).astype(np.float32)  # independent oracle
    texts, results = {}, {}
    for name, store in SPELLINGS.items():
        k = _kernel(store)
        texts[name] = _visa(k)
        results[name] = npu_opt.run(k, X, S)
        np.testing.assert_array_equal(results[name], want, err_msg=name)
    base = texts["element"]
    assert b" = vrf_load " in base
    for name, text in texts.items():
        assert text == base, name
        assert results[name].view(np.uint32).tobytes() == results["element"].view(np.uint32).tobytes(), name
    verify_text(base.decode(), rngd())
    visa = execute(parse_visa(base.decode()), [X, S])
    np.testing.assert_array_equal(visa.view(np.uint32), results["operand"].view(np.uint32))


@pytest.mark.parametrize("operand, code", [
    ("ctx.main", "CTX-1"),
    ("ctx.tdma", "CTX-1"),
    ("ctx.pdma", "CTX-1"),
    ('m("A")', "TYPE-6"),   # two mappings: the first argument is no sub context
    ("3", "TYPE-6"),
])
def test_another_unit_is_refused_at_the_store(operand: str, code: str) -> None:
    diagnostics = npu_opt.check(_kernel(f'{operand}, m("A")')).diagnostics
    assert [(d.code, d.line) for d in diagnostics] == [(code, STORE_LINE)], [d.render() for d in diagnostics]
    if code == "CTX-1":
        assert "ctx.sub" in diagnostics[0].render()


def test_a_wrong_element_keeps_its_old_message() -> None:
    """`.to_vrf(3)` is still the element's TYPE-6 (not a complaint about the operand)."""
    (d,) = npu_opt.check(_kernel("3")).diagnostics
    assert (d.code, d.line) == ("TYPE-6", STORE_LINE) and "`element` of `to_vrf`" in d.render()
