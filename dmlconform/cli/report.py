"""`dmlconform report RUN.json [OLD.json] [--html FILE]`: a result's report again, with changes since OLD."""

from __future__ import annotations

from pathlib import Path

import click

from dmlconform.cli.common import fail, make_console, write_html_report


@click.command()
@click.argument("run_path", metavar="RUN.json", type=click.Path(path_type=Path, dir_okay=False))
@click.argument("old_path", metavar="[OLD.json]", required=False, type=click.Path(path_type=Path, dir_okay=False))
@click.option("--html", "html_path", type=click.Path(path_type=Path, dir_okay=False),
              help="Write a self-contained HTML report here (works offline) instead of printing the report.")
@click.option("--show", "failures_shown", default=25, show_default=True, type=click.IntRange(0),
              help="Failing cases printed in full (console report).")
def report(run_path: Path, old_path: Path | None, html_path: Path | None, failures_shown: int) -> None:
    """Report on a result: the console report, or with --html a single HTML file. Given OLD.json too, the
    report includes what changed since that run (as `dmlconform diff OLD.json RUN.json`).

    Exit status: 0 written, 2 unusable input. (`run` and `diff` give the verdicts as exit statuses.)"""
    from dmlconform.report.console import render
    from dmlconform.report.diff import render_diff
    from dmlconform.results import ResultsError
    from dmlconform.results.diff import diff_runs
    from dmlconform.results.document import read_document

    try:
        run = read_document(run_path)
        old = read_document(old_path) if old_path is not None else None
    except ResultsError as exc:
        fail(str(exc))
    if html_path is not None:
        write_html_report(run, html_path, old)
        click.echo(f"wrote {html_path}")
        return
    console = make_console()
    render(run, console, failures_shown)
    if old is not None:
        console.print()
        render_diff(diff_runs(old, run), console, str(old_path), str(run_path), failures_shown or 1)
