"""Baselines, skip lists and known flakes: reading them strictly, and what they make of results."""

from __future__ import annotations

from pathlib import Path

import pytest

from dmlconform.case_result import Status
from dmlconform.results import ResultsError
from dmlconform.results.expectations import Expectations, load_expectations, next_baseline
from tests.results.helpers import result


def expectations(tmp_path: Path, baseline: str = "", skips: str | None = None, flakes: str | None = None
                 ) -> Expectations:
    base = tmp_path / "fails.csv"
    base.write_text(baseline)
    paths = {}
    for name, text in (("skips.txt", skips), ("flakes.txt", flakes)):
        if text is not None:
            paths[name] = tmp_path / name
            paths[name].write_text(text)
    return load_expectations(base, [paths["skips.txt"]] if "skips.txt" in paths else [],
                             [paths["flakes.txt"]] if "flakes.txt" in paths else [])


@pytest.mark.parametrize(("text", "words"), [
    ("s/a,FAIL,extra\n", "fails.csv: line 1: has 3 fields"),
    ("# comment\ns/a\n", "fails.csv: line 2: has 1 fields"),
    ("s/a,PASS\n", "fails.csv: line 1: field STATUS: 'PASS' is not a status a baseline can expect"),
    ("s/(a,FAIL\n", "fails.csv: line 1: field case_id_or_regex: 's/(a' is not a regular expression"),
    # Found by fuzz/fuzz_expectations.py: re.compile raises OverflowError, not re.error, for this.
    ("s/b{99999999999},FAIL\n", "field case_id_or_regex: 's/b{99999999999}' is not a regular expression"),
    (",FAIL\n", "fails.csv: line 1: field case_id_or_regex: is empty"),
])
def test_a_malformed_baseline_names_file_line_and_field(tmp_path: Path, text: str, words: str) -> None:
    with pytest.raises(ResultsError) as info:
        expectations(tmp_path, text)
    assert words in str(info.value) and "\n" not in str(info.value)


def test_deqp_runner_spellings_comments_and_hashes_are_read(tmp_path: Path) -> None:
    loaded = expectations(tmp_path, "# known\n\ns/a,Fail\ns/b,Crash\ns/c,NotSupported\ns/d,timeout\n")
    assert [e.status for e in loaded.baseline] == [Status.FAIL, Status.CRASH, Status.NOT_SUPPORTED, Status.TIMEOUT]
    [file] = loaded.files
    assert file.kind == "baseline" and len(file.sha256) == 64


def test_exact_ids_win_over_regexes_and_regexes_match_the_whole_id(tmp_path: Path) -> None:
    loaded = expectations(tmp_path, "s/a.*,CRASH\ns/a+b,FAIL\n")
    assert loaded.expected_failure("s/a+b").status is Status.FAIL  # '+' would not match itself as a regex
    assert loaded.expected_failure("s/abc").status is Status.CRASH
    assert loaded.expected_failure("x/s/abc") is None


def test_overlay_expected_fail_unexpected_pass_and_changed_failure(tmp_path: Path) -> None:
    loaded = expectations(tmp_path, "s/known,FAIL\ns/fixed,FAIL\ns/changed,FAIL\n")
    known = loaded.overlay(result("s/known", Status.FAIL))
    assert known.status is Status.EXPECTED_FAIL and known.outcome is Status.FAIL and known.status.acceptable
    assert known.expectation == "fails.csv:1" and known.baseline is Status.FAIL
    fixed = loaded.overlay(result("s/fixed", Status.PASS))
    assert fixed.status is Status.UNEXPECTED_PASS and not fixed.status.acceptable
    changed = loaded.overlay(result("s/changed", Status.CRASH))
    assert changed.status is Status.CRASH and "changed failure FAIL→CRASH" in changed.message
    new = loaded.overlay(result("s/new", Status.FAIL))
    assert new.status is Status.FAIL and new.baseline is None


def test_not_required_cases_are_left_alone(tmp_path: Path) -> None:
    loaded = expectations(tmp_path, "s/a,FAIL\n")
    above = result("s/a", Status.NOT_REQUIRED, required=False, outcome=Status.FAIL)
    assert loaded.overlay(above).status is Status.NOT_REQUIRED
    assert not loaded.needs_retry(above)


def test_runs_that_disagree_are_a_flake_but_runs_that_all_fail_are_not(tmp_path: Path) -> None:
    loaded = expectations(tmp_path)
    flake = loaded.settle([result("s/a", Status.FAIL), result("s/a", Status.PASS)])
    assert flake.status is Status.FLAKE and flake.outcome is Status.FAIL and flake.status.acceptable
    assert flake.attempts == (Status.FAIL, Status.PASS)
    always = loaded.settle([result("s/a", Status.FAIL), result("s/a", Status.CRASH)])
    assert always.status is Status.FAIL and "every run failed: FAIL, CRASH" in always.message
    once = loaded.settle([result("s/a", Status.PASS)])
    assert once.status is Status.PASS


def test_a_repeat_that_disagrees_within_one_attempt_is_a_flake_too(tmp_path: Path) -> None:
    loaded = expectations(tmp_path)
    first = result("s/a", Status.FAIL)
    first.attempts = (Status.PASS, Status.FAIL)
    assert loaded.settle([first]).status is Status.FLAKE


def test_a_known_failure_that_sometimes_crashes_is_a_flake_against_the_baseline(tmp_path: Path) -> None:
    loaded = expectations(tmp_path, "s/a,FAIL\n")
    settled = loaded.settle([result("s/a", Status.CRASH), result("s/a", Status.FAIL)])
    assert settled.status is Status.FLAKE and settled.outcome is Status.CRASH


def test_known_flakes_and_skips_come_from_regex_lists(tmp_path: Path) -> None:
    loaded = expectations(tmp_path, skips="# slow ones\nrandom\n", flakes="^s/wobbly$\n")
    assert loaded.skip("max_pooling_grad.random/big").source == "skips.txt:2"
    assert loaded.skip("s/a") is None
    settled = loaded.settle([result("s/wobbly", Status.TIMEOUT)])
    assert settled.status is Status.FLAKE and "known flake (flakes.txt:1)" in settled.message
    assert loaded.settle([result("s/steady", Status.TIMEOUT)]).status is Status.TIMEOUT


def test_next_baseline_lists_every_failure_marks_news_and_keeps_what_this_run_did_not_see(tmp_path: Path) -> None:
    loaded = expectations(tmp_path, "s/known,FAIL\ns/changed,FAIL\ns/fixed,CRASH\nother/.*,TIMEOUT\n")
    results = [loaded.overlay(r) for r in (result("s/known", Status.FAIL), result("s/changed", Status.CRASH),
                                           result("s/fixed", Status.PASS), result("s/new", Status.ERROR),
                                           result("s/fine", Status.PASS))]
    text = next_baseline(results, loaded)
    entries = [line for line in text.splitlines() if line and not line.startswith("#")]
    assert entries == ["s/known,FAIL", "s/changed,CRASH", "s/new,ERROR", "other/.*,TIMEOUT"]
    assert "# changed: FAIL→CRASH\ns/changed,CRASH" in text and "# new: ERROR\ns/new,ERROR" in text
    assert "# fixed: s/fixed (was CRASH, fails.csv:3)" in text
    (tmp_path / "next.csv").write_text(text)
    again = load_expectations(tmp_path / "next.csv", [], [])  # the file reads back as a baseline
    assert again.expected_failure("s/new").status is Status.ERROR
