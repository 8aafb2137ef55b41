"""Every operator has every part an operator has (docs/adding-an-operator.md): the list is written once, here and in
that page, and an operator that lacks one fails with the parts it lacks named, instead of being found out by a user.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

from dmlconform.ops import OPERATORS
from dmlconform.ops.base import Operator

REPO = Path(__file__).resolve().parents[1]


@dataclass(frozen=True)
class Subject:
    """An operator as its parts find it: its DML name and its module's name (dmlconform/ops/<stem>.py)."""

    name: str
    stem: str

    @classmethod
    def of(cls, op: Operator) -> Subject:
        return cls(op.name, type(op).__module__.rsplit(".", 1)[1])


def _text(relative: str) -> str:
    path = REPO / relative
    return path.read_text(encoding="utf-8") if path.is_file() else ""


def _generator_kinds(subject: Subject) -> set[str]:
    path = REPO / "dmlconform" / "generation" / "descriptions" / f"{subject.stem}.yaml"
    if not path.is_file():
        return set()
    document = yaml.safe_load(path.read_text(encoding="utf-8"))
    if document.get("op") != subject.name:
        return set()
    return {family.get("kind") for family in document.get("families", [])}


def missing_parts(subject: Subject) -> list[str]:
    """The parts of docs/adding-an-operator.md the operator lacks, each as the page names it."""
    from dmlconform.backends.onnx_graphs import CONSTRUCTIONS
    from dmlconform.interactions.registry import models
    from tests.oracle import drivers

    name, stem = subject.name, subject.stem
    checks = {
        "1. reference, validation and support table (dmlconform/ops/, registered in OPERATORS)":
            name in OPERATORS and (REPO / "dmlconform" / "ops" / f"{stem}.py").is_file(),
        "2. generator description (dmlconform/generation/descriptions/)": bool(_generator_kinds(subject)),
        "3. layout families (layout-pairs and layout-negative: the API surface, docs/api-surface.md)":
            {"layout-pairs", "layout-negative"} <= _generator_kinds(subject),
        "4. interaction model (dmlconform/interactions/registry.py)": name in models(),
        "5. hand-written suites (test_vectors/<op>/edge.yaml and invalid.yaml)":
            all((REPO / "test_vectors" / stem / f"{kind}.yaml").is_file() for kind in ("edge", "invalid")),
        "6. the generated tiers (test_vectors/smoke and standard, dmlconform generate)":
            all((REPO / "test_vectors" / tier / f"{stem}.yaml").is_file() for tier in ("smoke", "standard")),
        "7. the DirectML harness (windows/dml_harness/operators.cpp and descriptions.cpp)":
            f'"{name}", DML_OPERATOR_{name}' in _text("windows/dml_harness/operators.cpp")
            and f"case DML_OPERATOR_{name}:" in _text("windows/dml_harness/descriptions.cpp"),
        "8. ONNX graph (dmlconform/backends/onnx_graphs/)":
            name in CONSTRUCTIONS and (REPO / "dmlconform" / "backends" / "onnx_graphs" / f"{stem}.py").is_file(),
        "9. PyTorch (dmlconform/backends/torch_grads/)":
            "def realise(" in _text(f"dmlconform/backends/torch_grads/{stem}.py"),
        "10. simulated drivers (tests/oracle/drivers.py)": name in drivers._OPERATORS,
        "11. reference page (docs/reference/operators.md)":
            re.search(rf"^## {re.escape(name)}$", _text("docs/reference/operators.md"), re.MULTILINE) is not None,
    }
    return [part for part, present in checks.items() if not present]


@pytest.mark.parametrize("name", sorted(OPERATORS))
def test_every_operator_has_every_part(name: str) -> None:
    assert missing_parts(Subject.of(OPERATORS[name])) == []


def test_an_operator_without_its_parts_is_named_with_each_part_it_lacks() -> None:
    missing = missing_parts(Subject("ADAM_OPTIMIZER", "adam_optimizer"))
    assert len(missing) == 11, missing
    page = _text("docs/adding-an-operator.md")
    assert all(part.split(" (")[0].split(". ", 1)[1] in page for part in missing), "the page names every part"


def test_one_part_gone_from_a_real_operator_is_found_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    from tests.oracle import drivers

    monkeypatch.delitem(drivers._OPERATORS, "SLICE_GRAD")
    assert missing_parts(Subject.of(OPERATORS["SLICE_GRAD"])) == ["10. simulated drivers (tests/oracle/drivers.py)"]


def test_the_page_and_the_check_list_the_same_parts() -> None:
    page = _text("docs/adding-an-operator.md")
    numbered = re.findall(r"^(\d+)\. \*\*", page, re.MULTILINE)
    assert [int(n) for n in numbered] == list(range(1, 12)), numbered
