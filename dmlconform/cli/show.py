"""`dmlconform show CASE_ID [--result RUN.json]` (or `show RUN.json CASE_ID`): one case in DML terms, element by
element."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import click

from dmlconform.cli.common import bundled_suites, fail, make_console, suite_limit_option

if TYPE_CHECKING:
    from dmlconform.suite.limits import SuiteLimits


@click.command()
@click.argument("arguments", nargs=-1, metavar="[RUN.json] [CASE_ID]")
@click.option("--result", "result_path", metavar="RUN.json", type=click.Path(path_type=Path, dir_okay=False),
              help="A run's JSON result: show what the backend returned for the case (its artifacts, else the case "
              "run again on that backend) against what it should have returned.")
@click.option("--suites", "suite_paths", multiple=True, type=click.Path(path_type=Path),
              help="Suite files or folders to find the case in (default: the bundled test_vectors/). Repeatable.")
@click.option("--top", default=10, show_default=True, type=click.IntRange(1, 1000),
              help="Worst elements listed (RUN.json alone: the cases not as required listed).")
@click.option("--no-rerun", is_flag=True, help="Never run the case again: without artifacts, show no actual values.")
@suite_limit_option
def show(arguments: tuple[str, ...], result_path: Path | None, suite_paths: tuple[Path, ...], top: int, no_rerun: bool,
         suite_limits: SuiteLimits) -> None:
    """Show a case: its operator desc, tensor summaries, the rule with its numbers, and, with --result, the
    worst elements (indices, values, bit patterns), a ULP histogram and the reference's accumulation data.

    `show RUN.json CASE_ID` is `show CASE_ID --result RUN.json`; `show RUN.json` alone shows the run: its statuses,
    the execution paths it ran with each path's counts and verdict, and the cases not as required. A CASE_ID ending
    in @graph or @in-place is the case on that path; the recorded result's stray writes are listed.

    Exit status: 0 shown, 2 unusable input (no such case, unreadable result)."""
    from dmlconform.report.show import render_inspection
    from dmlconform.results import ResultsError
    from dmlconform.triage import TriageError
    from dmlconform.triage.inspection import inspect_case
    from dmlconform.triage.session import open_case

    if len(arguments) == 1 and result_path is None and _is_result_file(Path(arguments[0])):
        from dmlconform.report.show import render_run
        from dmlconform.results.document import read_document

        try:
            run = read_document(Path(arguments[0]))
        except ResultsError as exc:
            fail(str(exc))
        render_run(run, make_console(), arguments[0], top)
        return
    case_id, result_path = _case_and_result(arguments, result_path)
    try:
        session = open_case(case_id, result_path, list(suite_paths) or [bundled_suites()], not no_rerun,
                            suite_limits)
    except (ResultsError, TriageError) as exc:
        fail(str(exc))
    inspection = inspect_case(session.case, session.actual.outputs, session.target, top)
    render_inspection(inspection, make_console(), session.recorded, session.run,
                      session.actual.source if result_path else "", session.notes)


def _case_and_result(arguments: tuple[str, ...], result_path: Path | None) -> tuple[str, Path | None]:
    """CASE_ID, or RUN.json CASE_ID where the first is a result file that is there (unambiguous: a case id is not a
    file); with --result, the case id alone."""
    context = click.get_current_context()
    if not arguments:
        raise click.UsageError("missing argument 'CASE_ID'", context)
    if len(arguments) == 1:
        return arguments[0], result_path
    first = Path(arguments[0])
    if len(arguments) > 2 or not _is_result_file(first):
        raise click.UsageError(f"got {' '.join(arguments)}: give CASE_ID, or a result file that is there and then "
                               "CASE_ID (RUN.json CASE_ID)", context)
    if result_path is not None:
        raise click.UsageError(f"{first} and --result {result_path}: give the result once", context)
    return arguments[1], first


def _is_result_file(path: Path) -> bool:
    return path.is_file() and path.name.endswith((".json", ".json.xz"))
