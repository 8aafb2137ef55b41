"""Find a case by its full id: in the suite file a result names for it, else in the given suites."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

from dmlconform.case import Case
from dmlconform.case_result import CaseResult
from dmlconform.run_result import RunResult
from dmlconform.suite import SuiteError
from dmlconform.suite.limits import SuiteLimits
from dmlconform.suite.loader import load_paths, load_suite
from dmlconform.surface.paths import ExecutionPath, split_case_id
from dmlconform.triage import TriageError


@dataclass
class Located:
    case: Case
    #: The case's result in the given run, if a run was given.
    result: CaseResult | None
    #: Warnings for the reader: the suite file changed since the run, or was found elsewhere.
    notes: list[str]


def recorded_result(run: RunResult, case_id: str, result_file: Path) -> CaseResult:
    for result in run.results:
        if result.id == case_id:
            return result
    close = [r.id for r in run.results if case_id.split("/")[-1] in r.id][:3]
    hint = f" (similar: {', '.join(close)})" if close else ""
    raise TriageError(f"{result_file}: case {case_id}: not in this result{hint}")


def locate(case_id: str, suites: list[Path], run: RunResult | None = None, result_file: Path | None = None,
           limits: SuiteLimits | None = None) -> Located:
    """The case, loaded from the file its result names when that file is still there, else from `suites`; a case id
    ending in `@graph` or `@in-place` (contract §9) is the suite's case on that path."""
    result = recorded_result(run, case_id, result_file or Path("result")) if run is not None else None
    suite_id, path = split_case_id(case_id)
    notes: list[str] = []
    try:
        case = _from_recorded_file(suite_id, result, suites, limits) if result is not None else None
        if case is None:
            case = next((c for c in load_paths(suites, limits=limits) if c.full_id == suite_id), None)
            if case is not None and result is not None and result.file:
                notes.append(f"the run's suite file {result.file} is not here; found the case in {case.file}")
    except SuiteError as exc:
        raise TriageError(str(exc)) from None
    if case is None:
        where = ", ".join(str(p) for p in suites)
        raise TriageError(f"case {suite_id}: in none of the suites {where} (name its suite file with --suites PATH)")
    if path is not ExecutionPath.OPERATOR:
        on_path = case.on_path(path)
        if on_path is None:
            raise TriageError(f"case {case_id}: the {path.value} path does not apply to {suite_id} "
                              "(in place: only an operator whose page allows it, never a negative case)")
        case = on_path
    if run is not None and run.suite is not None and case.suite in run.suite.files:
        recorded = run.suite.files[case.suite]
        now = hashlib.sha256(case.file.read_bytes()).hexdigest()
        if recorded != now:
            notes.append(f"{case.file} has changed since the run (SHA-256 {now[:12]}…, the run had "
                         f"{recorded[:12]}…): the case may not be the one that ran")
    return Located(case, result, notes)


def _from_recorded_file(case_id: str, result: CaseResult, suites: list[Path], limits: SuiteLimits | None
                        ) -> Case | None:
    file = Path(result.file) if result.file else None
    if file is None or not file.is_file():
        return None
    # A suite may read data anywhere in the tree it was loaded with; use that tree when it is one we know.
    roots = [p.resolve() for p in suites if p.is_dir() and file.resolve().is_relative_to(p.resolve())]
    cases, _ = load_suite(file, roots[0] if roots else file.parent, limits=limits)
    return next((c for c in cases if c.full_id == case_id), None)
