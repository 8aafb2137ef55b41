"""DirectML's known issues in a certification: applied as DirectML's waivers, with their provenance.

`certify` applies the list its dmlconform ships for the release the backend loaded (dmlconform.known_issues): a
required case that did not match and that a known issue explains is WAIVED, its waiver naming the issue and the list
it came from, with the issue itself beside it (`known_issue`). The package keeps exactly the issues applied
(known-issues.json, canonical bytes) and certification.json records the release, the list's source and digest and
what each issue covered. `verify` checks that record against the package and then re-derives it with the list *its
own* dmlconform ships for that release, naming every difference: a case waived by an issue the verifier's list does
not grant for it is a claim that does not hold (exit 1), not a package that was tampered with.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from dmlconform.case_result import AppliedWaiver, CaseResult, Status
from dmlconform.certification.waivers import waivable
from dmlconform.known_issues import KnownIssueList, Mode, ReleaseIssues
from dmlconform.results.expectations import applied_issue
from dmlconform.verdicts import effective_status, known_issue_cases


def granted_by(issues: ReleaseIssues) -> str:
    return f"{issues.source}: known issues of DirectML {issues.release} (sha256 {issues.sha256[:12]})"


def apply_known_issues(results: list[CaseResult], issues: ReleaseIssues) -> None:
    """Every waivable case a known issue explains becomes WAIVED by it (in place, in `results`)."""
    for position, result in enumerate(results):
        if not waivable(result):
            continue
        raw = effective_status(result)
        issue = issues.issue_for(result, raw)
        if issue is None or not issue.explains(result, raw):
            continue
        waiver = AppliedWaiver(issue.id, f"DirectML {issues.release}'s known issue: {issue.title}", granted_by(issues),
                               issues.date)
        results[position] = replace(result, status=Status.WAIVED, outcome=raw, waiver=waiver,
                                    known_issue=applied_issue(issue, issues.release, Mode.ON),
                                    message=f"waived (DirectML {issues.release}'s known issue {issue.id}): "
                                            f"{raw.value}: {result.message}")


def known_issue_use(results: list[CaseResult], issues: ReleaseIssues | None) -> dict[str, Any]:
    """What the issues came to in results that carry them: the cases each covered, and those that covered none."""
    applied = {issue_id: [r.id for r in cases] for issue_id, cases in known_issue_cases(results)[0].items()}
    listed = [i.id for i in issues.issues] if issues is not None else []
    return {"applied": applied, "unneeded": [i for i in listed if i not in applied]}


def rederived(release: str, backend: str, package: ReleaseIssues | None, ours: KnownIssueList,
              results: list[CaseResult]) -> tuple[list[tuple[str, str]], list[str]]:
    """The package's known issues (None: it applied none) against this dmlconform's list for the same release:
    (claim problems as (case id, message), notes).

    A case the package waived as a known issue that our list does not explain for it is a claim problem; any other
    difference (an issue added, removed or changed, a failure our list would waive) is a note."""
    problems: list[tuple[str, str]] = []
    notes: list[str] = []
    if not ours.knows(release, backend):
        mine = None
        notes.append(f"{ours.source} has no known-issue list for DirectML {release} through {backend}")
    else:
        mine = ours.for_release(release, backend)
        if package is None:
            notes.append(f"the package applied no known issues; {ours.source} has {len(mine.issues)} for DirectML "
                         f"{release} through {backend} (sha256 {mine.sha256[:12]})")
        elif mine.sha256 != package.sha256:
            theirs_by_id = {i.id: i for i in package.issues}
            mine_by_id = {i.id: i for i in mine.issues}
            for issue_id in sorted(theirs_by_id.keys() - mine_by_id.keys()):
                notes.append(f"issue {issue_id}: in the package's list ({package.source}), not in {ours.source}'s")
            for issue_id in sorted(mine_by_id.keys() - theirs_by_id.keys()):
                notes.append(f"issue {issue_id}: in {ours.source}'s list, not in the package's ({package.source})")
            for issue_id in sorted(mine_by_id.keys() & theirs_by_id.keys()):
                if mine_by_id[issue_id].to_json() != theirs_by_id[issue_id].to_json():
                    changed = [k for k, v in mine_by_id[issue_id].to_json().items()
                               if theirs_by_id[issue_id].to_json().get(k) != v]
                    notes.append(f"issue {issue_id}: {', '.join(changed)} differ between the package's list "
                                 f"({package.source}) and {ours.source}'s")
    for result in results:
        raw = effective_status(result)
        if result.known_issue is not None and result.status is Status.WAIVED:
            issue = mine.issue_for(result, raw) if mine is not None else None
            if issue is None or issue.id != result.known_issue.id or not issue.explains(result, raw):
                problems.append((result.id, f"waived as DirectML {release}'s known issue {result.known_issue.id}, "
                                            f"which {ours.source}'s list does not grant for it"))
        elif mine is not None and result.required and raw.failure and result.status is not Status.WAIVED:
            issue = mine.issue_for(result, raw)
            if issue is not None and issue.explains(result, raw):
                notes.append(f"case {result.id}: {ours.source}'s list explains its {raw.value} as DirectML "
                             f"{release}'s known issue {issue.id}; the package does not waive it")
    return problems, notes
