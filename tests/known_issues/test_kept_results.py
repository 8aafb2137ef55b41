"""The shipped known issues and every kept real-DirectML result, in step (docs/known-issues.md):

* every failure in every kept result (all stacks, all tiers, all releases, old suites too) is a known issue of its
  release, explained by it (the outcome, and the message where the issue names one);
* every known issue shows on two or more stacks of each release it names, and its evidence names them;
* an `always` issue fails every case it covers in every kept result taken on today's suites, so a suite regenerated
  under a known issue (a case moved, a seed changed) fails here, not in a vendor's certification;
* the kept results taken on today's suites are on today's suites (the standard tier's and the full tier's files).

Reading the kept results is most of the time here (270 MB of JSON, the full tier's most of it): as the tier scans do,
the test command reads all but the full tier's (`--scan-tier smoke`) and CI's last step all of them (`--scan-tier
standard`); the tests are marked tier_scan for that step.
"""

from __future__ import annotations

import json
import lzma
import re
from collections import defaultdict
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import pytest

from dmlconform.backend_info import BackendInfo
from dmlconform.case_result import FAILURES, CaseResult, Status
from dmlconform.feature_levels import HIGHEST
from dmlconform.known_issues import KnownIssue, KnownIssueList, Occurs, loaded_release, shipped
from dmlconform.results.expectations import Expectations, load_expectations

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "examples"
RECORD = EXAMPLES / "dml_harness" / "results" / "full-tier.json"
#: Failures seen on one stack only: that stack's, in a baseline of its own (`# stack:` a word of its device name,
#: `# release:` the DirectML release; then case_id_or_regex,STATUS lines).
STACK_BASELINES = EXAMPLES / "dml_harness" / "results" / "stack-baselines"
CURRENT_MATRIX = EXAMPLES / "dml_harness" / "results" / "matrix" / "current"


@dataclass(frozen=True)
class Kept:
    """One kept result of a backend that loads DirectML: where, which release through which backend, on which stack."""

    path: Path
    release: str
    backend: str
    stack: str
    #: Suite name -> SHA-256 of the file the result ran.
    suite_files: dict[str, str]
    cases: tuple[CaseResult, ...]

    @property
    def name(self) -> str:
        return str(self.path.relative_to(REPO))


def _case(entry: dict) -> CaseResult:
    status = Status(entry["status"])
    outcome = Status(entry["outcome"]) if entry.get("outcome") else None
    return CaseResult(entry["id"], entry["op"], entry["dtype"], entry["rank"], HIGHEST, status,
                      required=entry.get("required", True), outcome=outcome, message=entry.get("message", ""),
                      attempts=tuple(Status(s) for s in entry.get("attempts", [])),
                      output_sha256=entry.get("output_sha256"))


pytestmark = pytest.mark.tier_scan


def of_the_full_tier(path: Path) -> bool:
    """A kept result of the full tier, by its place: a `full` folder of a matrix, or `...-full.json.xz`."""
    return "full" in path.relative_to(EXAMPLES).parts[:-1] or path.name.endswith("-full.json.xz")


@pytest.fixture(scope="module")
def with_full_tier(scanned_cases: object, request: pytest.FixtureRequest) -> bool:
    return request.config.getoption("--scan-tier") == "standard"


@pytest.fixture(scope="module")
def kept(with_full_tier: bool) -> tuple[Kept, ...]:
    return kept_results(with_full_tier)


@cache
def kept_results(with_full_tier: bool = False) -> tuple[Kept, ...]:
    found = []
    for path in sorted([*EXAMPLES.rglob("*.json"), *EXAMPLES.rglob("*.json.xz")]):
        if of_the_full_tier(path) and not with_full_tier:
            continue
        raw = lzma.decompress(path.read_bytes()) if path.name.endswith(".xz") else path.read_bytes()
        document = json.loads(raw)
        if not isinstance(document, dict) or document.get("format") != "dmlconform-result/v1":
            continue
        backend = document["backend"]
        info = BackendInfo(backend["name"], backend["version"], backend["device"], HIGHEST, "",
                           {k: str(v) for k, v in backend.items()})
        loaded = loaded_release(info)
        if loaded is None:
            continue
        release_backend, release = loaded
        assert release is not None, f"{path}: a kept result whose DirectML release cannot be read"
        stack = f"{backend['device']} (driver {backend.get('driver_version', '?')})"
        found.append(Kept(path, release, release_backend, stack, (document.get("suite") or {}).get("files", {}),
                          tuple(_case(entry) for entry in document["cases"] if _of_interest(entry))))
    return tuple(found)


@cache
def _always_patterns() -> re.Pattern[str]:
    return re.compile("|".join(f"(?:{case})" for issue in shipped().issues if issue.occurs is Occurs.ALWAYS
                               for case in issue.cases))


def _of_interest(entry: dict) -> bool:
    """A case some check looks at: one that failed in some way, or one an `always` issue may cover (most cases are
    neither, and making a CaseResult of each of 240,000 would take most of this module's time)."""
    statuses = {entry["status"], entry.get("outcome"), *entry.get("attempts", [])}
    return bool(statuses & _FAILURE_NAMES) or _always_patterns().fullmatch(entry["id"]) is not None


_FAILURE_NAMES = {s.value for s in FAILURES}


def failures(result: CaseResult) -> set[Status]:
    """Every failure the case came to: its outcome, and each of its runs (a FLAKE's failing one too). Above the
    device's level a case the harness does not declare is NOT_SUPPORTED as it should be: not a failure."""
    raw = result.outcome if result.outcome is not None else result.status
    found = {s for s in (raw, *result.attempts) if s in FAILURES}
    return found - {Status.NOT_SUPPORTED} if not result.required else found


def explained(issues: tuple[KnownIssue, ...], result: CaseResult, raw: Status) -> KnownIssue | None:
    """The issue that explains the case's failure `raw`. A result keeps the message of one run only (the outcome's):
    another run's failure is explained by an issue's outcome alone."""
    final = result.outcome if result.outcome is not None else result.status
    if raw is not final:
        return next((i for i in issues if i.covers(result) and raw in i.outcomes), None)
    return next((i for i in issues if i.covers(result) and i.explains(result, raw)), None)


def issues_for(listing: KnownIssueList, kept: Kept) -> tuple[KnownIssue, ...]:
    return listing.for_release(kept.release, kept.backend).issues


@cache
def todays_suite_files() -> dict[str, str]:
    """Suite name -> SHA-256 of today's file: the bundled suites, and the full tier as full-tier.json records it."""
    from dmlconform.cli import bundled_suites
    from dmlconform.suite.fingerprint import suite_file_hashes
    from dmlconform.suite.loader import load_paths

    files = suite_file_hashes(load_paths([bundled_suites()]))
    files.update(json.loads(RECORD.read_text())["files"])
    return files


def on_todays_suites(kept: Kept, case_id: str) -> bool:
    suite = case_id.split("/", 1)[0]
    return suite in todays_suite_files() and kept.suite_files.get(suite) == todays_suite_files()[suite]


def test_the_kept_results_are_found(kept: tuple[Kept, ...], with_full_tier: bool):
    assert sum(len(k.cases) for k in kept) > 5_000  # the failures and the cases an issue covers
    releases = {k.release for k in kept if k.backend == "directml"}
    assert releases == set(shipped().measured["directml"])
    assert {k.release for k in kept if k.backend == "onnxruntime-dml"} == set(shipped().measured["onnxruntime-dml"])
    assert len({k.stack for k in kept}) >= 3 and len(kept) >= (60 if with_full_tier else 35)
    if with_full_tier:  # a full-tier result is where of_the_full_tier looks for it, and only there
        assert all(of_the_full_tier(k.path) == any(name.endswith(".full") for name in k.suite_files) for k in kept)


@cache
def stack_baselines() -> tuple[tuple[str, str, Expectations], ...]:
    """(device word, release, baseline) of every stack baseline."""
    found = []
    for path in sorted(STACK_BASELINES.glob("*.csv")):
        header = dict(line[1:].strip().split(": ", 1) for line in path.read_text().splitlines()
                      if line.startswith("# stack: ") or line.startswith("# release: "))
        found.append((header["stack"], header["release"], load_expectations(path, [], [])))
    return tuple(found)


def in_stack_baseline(kept: Kept, result: CaseResult, raw: Status) -> bool:
    for word, release, baseline in stack_baselines():
        entry = baseline.expected_failure(result.id)
        if word in kept.stack and release == kept.release and entry is not None and entry.status is raw:
            return True
    return False


def unexplained_failures(listing: KnownIssueList, results: tuple[Kept, ...]) -> list[str]:
    unexplained = []
    for kept in results:
        issues = issues_for(listing, kept)
        for result in kept.cases:
            for raw in sorted(failures(result), key=lambda s: s.value):
                if explained(issues, result, raw) is None and not in_stack_baseline(kept, result, raw):
                    unexplained.append(f"{kept.name}: {result.id}: {raw.value}: {result.message[:100]}")
    return unexplained


def test_every_failure_in_every_kept_result_is_a_known_issue_of_its_release_or_its_stacks(kept: tuple[Kept, ...]):
    unexplained = unexplained_failures(shipped(), kept)
    assert not unexplained, (f"{len(unexplained)} failure(s) of real DirectML that no known issue of its release "
                             "explains (a failure on two stacks is DirectML's: add it to "
                             "dmlconform/known_issues/directml.yaml; on one stack, it is that stack's):\n"
                             + "\n".join(unexplained[:40]))


def single_stack_issues(listing: KnownIssueList, kept: tuple[Kept, ...]) -> list[str]:
    problems = []
    for issue in listing.issues:
        evidence = [REPO / entry for entry in issue.evidence]
        problems += [f"{issue.id}: evidence {path.relative_to(REPO)} does not exist" for path in evidence
                     if not path.exists()]
        for backend in issue.backends:
            for release in issue.releases:
                stacks = defaultdict(list)
                for result in (k for k in kept if k.release == release and k.backend == backend):
                    hits = [r for r in result.cases for raw in failures(r) if explained((issue,), r, raw)]
                    if hits:
                        stacks[result.stack].append(result)
                if len(stacks) < 2:
                    problems.append(f"{issue.id}: DirectML {release} through {backend}: shown on "
                                    f"{len(stacks)} stack(s) ({', '.join(stacks) or 'none'}); a known issue of "
                                    "DirectML is the same failure on two or more")
                    continue
                named = {result.stack for results in stacks.values() for result in results
                         if any(result.path == path or path in result.path.parents for path in evidence)}
                if len(named) < 2:
                    problems.append(f"{issue.id}: DirectML {release}: its evidence names results of {len(named)} "
                                    f"stack(s) of those that show it ({', '.join(stacks)})")
    return problems


def test_every_known_issue_shows_on_two_stacks_of_each_release_and_its_evidence_names_them(kept: tuple[Kept, ...]):
    problems = single_stack_issues(shipped(), kept)
    assert not problems, "\n".join(problems)


def always_issues_not_failing(listing: KnownIssueList, results: tuple[Kept, ...]) -> tuple[list[str], int]:
    """Cases an `always` issue covers that did not fail as the release's issues say (and how many were checked)."""
    problems = []
    checked = 0
    for kept in results:
        issues = issues_for(listing, kept)
        for issue in (i for i in issues if i.occurs is Occurs.ALWAYS):
            for result in kept.cases:
                if not issue.covers(result) or not on_todays_suites(kept, result.id):
                    continue
                checked += 1
                bad = failures(result)
                if not bad or not all(explained(issues, result, raw) for raw in bad):
                    problems.append(f"{kept.name}: {result.id} is {result.status.value}, but {issue.id} covers it")
    return problems, checked


def test_an_always_issue_fails_every_case_it_covers_in_every_kept_result_on_todays_suites(kept: tuple[Kept, ...]):
    problems, checked = always_issues_not_failing(shipped(), kept)
    assert not problems, ("known issues that cover cases they do not fail (a suite regenerated under them? take the "
                          "kept results again, or mend the issue's cases):\n" + "\n".join(problems[:40]))
    assert checked > 500


def test_every_stack_baseline_entry_is_used_and_on_one_stack_only(kept: tuple[Kept, ...], with_full_tier: bool):
    """A stack baseline holds what one stack showed: every entry matches a failure there, and none of another stack
    (a failure on two stacks is DirectML's, and belongs in the known issues)."""
    if not with_full_tier:
        pytest.skip("the one stack baseline is of a full-tier result: CI's last step (--scan-tier standard)")
    problems = []
    for word, release, baseline in stack_baselines():
        for entry in baseline.baseline:
            hits = {k.stack for k in kept if k.release == release for r in k.cases
                    if entry.status in failures(r) and baseline.expected_failure(r.id) is entry}
            if not hits or any(word not in stack for stack in hits):
                problems.append(f"{entry.source} ({entry.text}): fails on {sorted(hits) or 'no stack'}")
    assert not problems, "\n".join(problems)
    assert stack_baselines(), "the stack baselines are found"


def test_every_always_issue_covers_cases_of_todays_suites_on_two_stacks(kept: tuple[Kept, ...]):
    """An issue whose cases all moved away (a family renamed, reseeded) would apply to nothing: caught here."""
    listing = shipped()
    problems = []
    for issue in (i for i in listing.issues if i.occurs is Occurs.ALWAYS):
        for release in issue.releases:
            stacks = {k.stack for k in kept if k.release == release and k.backend in issue.backends
                      and any(issue.covers(r) and on_todays_suites(k, r.id) for r in k.cases)}
            if len(stacks) < 2:
                problems.append(f"{issue.id}: DirectML {release}: covers cases of today's suites in the kept results "
                                f"of {len(stacks)} stack(s)")
    assert not problems, "\n".join(problems)


def test_the_full_tier_is_the_one_the_kept_results_ran(kept: tuple[Kept, ...], with_full_tier: bool):
    """full-tier.json records the full tier of the kept results; the generator that makes it must not have changed
    since (else run examples/dml_harness/results/full_tier_record.py, which regenerates and compares)."""
    from dmlconform.generation.cache import generator_fingerprint

    record = json.loads(RECORD.read_text())
    assert record["generator"] == generator_fingerprint(), (
        "the full tier's generator changed since the kept real-DirectML results were taken: run "
        "python examples/dml_harness/results/full_tier_record.py (it regenerates the full tier and rewrites "
        "full-tier.json if no suite file of the kept results changed)")
    if not with_full_tier:
        return  # the generator is unchanged; the results themselves are read in CI's last step
    full = [k for k in kept if any(name.endswith(".full") for name in k.suite_files)
            and k.path.is_relative_to(CURRENT_MATRIX.parent.parent)]
    current = [k for k in full if all(k.suite_files.get(name) == digest for name, digest in record["files"].items())]
    assert len({k.stack for k in current}) >= 2, "no two stacks' full-tier results ran today's full tier"


@pytest.mark.parametrize("stack_word", ["llvmpipe", "NVIDIA"])
def test_the_current_matrix_holds_every_release_on_todays_standard_tier(stack_word: str, kept: tuple[Kept, ...]):
    """Every release measured was taken again on today's standard tier, on lavapipe and on an NVIDIA GPU."""
    releases = {k.release for k in kept if k.path.is_relative_to(CURRENT_MATRIX) and stack_word in k.stack
                and all(on_todays_suites(k, r.id) for r in k.cases if ".full/" not in r.id)}
    assert releases == set(shipped().measured["directml"])


# -- the checks above can fail ------------------------------------------------------------------------------------
def _stand_in(kept: Kept, changes: dict[str, Status]) -> Kept:
    """A kept result with some cases' statuses changed, as a stack that behaved otherwise would have given."""
    from dataclasses import replace

    cases = tuple(replace(c, status=changes[c.id], outcome=None, attempts=(changes[c.id],), message="")
                  if c.id in changes else c for c in kept.cases)
    return replace(kept, cases=cases)


def _lavapipe_standard(kept: tuple[Kept, ...]) -> Kept:
    return next(k for k in kept if k.name.endswith("directml-1.15.4-lavapipe-standard.json"))


def test_a_failure_no_issue_explains_is_caught(kept: tuple[Kept, ...]):
    from dataclasses import replace

    lavapipe = _lavapipe_standard(kept)
    failing = CaseResult("slice_grad.standard/cells-float32-r2-0", "SLICE_GRAD", "FLOAT32", 2, HIGHEST, Status.FAIL)
    assert unexplained_failures(shipped(), (replace(lavapipe, cases=(*lavapipe.cases, failing)),)) == [
        f"{lavapipe.name}: {failing.id}: FAIL: "]
    crashed = "slice_grad.smoke/merged-axes-float32-r2-0"  # a known issue's case, come to another failure
    assert unexplained_failures(shipped(), (_stand_in(lavapipe, {crashed: Status.CRASH}),)) == [
        f"{lavapipe.name}: {crashed}: CRASH: "]


def test_an_always_issue_whose_case_passes_on_todays_suites_is_caught(kept: tuple[Kept, ...]):
    lavapipe = _lavapipe_standard(kept)
    case = "slice_grad.standard/merged-axes-float16-r2-2"
    problems, _ = always_issues_not_failing(shipped(), (_stand_in(lavapipe, {case: Status.PASS}),))
    assert problems == [f"{lavapipe.name}: {case} is PASS, but DML-SLICE-GRAD-MERGED-AXES covers it"]


def test_an_issue_shown_on_one_stack_only_is_caught(kept: tuple[Kept, ...]):
    one_stack = tuple(k for k in kept if "llvmpipe" in k.stack)
    problems = single_stack_issues(shipped(), one_stack)
    assert any(p.startswith("DML-SLICE-GRAD-MERGED-AXES: DirectML 1.15.4 through directml: shown on 1 stack(s)")
               for p in problems)
