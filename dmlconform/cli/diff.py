"""`dmlconform diff OLD.json NEW.json`: regressions, fixes, new and vanished cases, and numeric drift."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from dmlconform.cli.common import EXIT_FAILED, EXIT_OK, fail, make_console, write_json_output


@click.command()
@click.argument("old_path", metavar="OLD.json", type=click.Path(path_type=Path, dir_okay=False))
@click.argument("new_path", metavar="NEW.json", type=click.Path(path_type=Path, dir_okay=False))
@click.option("--json", "json_path", metavar="FILE", type=click.Path(path_type=Path, dir_okay=False, allow_dash=True),
              help="Write the diff as JSON here ('-': standard output, instead of the console report).")
@click.option("--show", "limit", default=25, show_default=True, type=click.IntRange(1),
              help="Rows printed per group and groups' rows in all.")
def diff(old_path: Path, new_path: Path, json_path: Path | None, limit: int) -> None:
    """Compare two results: status transitions and numeric drift, grouped by operator, data type and feature
    level, worst first.

    Exit status: 0 nothing regressed, 1 a case regressed (matched before, not now) or failed another way,
    2 unusable input."""
    from dmlconform.report.diff import diff_document, render_diff
    from dmlconform.results import ResultsError
    from dmlconform.results.diff import diff_runs
    from dmlconform.results.document import read_document

    try:
        old, new = read_document(old_path), read_document(new_path)
    except ResultsError as exc:
        fail(str(exc))
    result = diff_runs(old, new)
    if json_path is not None:
        write_json_output(json_path, diff_document(result, str(old_path), str(new_path)))
    if json_path is None or str(json_path) != "-":
        render_diff(result, make_console(), str(old_path), str(new_path), limit)
    sys.exit(EXIT_FAILED if result.regressed else EXIT_OK)
