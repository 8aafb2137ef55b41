"""`dmlconform coverage`: per operator, cases per data type × rank × feature level, and the cells with none."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from dmlconform.cli.common import (
    EXIT_FAILED,
    EXIT_OK,
    TIER_HELP,
    fail,
    load_cases,
    make_console,
    suite_limit_option,
    write_json_output,
)
from dmlconform.suite.limits import SuiteLimits
from dmlconform.suite.tiers import DEFAULT, NAMES


@click.command()
@click.argument("result", required=False, type=click.Path(path_type=Path, dir_okay=False))
@click.option("--suites", "paths", multiple=True, type=click.Path(path_type=Path),
              help="Suite files or folders (repeatable). Default: the bundled suites of the tier.")
@click.option("--tier", "tier_name", type=click.Choice(NAMES), help=TIER_HELP)
@click.option("--json", "json_path", type=click.Path(path_type=Path, dir_okay=False, allow_dash=True),
              help="Write the coverage as JSON here ('-' for standard output) instead of the tables.")
@suite_limit_option
def coverage(result: Path | None, paths: tuple[Path, ...], tier_name: str | None, json_path: Path | None,
             suite_limits: SuiteLimits) -> None:
    """Cases per data type × rank × feature level, per operator, and the cells with none.

    One matrix per level of each operator's support table. Given a RESULT.json of `dmlconform run`, each cell
    shows matched/cases.

    Exit status: 0 every cell holds a case, 1 some cell holds none, 2 unusable input."""
    from dmlconform.report.coverage import coverage_json, render_coverage
    from dmlconform.results import ResultsError
    from dmlconform.results.coverage import coverage as compute
    from dmlconform.results.document import read_document

    run = None
    if result is not None:
        try:
            run = read_document(result)
        except ResultsError as exc:
            fail(str(exc))
    cases = load_cases(paths, None, tier_name, limits=suite_limits)
    found = compute(cases, run)
    tier = tier_name or (None if paths else DEFAULT.value)
    if json_path is not None:
        write_json_output(json_path, coverage_json(found, tier))
    else:
        render_coverage(found, make_console())
    sys.exit(EXIT_FAILED if found.empty else EXIT_OK)
