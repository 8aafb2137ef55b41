"""`dmlconform history`: results over time. `add` (or `run --record`) keeps runs in a database (SQLite by default,
PostgreSQL for a team's server); `timeline`, `first-failure`, `flaky`, `drift`, `compare` and `runs` answer from it,
`report --html` draws it as a page, `prune` keeps the last runs per stack, `migrate` upgrades an older schema."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from dmlconform.cli.common import fail, make_console, write_json_output

if TYPE_CHECKING:
    from dmlconform.history.database import Database
    from dmlconform.history.queries import RunFilter

DB_HELP = ("The history database: a SQLite file (a path, or sqlite:///PATH; ?timeout=SECONDS: how long a writer waits "
           "for another) or postgresql://USER@HOST/DB. Default: $DMLCONFORM_DB, else history.sqlite in the user's data "
           "folder (~/.local/share/dmlconform on Linux).")


def _db_option(command: Callable[..., Any]) -> Callable[..., Any]:
    """--db on a subcommand; the group's (which reads $DMLCONFORM_DB) stands where it is not given."""
    return click.option("--db", "db", metavar="URL", help=DB_HELP)(command)


def _json_option(command: Callable[..., Any]) -> Callable[..., Any]:
    return click.option("--json", "json_path", metavar="FILE", type=click.Path(path_type=Path, dir_okay=False,
                                                                                 allow_dash=True),
                        help="Write the answer as JSON here ('-': standard output, instead of the tables).")(command)


def _filter_options(command: Callable[..., Any]) -> Callable[..., Any]:
    command = click.option("--where", "where", multiple=True, metavar="KEY=VALUE",
                           help="Only runs whose metadata KEY is VALUE (driver_version, branch, tier, ...). "
                           "Repeatable.")(command)
    return click.option("--stack", "stack", metavar="TEXT", help="Only stacks whose name contains TEXT (any case); "
                        "a stack is the backend on a device, e.g. 'directml on NVIDIA H100 80GB HBM3'.")(command)


def _run_filter(stack: str | None, where: tuple[str, ...]) -> RunFilter:
    from dmlconform.history.queries import RunFilter

    pairs = []
    for item in where:
        key, equals, value = item.partition("=")
        if not equals or not key:
            fail(f"--where {item}: give KEY=VALUE")
        pairs.append((key, value))
    return RunFilter(stack, tuple(pairs))


@contextmanager
def _database(context: click.Context, db: str | None, create: bool = False, check: bool = True) -> Iterator[Database]:
    """The database the command names (its --db, else the group's, else $DMLCONFORM_DB or the default); any
    HistoryError inside is one line and exit 2."""
    from dmlconform.history import HistoryError
    from dmlconform.history.database import open_database

    url = db or (context.obj or {}).get("db")
    try:
        with open_database(url, create=create, check=check) as database:
            yield database
    except HistoryError as exc:
        fail(str(exc))


def _answer(json_path: Path | None, document: dict[str, Any], draw: Callable[[], None]) -> None:
    if json_path is not None:
        write_json_output(json_path, document)
    if json_path is None or str(json_path) != "-":
        draw()


@click.group()
@click.option("--db", "db", metavar="URL", envvar="DMLCONFORM_DB", help=DB_HELP)
@click.pass_context
def history(context: click.Context, db: str | None) -> None:
    """Results over time: keep runs in a database and ask it when a case started failing, which cases are flaky,
    whose closeness creeps up, and what changed between driver or DirectML versions.

    Exit status: 0 answered, 2 unusable input or database (one line)."""
    context.obj = {"db": db}


@history.command()
@click.argument("paths", metavar="RESULT.json...", nargs=-1, required=True,
                type=click.Path(path_type=Path, dir_okay=False))
@click.option("--meta", "meta_items", multiple=True, metavar="KEY=VALUE",
              help="Metadata of the run(s): build, branch, commit, job URL... (stack=NAME names the stack). "
              "Repeatable.")
@_db_option
@_json_option
@click.pass_context
def add(context: click.Context, paths: tuple[Path, ...], meta_items: tuple[str, ...], db: str | None,
        json_path: Path | None) -> None:
    """Add result documents (.json or .json.xz) to the history, all in one transaction: a file that does not parse
    leaves the history as it was. A run the history holds already (the same content) is not added again."""
    from dmlconform.history import HistoryError
    from dmlconform.history.ingest import add_records, parse_meta, read_record
    from dmlconform.report.history import added_document, render_added

    try:
        meta = parse_meta(meta_items)
    except HistoryError as exc:
        fail(str(exc))
    with _database(context, db, create=True) as database:
        added = add_records(database, (read_record(path, meta) for path in paths))
        _answer(json_path, added_document(added, database.shown),
                lambda: render_added(added, make_console(), database.shown))


@history.command()
@click.option("--last", default=50, show_default=True, type=click.IntRange(1), help="The last N runs.")
@_filter_options
@_db_option
@_json_option
@click.pass_context
def runs(context: click.Context, last: int, stack: str | None, where: tuple[str, ...], db: str | None,
         json_path: Path | None) -> None:
    """The runs the history holds, oldest first, with their metadata; where a run ran on more than one execution path,
    each path's passed and failed cases."""
    from dmlconform.history.queries import path_counts, recent_runs
    from dmlconform.report.history import render_runs, runs_document

    with _database(context, db) as database:
        found = recent_runs(database, _run_filter(stack, where), last)
        paths = path_counts(database, [run.id for run in found])
        _answer(json_path, runs_document(found, database.shown, paths),
                lambda: render_runs(found, make_console(), paths))


@history.command()
@click.argument("case")
@click.option("--last", type=click.IntRange(1), help="Only the last N runs of each stack that held the case.")
@_filter_options
@_db_option
@_json_option
@click.pass_context
def timeline(context: click.Context, case: str, last: int | None, stack: str | None, where: tuple[str, ...],
             db: str | None, json_path: Path | None) -> None:
    """Every run's status, matched candidate, closeness and max ULP of one CASE (its id, or a part that names one
    case), per stack, oldest first."""
    from dmlconform.history.queries import timeline as answer
    from dmlconform.report.history import render_timeline, timeline_document

    with _database(context, db) as database:
        result = answer(database, case, _run_filter(stack, where), last)
        _answer(json_path, timeline_document(result, database.shown), lambda: render_timeline(result, make_console()))


@history.command("first-failure")
@click.argument("case", required=False)
@click.option("--all", "every", is_flag=True, help="Every case failing now.")
@_filter_options
@_db_option
@_json_option
@click.pass_context
def first_failure(context: click.Context, case: str | None, every: bool, stack: str | None, where: tuple[str, ...],
                  db: str | None, json_path: Path | None) -> None:
    """For CASE, or with --all every case failing now: on each stack, the last run that passed it and the first run
    that failed it since, with their metadata (build, commit, versions): the range to bisect. A case the stack's
    newer suite (of the same tier) no longer holds is not failing now; --json lists it with where it left."""
    from dmlconform.history.queries import first_failures
    from dmlconform.report.history import first_failure_document, render_first_failures

    if (case is None) == (not every):
        fail("first-failure: give a CASE or --all (not both)")
    with _database(context, db) as database:
        found = first_failures(database, _run_filter(stack, where), case)
        _answer(json_path, first_failure_document(found, database.shown),
                lambda: render_first_failures(found, make_console(), case is not None))


@history.command()
@click.option("--last", default=50, show_default=True, type=click.IntRange(2),
              help="Look at the last N runs of each stack and inputs.")
@click.option("--same", "same", multiple=True, metavar="KEY",
              help="Runs count as the same inputs only where this metadata key agrees too (e.g. commit). Repeatable.")
@click.option("--min-flips", default=2, show_default=True, type=click.IntRange(1),
              help="Flips between pass and fail that make a case flaky (one flip is a regression or a fix; a FLAKE "
              "status, retries that disagreed, always makes it flaky).")
@click.option("--show", "limit", default=50, show_default=True, type=click.IntRange(1), help="Rows printed.")
@_filter_options
@_db_option
@_json_option
@click.pass_context
def flaky(context: click.Context, last: int, same: tuple[str, ...], min_flips: int, limit: int, stack: str | None,
          where: tuple[str, ...], db: str | None, json_path: Path | None) -> None:
    """Cases whose status flips between runs of one stack with the same inputs (the same backend, driver and
    DirectML versions, suite, settings and expectations), with their flip rate: highest first."""
    from dmlconform.history.queries import flaky as answer
    from dmlconform.report.history import flaky_document, render_flaky

    with _database(context, db) as database:
        result = answer(database, _run_filter(stack, where), last, same, min_flips)
        _answer(json_path, flaky_document(result, database.shown),
                lambda: render_flaky(result, make_console(), limit))


@history.command()
@click.option("--last", default=50, show_default=True, type=click.IntRange(3), help="The last N runs of each stack.")
@click.option("--min-rise", default=0.1, show_default=True, type=click.FloatRange(0, min_open=True),
              help="How much the fitted closeness must rise over the runs (1 is a whole allowance).")
@click.option("--show", "limit", default=50, show_default=True, type=click.IntRange(1), help="Rows printed.")
@_filter_options
@_db_option
@_json_option
@click.pass_context
def drift(context: click.Context, last: int, min_rise: float, limit: int, stack: str | None, where: tuple[str, ...],
          db: str | None, json_path: Path | None) -> None:
    """Cases whose closeness (largest error over what the rule allows) rises over a stack's last runs, nearest to
    the limit first."""
    from dmlconform.history.queries import drift as answer
    from dmlconform.report.history import drift_document, render_drift

    with _database(context, db) as database:
        found = answer(database, _run_filter(stack, where), last, min_rise)
        _answer(json_path, drift_document(found, database.shown), lambda: render_drift(found, make_console(), limit))


@history.command()
@click.option("--by", "key", required=True, metavar="KEY",
              help="A metadata key: directml_version, driver_version, device, branch, tool_version, ...")
@click.option("--value", "values", multiple=True, metavar="V", help="Only these values. Repeatable.")
@click.option("--show", "limit", default=50, show_default=True, type=click.IntRange(1), help="Changed cases printed.")
@_filter_options
@_db_option
@_json_option
@click.pass_context
def compare(context: click.Context, key: str, values: tuple[str, ...], limit: int, stack: str | None,
            where: tuple[str, ...], db: str | None, json_path: Path | None) -> None:
    """Pass rate and behaviour fingerprint per value of a metadata KEY across all stacks, and the cases whose
    outcome differs between values on one stack."""
    from dmlconform.history.queries import compare as answer
    from dmlconform.report.history import compare_document, render_compare

    with _database(context, db) as database:
        result = answer(database, key, _run_filter(stack, where), values or None)
        _answer(json_path, compare_document(result, database.shown),
                lambda: render_compare(result, make_console(), limit))


@history.command()
@click.option("--keep", required=True, type=click.IntRange(1), help="Runs to keep per stack (the latest).")
@click.option("--stack", "stack", metavar="TEXT", help="Only stacks whose name contains TEXT (any case).")
@click.option("--dry-run", is_flag=True, help="Say what would go; remove nothing.")
@click.option("--vacuum", is_flag=True, help="Then give the freed space back to the file system (SQLite: VACUUM).")
@_db_option
@_json_option
@click.pass_context
def prune(context: click.Context, keep: int, stack: str | None, dry_run: bool, vacuum: bool, db: str | None,
          json_path: Path | None) -> None:
    """Keep the last N runs of each stack; remove the older ones and their case rows, in one transaction."""
    from dmlconform.history.queries import RunFilter
    from dmlconform.history.queries import prune as answer
    from dmlconform.report.history import pruned_document, render_pruned

    with _database(context, db) as database:
        result = answer(database, keep, RunFilter(stack), dry_run)
        if vacuum and not dry_run:
            database.vacuum()
        _answer(json_path, pruned_document(result, database.shown), lambda: render_pruned(result, make_console()))


@history.command()
@click.option("--html", "html_path", required=True, type=click.Path(path_type=Path, dir_okay=False),
              help="Write the page here: one self-contained file (no network, no script).")
@click.option("--last", default=50, show_default=True, type=click.IntRange(3), help="The last N runs of each stack.")
@_filter_options
@_db_option
@click.pass_context
def report(context: click.Context, html_path: Path, last: int, stack: str | None, where: tuple[str, ...],
           db: str | None) -> None:
    """A page of the history: pass rate per run and operator over time, flaky cases, first failures and closeness
    trends."""
    from dmlconform.atomic_file import write_atomically
    from dmlconform.history.queries import history_report
    from dmlconform.report.history_html import render_history_html

    with _database(context, db) as database:
        page = render_history_html(history_report(database, _run_filter(stack, where), last))
    try:
        write_atomically(html_path, page)
    except OSError as exc:
        fail(f"cannot write {html_path}: {exc.strerror or exc}")
    click.echo(f"wrote {html_path}")


@history.command()
@_db_option
@click.pass_context
def migrate(context: click.Context, db: str | None) -> None:
    """Upgrade the database's schema to this dmlconform's version (every dmlconform that uses it must then be as
    new)."""
    from dmlconform.history.database import migrate as upgrade

    with _database(context, db, create=True, check=False) as database:
        applied = upgrade(database)
        if applied:
            for migration in applied:
                click.echo(f"{database.shown}: schema version {migration.version}: {migration.what}")
        else:
            click.echo(f"{database.shown}: the schema is this dmlconform's already")
