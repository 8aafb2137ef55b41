"""`dmlconform coverage`: per operator, cases per data type × rank × feature level, and the cells with none; with
--interactions, the share of feature values, pairs and declared higher-order interactions the valid cases exercise."""

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
@click.option("--interactions", is_flag=True,
              help="Interaction coverage instead: per operator, the feature values, pairs and declared higher-order "
                   "combinations (docs/suites.md) some valid case exercises, and the missing ones.")
@suite_limit_option
def coverage(result: Path | None, paths: tuple[Path, ...], tier_name: str | None, json_path: Path | None,
             interactions: bool, suite_limits: SuiteLimits) -> None:
    """Cases per data type × rank × feature level, per operator, and the cells with none.

    One matrix per level of each operator's support table. Given a RESULT.json of `dmlconform run`, each cell
    shows matched/cases.

    With --interactions: per operator, how many of the possible feature values, pairs of features and declared
    higher-order interactions the tier's valid cases exercise, and which are missing. The goal is every value on
    the smoke tier, and every value, pair and declared interaction on the others.

    Exit status: 0 every cell holds a case (--interactions: the tier's goal is met), 1 it is not, 2 unusable
    input."""
    if interactions:
        if result is not None:
            fail("coverage --interactions reads the suites, not a RESULT.json")
        _interactions(paths, tier_name, json_path, suite_limits)
        return
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


def _interactions(paths: tuple[Path, ...], tier_name: str | None, json_path: Path | None,
                  suite_limits: SuiteLimits) -> None:
    from dmlconform.interactions.coverage import goal_orders
    from dmlconform.interactions.registry import cases_coverage
    from dmlconform.report.interactions import interactions_json, render_interactions, unmet

    cases = load_cases(paths, None, tier_name, limits=suite_limits)
    tier = tier_name or (None if paths else DEFAULT.value)
    goal = goal_orders(tier)
    found = cases_coverage(cases)
    if json_path is not None:
        write_json_output(json_path, interactions_json(found, goal, tier))
    else:
        render_interactions(found, goal, make_console())
    sys.exit(EXIT_FAILED if unmet(found, goal) else EXIT_OK)
