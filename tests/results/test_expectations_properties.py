"""Baseline, skip and flake files, property by property (hypothesis): a baseline written line by line (ids or
regexes, statuses in any of deqp-runner's spellings) reads back to those entries; any text gives expectations
that apply to every result, or a one-line ResultsError naming the line."""

from __future__ import annotations

import re

from hypothesis import given
from hypothesis import strategies as st

from dmlconform.case_result import FAILURES
from dmlconform.results import ResultsError
from dmlconform.results.expectations import load_expectations, next_baseline
from fuzz.recorded import synthetic_run
from tests.properties import PROPERTIES

SPELLINGS = {status: [status.value, status.value.lower(), status.value.replace("_", "").title()] for status in FAILURES}
ids = st.text(st.sampled_from("abcxyz019._-/"), min_size=1, max_size=20).filter(lambda t: "#" not in t)
entries = st.lists(st.tuples(ids, st.sampled_from(sorted(FAILURES, key=lambda s: s.value)), st.integers(0, 2)),
                   max_size=6)


@PROPERTIES
@given(lines=entries, comments=st.booleans())
def test_a_baseline_reads_back_entry_by_entry(tmp_path_factory, lines, comments) -> None:
    path = tmp_path_factory.mktemp("b") / "baseline.csv"
    text = "".join(("# note\n\n" if comments else "") + f"{case_id} , {SPELLINGS[status][spelling]}\n"
                   for case_id, status, spelling in lines)
    path.write_text(text)
    try:
        baseline = load_expectations(path, [], []).baseline
    except ResultsError as exc:  # an id that is not a regular expression (e.g. "a(") is refused, by line
        assert "is not a regular expression" in str(exc) and "\n" not in str(exc)
        assert any(_not_a_regex(case_id) for case_id, _, _ in lines)
        return
    assert [(e.text, e.status) for e in baseline] == [(case_id, status) for case_id, status, _ in lines]


def _not_a_regex(text: str) -> bool:
    try:
        re.compile(text)
    except re.error:
        return True
    return False


@PROPERTIES
@given(texts=st.lists(st.text(max_size=60), min_size=1, max_size=3))
def test_any_text_gives_expectations_that_apply_or_one_line(tmp_path_factory, texts) -> None:
    folder = tmp_path_factory.mktemp("e")
    paths = []
    for number, text in enumerate(texts):
        paths.append(folder / f"{number}.txt")
        paths[-1].write_text(text, encoding="utf-8")
    try:
        expectations = load_expectations(paths[0], paths[1:2], paths[2:3])
    except ResultsError as exc:
        assert "\n" not in str(exc) and str(folder) in str(exc)
        return
    results = synthetic_run().results
    for result in results:
        expectations.skip(result.id)
        expectations.settle([expectations.overlay(result), result])
    next_baseline(results, expectations)
