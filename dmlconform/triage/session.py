"""Everything `show` and `repro` start from: the case, its recorded result, and what the backend returned."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from dmlconform.case import Case
from dmlconform.case_result import CaseResult
from dmlconform.feature_levels import HIGHEST, FeatureLevel
from dmlconform.results.document import read_document
from dmlconform.run_result import RunResult
from dmlconform.suite.limits import SuiteLimits
from dmlconform.triage.actual import Actual, actual_outputs
from dmlconform.triage.locate import locate


@dataclass
class Session:
    case: Case
    run: RunResult | None
    recorded: CaseResult | None
    actual: Actual
    #: The level results are judged at: the recorded run's, else the highest.
    target: FeatureLevel
    notes: list[str]


def open_case(case_id: str, result_file: Path | None, suites: list[Path], allow_rerun: bool = True,
              limits: SuiteLimits | None = None) -> Session:
    """Raises ResultsError (the result file) or TriageError (the case, the backend) with one line."""
    run = read_document(result_file) if result_file is not None else None
    located = locate(case_id, suites, run, result_file, limits)
    actual = actual_outputs(located.case, run, located.result, result_file, allow_rerun)
    target = run.target_level if run is not None else HIGHEST
    return Session(located.case, run, located.result, actual, target, located.notes + actual.notes)
