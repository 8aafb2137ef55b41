"""The docs' figures and case ids (tests/docs/figures.py): the suites' figures in the test command, the figures of
runs in .ci/run's last step (docs_commands)."""

from __future__ import annotations

import fnmatch
import re
from pathlib import Path

import pytest

from tests.docs import figures

FIX = "python -m tests.docs.figures --write (then correct the docs the other tests name)"


def test_every_marked_figure_is_the_figures_file_s() -> None:
    known = figures.load()
    problems = []
    for doc, line, key, written in figures.markers():
        if key not in known:
            problems.append(f"{doc}:{line}: fig:{key} is not in docs/figures.json")
        elif written != f"{known[key]:,}":
            problems.append(f"{doc}:{line}: fig:{key} says {written}, docs/figures.json {known[key]:,}")
    assert not problems, "\n".join(problems)


def test_figures_file_is_what_the_suites_give() -> None:
    known = figures.load()
    now = figures.suite_figures()
    changed = {key: (known.get(key), value) for key, value in now.items() if known.get(key) != value}
    assert not changed, f"docs/figures.json (was, now): {changed}: {FIX}"


def test_every_figure_of_the_file_is_stated_or_known_unstated() -> None:
    """A figure nobody states is dead weight; one stated nowhere but checked is fine only for the suites' own."""
    stated = {key for _, _, key, _ in figures.markers()}
    unused = sorted(set(figures.load()) - stated - set(figures.suite_figures()))
    assert not unused, f"docs/figures.json has figures no doc states: {unused}"


def test_every_cited_case_id_exists() -> None:
    """Each `<suite>/<case>` a doc names is a case of the smoke, standard or full tier (a `*` pattern: of some
    case), or one of figures.ILLUSTRATIVE_IDS."""
    ids = figures.case_ids()
    problems = []
    for doc, line, cited in figures.cited_ids():
        if cited in figures.ILLUSTRATIVE_IDS:
            continue
        if "*" in cited or "[" in cited or "+" in cited:
            pattern = re.compile(fnmatch.translate(cited) if "*" in cited else cited)
            if not any(pattern.fullmatch(case) for case in ids):
                problems.append(f"{doc}:{line}: {cited} matches no case")
        elif cited not in ids:
            problems.append(f"{doc}:{line}: no case {cited} in the smoke, standard or full tier")
    assert not problems, "\n".join(problems)


@pytest.mark.docs_commands
@pytest.mark.slow
def test_figures_of_runs_are_the_figures_file_s(doc_commands_bin: Path, doc_fixtures: Path, tmp_path: Path) -> None:
    """The reference's statuses on the standard tier (the fixtures' `dmlconform run --json reports/numpy.json`) and
    crosscheck's agreement, run from the wheel now, and the oracle's share of each tier."""
    now = figures.run_figures(str(doc_commands_bin / "dmlconform"), tmp_path,
                              reference=doc_fixtures / "reports" / "numpy.json") | figures.oracle_figures()
    known = figures.load()
    changed = {key: (known.get(key), value) for key, value in now.items() if known.get(key) != value}
    gone = sorted(key for key in known if key.startswith(("standard.reference.", "standard.crosscheck.", "oracle."))
                  and key not in now)
    assert not changed and not gone, f"docs/figures.json (was, now): {changed}; no longer: {gone}: " \
                                     "python -m tests.docs.figures --write --run, with the wheel's dmlconform on PATH"
