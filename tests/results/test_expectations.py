"""Baselines, skip lists and known flakes: reading them strictly, and what they make of results."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from dmlconform.case_result import Status
from dmlconform.known_issues import Mode, parse_known_issues
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


# -- the DirectML release's known issues ------------------------------------------------------------------------
KNOWN = """\
format: dmlconform-known-issues/v1
date: 2026-11-27
measured:
  directml: [1.15.4]
issues:
  - id: T-ZERO
    title: accepts a window of size 0
    releases: [1.15.4]
    backends: [directml]
    cases: ['s/zero-.*']
    evidence: [x]
    reference: y
  - id: T-REMOVED
    title: the device is removed
    releases: [1.15.4]
    backends: [directml]
    cases: ['.*']
    outcomes: [CRASH]
    occurs: sometimes
    message: DEVICE_REMOVED
    evidence: [x]
    reference: y
"""


def known(mode: Mode, baseline: Expectations | None = None) -> Expectations:
    issues = parse_known_issues(KNOWN.encode(), "list.yaml").for_release("1.15.4", "directml")
    return (baseline or Expectations()).with_known_issues(issues, mode)


def test_a_failure_a_known_issue_explains_is_expected_and_names_the_issue() -> None:
    settled = known(Mode.ON).settle([result("s/zero-axis0", Status.FAIL)])
    assert settled.status is Status.EXPECTED_FAIL and settled.outcome is Status.FAIL and settled.acceptable
    assert settled.known_issue is not None and (settled.known_issue.id, settled.known_issue.release) == ("T-ZERO",
                                                                                                        "1.15.4")
    assert settled.message.startswith("DirectML 1.15.4's known issue T-ZERO (accepts a window of size 0)")
    assert not known(Mode.ON).needs_retry(result("s/zero-axis0", Status.FAIL))  # not tried again: it is known


def test_the_devices_own_failures_still_fail_beside_the_known_issues() -> None:
    """The promise a known issue must not break: a failure it does not explain is a failure."""
    applied = known(Mode.ON)
    for failing in (result("s/other", Status.FAIL), result("s/zero-axis0", Status.CRASH),
                    result("s/other", Status.CRASH)):
        settled = applied.settle([failing])
        assert settled.status is failing.status and not settled.acceptable, settled
    wrong_crash = applied.settle([result("s/zero-axis0", Status.CRASH)])
    assert wrong_crash.known_issue is not None and wrong_crash.message.startswith(
        "not DirectML 1.15.4's known issue T-ZERO: it expects FAIL, this came to CRASH")


def test_a_failure_explained_by_its_message_only_where_the_issue_names_one() -> None:
    applied = known(Mode.ON)
    removed = applied.settle([replace(result("s/other", Status.CRASH), message="DXGI_ERROR_DEVICE_REMOVED")])
    assert removed.status is Status.EXPECTED_FAIL and removed.known_issue.id == "T-REMOVED"
    passed = applied.settle([result("s/other", Status.PASS)])
    assert passed.status is Status.PASS and passed.known_issue is None  # a 'sometimes' issue: a pass says nothing


def test_a_known_issue_that_passes_is_unexpected_and_fails_the_run_only_when_strict() -> None:
    on = known(Mode.ON).settle([result("s/zero-axis0", Status.INVALID_OK)])
    assert on.status is Status.UNEXPECTED_PASS and on.outcome is Status.INVALID_OK and on.acceptable
    strict = known(Mode.STRICT).settle([result("s/zero-axis0", Status.INVALID_OK)])
    assert strict.status is Status.UNEXPECTED_PASS and not strict.acceptable
    assert known(Mode.STRICT).settle([result("s/zero-axis0", Status.FAIL)]).acceptable


def test_off_applies_nothing_and_a_users_baseline_comes_first(tmp_path: Path) -> None:
    off = known(Mode.OFF).settle([result("s/zero-axis0", Status.FAIL)])
    assert off.status is Status.FAIL and off.known_issue is None and not off.acceptable
    with_baseline = known(Mode.ON, expectations(tmp_path, "s/zero-axis0,FAIL\n"))
    settled = with_baseline.settle([result("s/zero-axis0", Status.FAIL)])
    assert settled.status is Status.EXPECTED_FAIL and settled.known_issue is None and settled.expectation
    above = known(Mode.ON).settle([result("s/zero-axis0", Status.NOT_REQUIRED, required=False,
                                          outcome=Status.FAIL)])
    assert above.status is Status.NOT_REQUIRED and above.known_issue is None


def test_the_next_baseline_leaves_the_releases_known_issues_out() -> None:
    applied = known(Mode.ON)
    results = [applied.settle([result("s/zero-axis0", Status.FAIL)]), applied.settle([result("s/other", Status.FAIL)])]
    text = next_baseline(results, applied)
    assert "s/other,FAIL" in text and "s/zero-axis0" not in text
