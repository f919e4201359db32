"""The canonical VISA text: the visa/visa.lark vector, printer/parser round trips, renumbering."""

from __future__ import annotations

from pathlib import Path

import attrs
import pytest

import visa
from tu_ops import RNGD_SHA256, rngd
from visa import (
    COST_KEYS, VisaArtifact, compute_cost, parse_visa, print_artifact, print_visa, renumber, with_facts,
)
from tests.visa.samples import EXAMPLE_4_LOCS, cast_kernel, example_4, example_4b, widen_kernel

SPEC_TEXT = (Path(__file__).parent / "data" / "gemm_i8_kernel.visa").read_text(encoding="utf-8")
KERNELS = {"4": example_4, "4b": example_4b}


def _locs(kernel):
    return [(op.result.id, op.loc) for op in kernel.ops()]


def test_spec_vector_round_trips():
    artifact = parse_visa(SPEC_TEXT)
    assert print_artifact(artifact) == SPEC_TEXT
    assert print_artifact(parse_visa(print_artifact(artifact))) == SPEC_TEXT


def test_printing_example_4_gives_the_spec_text():
    assert print_visa(example_4(), rngd()) == SPEC_TEXT


def test_spec_vector_parses_to_the_hand_built_kernel():
    artifact = parse_visa(SPEC_TEXT)
    assert artifact.kernel == example_4()
    assert _locs(artifact.kernel) == _locs(example_4())
    assert (artifact.version, artifact.target, artifact.target_sha256) == (2, "rngd", RNGD_SHA256)
    assert list(artifact.cost) == list(COST_KEYS)
    assert dict(artifact.cost) == compute_cost(example_4(), rngd())


def test_cost_of_example_4():
    assert compute_cost(example_4(), rngd()) == {
        "dma_commands": 3, "dma_bytes": 3145728, "feed_flits": 640, "dm_read_bytes": 20480,
        "dm_write_bytes": 4096, "trf_load_bytes": 4096, "mac_ops": 131072, "dm_peak_bytes": 8192,
        "trf_peak_bytes": 4096}


@pytest.mark.parametrize("name", sorted(KERNELS))
@pytest.mark.parametrize("locs", [True, False])
def test_parse_print_is_identity(name, locs):
    kernel = KERNELS[name](locs=locs)
    text = print_visa(kernel, rngd(), locs=locs)
    artifact = parse_visa(text)
    assert artifact.kernel == kernel
    assert _locs(artifact.kernel) == _locs(kernel)
    assert print_artifact(artifact, locs=locs) == text


def test_locs_false_omits_locations_and_stays_canonical():
    text = print_visa(example_4(), rngd(), locs=False)
    assert "; loc" not in text
    stripped = "\n".join(line.split(" ; loc ")[0] for line in SPEC_TEXT.split("\n"))
    assert text == stripped
    assert print_artifact(parse_visa(text), locs=False) == text
    assert all(op.loc is None for op in parse_visa(text).kernel.ops())


def test_located_ops_carry_the_spec_positions():
    ops = parse_visa(SPEC_TEXT).kernel.context().ops
    assert {i: (ops[i].loc.line, ops[i].loc.col) for i in ops} == EXAMPLE_4_LOCS
    assert ops[7].loc.file == "examples/gemm_i8.py"


@pytest.mark.parametrize("build", [widen_kernel, cast_kernel])
def test_other_ops_round_trip_and_are_renumbered(build):
    kernel = build()
    text = print_visa(kernel, rngd())
    artifact = parse_visa(text)
    assert artifact.kernel == with_facts(renumber(kernel), rngd())
    assert [p.index for p in artifact.kernel.programs()] == [0]
    assert print_artifact(artifact) == text


def test_any_unique_numbering_is_accepted():
    order = [0, 1, *range(2, 13)]
    shuffled = dict(zip(order, [50, 7, 3, 99, 12, 0, 41, 8, 1, 77, 5, 30, 2]))
    text = SPEC_TEXT
    for old in sorted(shuffled, reverse=True):  # %12 before %1, so no prefix clash
        text = text.replace(f"%{old}", f"%@{shuffled[old]}")
    text = text.replace("%@", "%")
    assert text != SPEC_TEXT
    artifact = parse_visa(text)
    assert artifact.kernel == example_4()
    assert print_artifact(artifact) == SPEC_TEXT


def test_comments_and_blank_lines_are_ignored():
    text = SPEC_TEXT.replace("\nprogram 1", "\n; a comment line\n\nprogram 1", 1)
    text = text.replace("return %12", "return %12 ; the result")
    assert print_artifact(parse_visa(text)) == SPEC_TEXT


def test_artifact_is_a_frozen_record():
    artifact = parse_visa(SPEC_TEXT)
    assert artifact == parse_visa(SPEC_TEXT)
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        artifact.version = 2  # type: ignore[misc]
    assert artifact.lines["%7"] == 20 and artifact.lines["cost.mac_ops"] == 36


def test_target_hash_of_a_code_built_target_is_its_canonical_hash():
    from tu_ops import target_sha256

    custom = attrs.evolve(rngd(), name="custom", file_sha256=None)
    text = print_visa(example_4(), custom)
    assert f'target "custom" sha256 "{target_sha256(custom)}"' in text


def test_package_surface():
    assert sorted(visa.__all__) == [
        "COST_KEYS", "FORMAT_VERSION", "VisaArtifact", "VisaTextError", "artifact_of", "compute_cost",
        "parse_visa", "print_artifact", "print_visa", "renumber", "target_hash", "with_facts",
    ]
    assert all(getattr(visa, name) is not None for name in visa.__all__)
    assert isinstance(parse_visa(SPEC_TEXT), VisaArtifact)


def test_grammar_builds_lalr_without_conflicts():
    import importlib.resources

    import lark

    grammar = importlib.resources.files("visa").joinpath("visa.lark").read_text()
    lark.Lark(grammar, parser="lalr", propagate_positions=True)  # raises GrammarError on a conflict
