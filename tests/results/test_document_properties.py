"""Result documents, property by property (hypothesis): whatever this tool writes it reads back as it was, and a
mutated document is refused with one line naming the field, or read into a run every command can report on."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from dmlconform.results import ResultsError
from dmlconform.results.document import from_document, to_document, value_at
from fuzz.fuzz_result_document import consume
from tests.properties import PROPERTIES
from tests.results.strategies import runs

ODD = [None, "", "[/]", -1, 2**70, 1.5, float("nan"), [], {}, [[]], {"a": None}, True, "inf", "x" * 300]


@PROPERTIES
@given(made=runs())
def test_any_run_written_reads_back_to_the_same_document(made) -> None:
    """Valid documents round-trip: every field this tool writes, it reads back as it was."""
    document = json.loads(json.dumps(to_document(made)))
    assert to_document(from_document(document, "round trip")) == document


def _places(node, path=()):
    yield path
    if isinstance(node, dict):
        for key, value in node.items():
            yield from _places(value, (*path, key))
    elif isinstance(node, list):
        for position, value in enumerate(node[:3]):
            yield from _places(value, (*path, position))


@PROPERTIES
@given(made=runs(), data=st.data())
@pytest.mark.slow
def test_a_mutated_document_is_refused_in_one_line_or_reported(made, data) -> None:
    """Mutated documents: a ResultsError of one line naming the field, or a run every command can report on."""
    document = json.loads(json.dumps(to_document(made)))
    places = list(_places(document))[1:]
    for _ in range(data.draw(st.integers(1, 3))):
        place = data.draw(st.sampled_from(places))
        parent = value_at(document, place[:-1])
        if not isinstance(parent, dict | list) or (isinstance(parent, list) and place[-1] >= len(parent)):
            continue
        if isinstance(parent, dict) and data.draw(st.booleans()):
            parent.pop(place[-1], None)
        else:
            parent[place[-1]] = data.draw(st.sampled_from(ODD))
    try:
        mutated = from_document(document, "mutated.json")
    except ResultsError as exc:
        assert "\n" not in str(exc) and str(exc).startswith("mutated.json")
        return
    consume(mutated, "mutated.json")
