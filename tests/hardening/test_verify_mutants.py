"""`visa --verify` refuses every operand/type mismatch and everything the interpreter cannot
execute (issue 16, "Wrong answers" 1): the exact mutants of the report, then a bounded
mutation run over every example artifact (a longer one is marked slow)."""

from __future__ import annotations

import collections
import functools
import random
import re
import time

import numpy as np
import pytest

from ir.errors import NpuOptError
from npu_opt.compile_api import compile_kernel
from tests.kernel_files import example
from tests.visa.mutation import BAD, classify, inputs_for, mutants
from visa.verify import verify_text
from visa.interp import execute

EXAMPLES = ["gemv_kernel", "gemm_kernel", "gemm_i8_kernel", "gemm_bf16_kernel", "dot_product_kernel",
            "row_sum_kernel", "fetch_commit_simple"]


@functools.cache
def artifact(name: str) -> str:
    outcome = compile_kernel(example(name))
    assert outcome.status == "ok", outcome.diagnostics
    return outcome.text


def refused(text: str) -> str:
    with pytest.raises(NpuOptError) as info:
        verify_text(text)
    return str(info.value)


def test_the_originals_verify():
    for name in ("gemv_kernel", "gemm_kernel"):
        verify_text(artifact(name))


@pytest.mark.parametrize("name", ["gemv_kernel", "gemm_kernel"])
def test_a_dma_reading_another_tensor_than_its_type_is_refused(name):
    text = artifact(name)
    mutant = re.sub(r"^%3 = dma src=%1 ", "%3 = dma src=%0 ", text, flags=re.M)
    assert mutant != text
    message = refused(mutant)
    # the record check that a DMA's input type is the type of the tensor it reads comes first
    assert "the dma reads %0 as hbm<" in message and "not its type hbm<" in message


def test_a_packet_reduce_with_an_edited_accumulator_type_is_refused():
    text = artifact("gemv_kernel")
    line = next(x for x in text.splitlines() if "packet_reduce" in x)
    for count in (1, 2):  # the input side, then both sides (the consumer disagrees)
        edited = line.replace("cstream[f32,", "cstream[i8,", count)
        message = refused(text.replace(line, edited))
        assert "declares its input" in message or "PRED" in message or "cstream" in message


def test_absurd_integers_are_refused_not_crashes():
    text = artifact("gemv_kernel")
    for mutant in (text.replace("depth=5 ", "depth=9223372036854775807 "), text.replace("depth=5 ", "depth=4000 ")):
        assert mutant != text
        refused(mutant)


def _run(names: list[str], per_file: int, seed: int) -> tuple[collections.Counter, list[str], int]:
    counts: collections.Counter = collections.Counter()
    bad, slow = [], 0
    for name in names:
        text = artifact(name)
        arrays = inputs_for(text)
        reference = execute(verify_text(text), arrays, as_tuple=False)
        for mutant in mutants(text, random.Random(f"{seed}:{name}"), per_file):
            start = time.process_time()
            kind = classify(mutant, arrays, reference)
            slow += time.process_time() - start > 2
            counts[kind] += 1
            if kind in BAD:
                bad.append(f"{name}: {kind}\n" + "\n".join(
                    b for a, b in zip(text.splitlines(), mutant.splitlines()) if a != b))
    return counts, bad, slow


def test_bounded_mutation_run_accepts_nothing_that_changes_meaning():
    counts, bad, _ = _run(EXAMPLES, 25, seed=16)
    assert not bad, "\n\n".join(bad[:5])
    assert counts["refused"] > 100  # the mutants are real edits, most of them refused


@pytest.mark.slow
def test_ten_thousand_mutants():
    per_file = -(-10_000 // len(EXAMPLES))
    counts, bad, slow = _run(EXAMPLES, per_file, seed=1616)
    print(f"\nmutants: {dict(counts)}; bad: {len(bad)}; over 2 s: {slow}")
    assert not bad, "\n\n".join(bad[:5])
    assert slow == 0
    assert np.sum(list(counts.values())) >= 10_000


# ---- issue 28 item 15: mutants verify accepted and the interpreter then refused ----------------

@pytest.mark.parametrize("split", ["S % 8 # 16, H / 8", "S % 8, H / 8 # 16", "S % 8 # 16, H / 8 # 16"])
def test_a_padded_split_time_that_changes_the_step_count_is_refused(split):
    text = compile_kernel(example("residual_add_kernel")).text
    mutant = text.replace('split_time="S % 8, H / 8"', f'split_time="{split}"')
    assert mutant != text
    message = refused(mutant)
    assert "VPAIR-1" in message and "split_time" in message and "steps, the output stream has" in message


def test_a_dma_into_another_tensor_of_another_type_is_refused():
    from tests.npu_opt.test_views import via_dm  # a DM window copied back into a tensor_new HBM tensor

    text = compile_kernel(via_dm).text
    mutant = re.sub(r"(= dma_into src=%2 .*) into=%1 ", r"\1 into=%2 ", text)
    assert mutant != text
    assert "which is not of its output type" in refused(mutant)
