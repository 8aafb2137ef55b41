"""Expectations for CI: a baseline of known failures, skip lists and known flakes (deqp-runner's formats).

* Baseline (`--baseline`): CSV lines `case_id_or_regex,STATUS`. An entry equal to a case id applies to
  it; otherwise the entry is a regular expression that must match the whole id. The first exact entry
  wins, else the first matching regex. STATUS is one of FAIL, CRASH, TIMEOUT, ERROR, NOT_SUPPORTED in any
  case, with deqp-runner's spellings (Fail, Crash, Timeout, NotSupported) accepted.
* Skips (`--skip`) and flakes (`--flakes`): one regular expression per line, searched in the case id.
Blank lines and lines starting with `#` are ignored everywhere.

Beside them, the known issues of the DirectML release the backend loaded (dmlconform.known_issues), set once the
backend has said which release that is (`with_known_issues`): a case the user's baseline lists is the baseline's;
otherwise a failure a known issue explains is EXPECTED_FAIL with the issue beside it, and a pass of an `always` issue
UNEXPECTED_PASS (failing the run only in strict mode).
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field, replace
from pathlib import Path

from dmlconform.case_result import FAILURES, AppliedKnownIssue, CaseResult, Status
from dmlconform.known_issues import KnownIssue, Mode, Occurs, ReleaseIssues
from dmlconform.results import ResultsError
from dmlconform.run_result import ExpectationFile

_STATUS_NAMES = {s.value.replace("_", "").lower(): s for s in FAILURES}


@dataclass(frozen=True)
class _Entry:
    text: str
    status: Status | None  # None for skip and flake patterns
    source: str  # file:line
    pattern: re.Pattern[str] | None = None  # None: an exact case id (baseline only)


@dataclass
class Expectations:
    baseline: list[_Entry] = field(default_factory=list)
    skips: list[_Entry] = field(default_factory=list)
    flakes: list[_Entry] = field(default_factory=list)
    files: list[ExpectationFile] = field(default_factory=list)
    #: The loaded DirectML release's known issues, and how they are applied (None: not applied).
    known_issues: ReleaseIssues | None = None
    known_issue_mode: Mode = Mode.OFF

    def with_known_issues(self, issues: ReleaseIssues | None, mode: Mode) -> Expectations:
        return replace(self, known_issues=issues if mode is not Mode.OFF else None, known_issue_mode=mode)

    # -- lookups -----------------------------------------------------------------------------------
    def expected_failure(self, case_id: str) -> _Entry | None:
        exact = next((e for e in self.baseline if e.text == case_id), None)
        if exact is not None:
            return exact
        return next((e for e in self.baseline if e.pattern is not None and e.pattern.fullmatch(case_id)), None)

    def skip(self, case_id: str) -> _Entry | None:
        return next((e for e in self.skips if e.pattern is not None and e.pattern.search(case_id)), None)

    def known_flake(self, case_id: str) -> _Entry | None:
        return next((e for e in self.flakes if e.pattern is not None and e.pattern.search(case_id)), None)

    # -- the overlay -------------------------------------------------------------------------------
    def needs_retry(self, result: CaseResult) -> bool:
        """A run that did not come out as expected is tried again (when retries are allowed)."""
        return not self.overlay(result).acceptable

    def settle(self, attempts: list[CaseResult]) -> CaseResult:
        """One result from a case's attempts (each possibly of several repeats).

        FLAKE when the runs disagree on whether the case came out as expected: some did, some did not.
        Runs that all fail, even in different ways (FAIL then CRASH), are a failure, not a flake."""
        settled = [self.overlay(a) for a in attempts]
        runs = tuple(s for a in attempts for s in a.attempts) or tuple(_raw(a) for a in attempts)
        first_bad = next((s for s in settled if not s.acceptable), None)
        if first_bad is None:
            result = settled[0]
        else:
            result = first_bad
            good = [s for s in runs if self._as_expected(result, s)]
            if good:
                raw = _raw(result)
                result = replace(result, status=Status.FLAKE, outcome=raw,
                                 message=f"flaky: runs came to {', '.join(s.value for s in runs)}; "
                                         f"first unexpected: {result.message}")
            elif (known := self.known_flake(result.id)) is not None and result.required:
                raw = _raw(result)
                result = replace(result, status=Status.FLAKE, outcome=raw, expectation=known.source,
                                 message=f"known flake ({known.source}): {raw.value}: {result.message}")
            elif len(attempts) > 1:
                result = replace(result, message=f"{result.message} (every run failed: "
                                                 f"{', '.join(s.value for s in runs)})")
        result.attempts = runs
        result.duration_s = sum(a.duration_s for a in attempts)
        return result

    def _as_expected(self, result: CaseResult, raw: Status) -> bool:
        probe = replace(result, status=raw, outcome=None)
        if not result.required:
            return True
        return self.overlay(probe).acceptable

    def overlay(self, result: CaseResult) -> CaseResult:
        """The result as the baseline sees it: EXPECTED_FAIL, UNEXPECTED_PASS, a changed failure named."""
        if not result.required or result.status in (Status.SKIPPED, Status.NOT_RUN):
            return result
        raw = _raw(result)
        entry = self.expected_failure(result.id)
        if entry is None:
            return self._known_issue_overlay(result, raw)
        assert entry.status is not None
        base = replace(result, baseline=entry.status, expectation=entry.source)
        if raw.matched:
            return replace(base, status=Status.UNEXPECTED_PASS, outcome=raw,
                           message=f"passes now; the baseline ({entry.source}) expects {entry.status.value}: "
                                   f"{result.message}")
        if raw is entry.status:
            return replace(base, status=Status.EXPECTED_FAIL, outcome=raw,
                           message=f"known failure ({entry.source}): {result.message}")
        return replace(base, status=raw, outcome=None,
                       message=f"changed failure {entry.status.value}→{raw.value} (baseline {entry.source}): "
                               f"{result.message}")


    def _known_issue_overlay(self, result: CaseResult, raw: Status) -> CaseResult:
        issues = self.known_issues
        if issues is None:
            return result
        issue = issues.issue_for(result, raw)
        if issue is None:
            return result
        applied = applied_issue(issue, issues.release, self.known_issue_mode)
        name = f"DirectML {issues.release}'s known issue {issue.id}"
        if raw.matched:
            if issue.occurs is Occurs.SOMETIMES:
                return result
            return replace(result, status=Status.UNEXPECTED_PASS, outcome=raw, known_issue=applied,
                           message=f"passes: {name} expects {'/'.join(s.value for s in issue.outcomes)} "
                                   f"({issue.title}): {result.message}")
        if issue.explains(result, raw):
            return replace(result, status=Status.EXPECTED_FAIL, outcome=raw, known_issue=applied,
                           message=f"{name} ({issue.title}): {result.message}")
        return replace(result, status=raw, outcome=None, known_issue=applied,
                       message=f"not {name}: it expects {'/'.join(s.value for s in issue.outcomes)}"
                               f"{' with ' + repr(issue.message) if issue.message else ''}, this came to "
                               f"{raw.value}: {result.message}")


def applied_issue(issue: KnownIssue, release: str, mode: Mode) -> AppliedKnownIssue:
    return AppliedKnownIssue(issue.id, release, issue.title, issue.reference,
                             "strict" if mode is Mode.STRICT else "on")


def _raw(result: CaseResult) -> Status:
    return result.outcome if result.outcome is not None else result.status


# -- reading -------------------------------------------------------------------------------------------
def load_expectations(baseline: Path | None, skips: list[Path], flakes: list[Path]) -> Expectations:
    expectations = Expectations()
    if baseline is not None:
        expectations.baseline = _read(baseline, "baseline", expectations)
    for path in skips:
        expectations.skips += _read(path, "skip", expectations)
    for path in flakes:
        expectations.flakes += _read(path, "flakes", expectations)
    return expectations


def _read(path: Path, kind: str, expectations: Expectations) -> list[_Entry]:
    try:
        raw = path.read_bytes()
        text = raw.decode("utf-8-sig")
    except (OSError, UnicodeDecodeError) as exc:
        raise ResultsError(path, f"cannot be read ({exc})") from None
    expectations.files.append(ExpectationFile(kind, str(path), hashlib.sha256(raw).hexdigest()))
    entries = []
    for number, line in enumerate(text.splitlines(), start=1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        where = f"line {number}"
        source = f"{path.name}:{number}"
        if kind == "baseline":
            fields = [f.strip() for f in line.split(",")]
            if len(fields) != 2:
                raise ResultsError(path, f"has {len(fields)} fields; a baseline line is case_id_or_regex,STATUS",
                                   where)
            text_id, status_text = fields
            status = _STATUS_NAMES.get(status_text.replace("_", "").lower())
            if status is None:
                known = ", ".join(s.value for s in FAILURES)
                raise ResultsError(path, f"{status_text!r} is not a status a baseline can expect ({known})",
                                   where, "STATUS")
            entries.append(_Entry(text_id, status, source, _compile(path, text_id, where, "case_id_or_regex")))
        else:
            entries.append(_Entry(line, None, source, _compile(path, line, where, "regex")))
    return entries


def _compile(path: Path, text: str, where: str, field_name: str) -> re.Pattern[str]:
    if not text:
        raise ResultsError(path, "is empty", where, field_name)
    try:
        return re.compile(text)
    except (re.error, OverflowError, RecursionError) as exc:  # 'a{99999999999}' overflows, deep nesting recurses
        raise ResultsError(path, f"{text!r} is not a regular expression ({exc})", where, field_name) from None


# -- writing the next baseline -------------------------------------------------------------------------
def next_baseline(results: list[CaseResult], expectations: Expectations) -> str:
    """Every case that did not match, with what it came to: a file to use as the next `--baseline`.

    Lines that differ from the current baseline are preceded by a comment saying how (new, changed);
    cases the baseline lists that pass now are named in a comment and left out."""
    lines = ["# dmlconform baseline: case_id,STATUS (written by --failures)"]
    fixed = []
    used: set[str] = set()
    for result in results:
        if result.known_issue is not None and result.status is Status.EXPECTED_FAIL:
            continue  # DirectML's own, applied from its release's list: not for a baseline of the device
        raw = _raw(result)
        entry = expectations.expected_failure(result.id)
        if entry is not None:
            used.add(entry.source)
        if raw in (Status.SKIPPED, Status.NOT_RUN):
            if entry is not None:
                lines.append(f"# {result.status.value.lower().replace('_', ' ')} this time, kept from {entry.source}")
                lines.append(f"{result.id},{entry.status.value if entry.status else ''}")
            continue
        if not raw.failure:
            if entry is not None:
                fixed.append(f"# fixed: {result.id} (was {entry.status.value if entry.status else '?'}, "
                             f"{entry.source})")
            continue
        if entry is None:
            lines.append(f"# new: {raw.value}")
        elif entry.status is not raw:
            lines.append(f"# changed: {entry.status.value if entry.status else '?'}→{raw.value}")
        lines.append(f"{result.id},{raw.value}")
    # Entries for cases outside this run (another -k, another shard) stay as they were.
    kept = [f"{e.text},{e.status.value}" for e in expectations.baseline if e.source not in used and e.status]
    if kept:
        lines.append("# kept from the baseline: no case of this run matches these")
    return "\n".join(lines + kept + fixed) + "\n"
