from pathlib import Path

import pytest
import yaml

from dmlconform.generation import GenerationError
from dmlconform.generation.build import load_descriptions
from dmlconform.generation.description import load_description
from dmlconform.generation.families import KINDS
from dmlconform.ops import OPERATORS
from dmlconform.suite.tiers import Tier

GOOD = {"format": "dmlconform-generator/v1", "op": "SLICE_GRAD", "suite": "slice_grad",
        "families": [{"name": "cells", "kind": "slice-cells", "seed": 1, "counts": {"smoke": 1, "standard": 2},
                      "about": "cells", "elements": {"smoke": 8}, "strides": [1, -1]}]}


def write(tmp_path: Path, document: dict) -> Path:
    path = tmp_path / "d.yaml"
    path.write_text(yaml.safe_dump(document))
    return path


def with_family(**changes) -> dict:
    family = {**GOOD["families"][0], **changes}
    return {**GOOD, "families": [family]}


def test_a_good_description_reads_into_families(tmp_path):
    description = load_description(write(tmp_path, GOOD), KINDS)
    family = description.families[0]
    assert family.op.name == "SLICE_GRAD" and family.counts == {Tier.SMOKE: 1, Tier.STANDARD: 2}
    assert family.new_in(Tier.SMOKE) == range(0, 1) and family.new_in(Tier.STANDARD) == range(1, 2)
    assert family.new_in(Tier.FULL) == range(2, 2)
    assert family.per_tier("elements", Tier.FULL) == 8  # a tier not named takes the one below


@pytest.mark.parametrize(("document", "message"), [
    ({**GOOD, "format": "x"}, "format: must be dmlconform-generator/v1"),
    ({**GOOD, "op": "CONV"}, "op: unknown operator"),
    (with_family(kind="nope"), "family 'cells': kind: 'nope' is not one of"),
    (with_family(seed=-1), "family 'cells': seed:"),
    (with_family(counts={"smoke": 3, "standard": 2}), "family 'cells': counts.standard: 2 must be an integer no smaller"),
    (with_family(counts={"huge": 3}), "family 'cells': counts.huge: is not a tier"),
    (with_family(about=""), "family 'cells': about:"),
    ({**GOOD, "families": [GOOD["families"][0], GOOD["families"][0]]}, "family 'cells': name: used twice"),
])
def test_a_broken_description_names_the_file_the_family_and_the_key(tmp_path, document, message):
    path = write(tmp_path, document)
    with pytest.raises(GenerationError) as info:
        load_description(path, KINDS)
    assert str(path) in str(info.value) and message in str(info.value)


def test_a_missing_setting_names_its_key(tmp_path):
    family = load_description(write(tmp_path, with_family(elements={"standard": 8})), KINDS).families[0]
    with pytest.raises(GenerationError, match="family 'cells': elements: names no tier at or below smoke"):
        family.per_tier("elements", Tier.SMOKE)
    with pytest.raises(GenerationError, match="family 'cells': nothing: missing"):
        family.setting("nothing", int)


def test_the_bundled_descriptions_cover_every_operator_and_say_what_each_family_is_for():
    descriptions = load_descriptions()
    assert {d.op.name for d in descriptions} == set(OPERATORS)
    for description in descriptions:
        for family in description.families:
            assert len(family.about) > 20, (description.file, family.name)
