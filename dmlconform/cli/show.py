"""`dmlconform show CASE_ID [--result RUN.json]`: one case in DML terms, element by element."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import click

from dmlconform.cli.common import bundled_suites, fail, make_console, suite_limit_option

if TYPE_CHECKING:
    from dmlconform.suite.limits import SuiteLimits


@click.command()
@click.argument("case_id")
@click.option("--result", "result_path", metavar="RUN.json", type=click.Path(path_type=Path, dir_okay=False),
              help="A run's JSON result: show what the backend returned for the case (its artifacts, else the case "
              "run again on that backend) against what it should have returned.")
@click.option("--suites", "suite_paths", multiple=True, type=click.Path(path_type=Path),
              help="Suite files or folders to find the case in (default: the bundled test_vectors/). Repeatable.")
@click.option("--top", default=10, show_default=True, type=click.IntRange(1, 1000), help="Worst elements listed.")
@click.option("--no-rerun", is_flag=True, help="Never run the case again: without artifacts, show no actual values.")
@suite_limit_option
def show(case_id: str, result_path: Path | None, suite_paths: tuple[Path, ...], top: int, no_rerun: bool,
         suite_limits: SuiteLimits) -> None:
    """Show a case: its operator desc, tensor summaries, the rule with its numbers, and, with --result, the
    worst elements (indices, values, bit patterns), a ULP histogram and the reference's accumulation data.

    Exit status: 0 shown, 2 unusable input (no such case, unreadable result)."""
    from dmlconform.report.show import render_inspection
    from dmlconform.results import ResultsError
    from dmlconform.triage import TriageError
    from dmlconform.triage.inspection import inspect_case
    from dmlconform.triage.session import open_case

    try:
        session = open_case(case_id, result_path, list(suite_paths) or [bundled_suites()], not no_rerun,
                            suite_limits)
    except (ResultsError, TriageError) as exc:
        fail(str(exc))
    inspection = inspect_case(session.case, session.actual.outputs, session.target, top)
    render_inspection(inspection, make_console(), session.recorded, session.run,
                      session.actual.source if result_path else "", session.notes)
