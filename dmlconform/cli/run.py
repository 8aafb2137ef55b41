"""`dmlconform run`: select, shard, run in worker processes, settle retries against expectations, journal
every case as it finishes, and write the reports; SIGINT/SIGTERM stop it cleanly (exit 130/143). The engine
is dmlconform.cli.execution, which `dmlconform certify` shares."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click

from dmlconform.cli.common import (
    EXIT_FAILED,
    EXIT_OK,
    TIER_HELP,
    check_session_config,
    directml_options,
    fail,
    known_issue_choice,
    known_issue_options,
    make_console,
    parse_level,
    parse_path_option,
    parse_shard_option,
    path_option,
    suite_limit_option,
    write_reports,
)
from dmlconform.suite.tiers import NAMES

if TYPE_CHECKING:
    from dmlconform.cli.early_start import EarlyStart
    from dmlconform.cli.execution import StopRequest
    from dmlconform.run_result import RunResult
    from dmlconform.suite.limits import SuiteLimits


@click.command()
@click.argument("paths", nargs=-1, type=click.Path(path_type=Path))
@click.option("--backend", "backend_name", default="numpy", show_default=True,
              help="Backend to test: numpy (the reference), directml (the real DirectML.dll), onnxruntime, native, "
              "torch, or a plugin's (`dmlconform backends` lists them).")
@click.option("--feature-level", "level_text", metavar="L", help="Judge at this level (e.g. 5_1) instead of "
              "the level the backend claims.")
@click.option("-k", "expression", metavar="EXPR", help="Select cases: words (id substring, op, dtype or tag) "
              "joined by and/or/not.")
@click.option("--json", "json_path", type=click.Path(path_type=Path), help="Write the JSON result here.")
@click.option("--junit", "junit_path", type=click.Path(path_type=Path), help="Write JUnit XML here.")
@click.option("--jobs", "-j", default=1, show_default=True, type=click.IntRange(0, 256),
              help="Worker processes, each with its own backend (its own harness); 0: one per CPU.")
@click.option("--shard", "shard_text", metavar="I/N", help="Run part I of N of the selected cases (stable, "
              "balanced by estimated cost); `dmlconform merge` puts the parts together.")
@click.option("--journal", "journal_path", type=click.Path(path_type=Path), help="Journal every finished case "
              "here (JSON lines, fsync'ed). Default with --json: NAME.journal.jsonl beside it.")
@click.option("--resume", is_flag=True, help="Continue the run in the journal: cases in it are not run again. "
              "Without a journal the run starts afresh.")
@click.option("--baseline", type=click.Path(path_type=Path, dir_okay=False), help="CSV of case_id_or_regex,STATUS: "
              "known failures (EXPECTED_FAIL); passing ones become UNEXPECTED_PASS.")
@click.option("--failures", "failures_path", type=click.Path(path_type=Path, dir_okay=False),
              help="Write the next baseline: every case that did not match, new ones marked.")
@click.option("--skip", "skip_paths", multiple=True, type=click.Path(path_type=Path, dir_okay=False),
              help="File of regexes (one a line): matching cases are SKIPPED, not run. Repeatable.")
@click.option("--flakes", "flake_paths", multiple=True, type=click.Path(path_type=Path, dir_okay=False),
              help="File of regexes of known flaky cases: an unexpected result of one is FLAKE. Repeatable.")
@click.option("--retries", type=click.IntRange(0, 20), help="Runs again a case that did not come out as expected; "
              "runs that disagree give FLAKE. [default: 1 on native, else 0]")
@click.option("--repeat", default=1, show_default=True, type=click.IntRange(1, 1000),
              help="Run each case N times and report outputs that are not bit-identical.")
@click.option("--ep", default="auto", show_default=True, type=click.Choice(["auto", "dml", "cuda", "cpu"]),
              help="ONNX Runtime execution provider (onnxruntime backend).")
@click.option("--device", default="cpu", show_default=True, metavar="cpu|cuda[:N]",
              help="PyTorch device (torch backend).")
@click.option("--harness", metavar="'CMD ARGS'", help="Native harness command line (native backend); for the "
              "onnxruntime backend, an ONNX model host of your own to run the graphs in (--ep dml off Windows uses "
              "the packaged one under Wine unless told otherwise).")
@click.option("--timeout", "timeout_s", default=60.0, show_default=True, type=click.FloatRange(0.001),
              help="Seconds one case may take: the native harness is then killed; a worker process of any "
              "backend that overruns by far more (time for a harness restart, plus 5 s) is killed too.")
@click.option("--variant", metavar="NAME", help="Reference behaviour where the docs are silent, e.g. swapped "
              "or nan-passes (numpy backend; torch: literal or swapped).")
@click.option("--show", "failures_shown", default=25, show_default=True, type=click.IntRange(0),
              help="Failing cases printed in full.")
@click.option("--html", "html_path", type=click.Path(path_type=Path, dir_okay=False),
              help="Write a self-contained HTML report here (works offline).")
@click.option("--artifacts", "artifacts_dir", type=click.Path(path_type=Path, file_okay=False),
              help="Keep what the backend returned for each case that did not match, as DIR/<suite>/<id>/"
              "<output>.npy, recorded in the JSON result (for `dmlconform show` and `repro`).")
@click.option("--artifacts-all", is_flag=True, help="With --artifacts: keep the outputs of every case.")
@click.option("--tier", "tier_name", type=click.Choice(NAMES), help=TIER_HELP)
@click.option("--record", is_flag=True, help="Then add the run to the results history (`dmlconform history`), from "
              "the result document (--json's, when given).")
@click.option("--db", "history_db", metavar="URL", envvar="DMLCONFORM_DB", help="With --record: the history database "
              "(a SQLite file or postgresql://...; default $DMLCONFORM_DB, else one in the user's data folder).")
@click.option("--meta", "history_meta", multiple=True, metavar="KEY=VALUE", help="With --record: metadata of the run "
              "(build, branch, commit, CI job URL). Repeatable.")
@path_option
@directml_options
@known_issue_options
@suite_limit_option
def run(paths: tuple[Path, ...], backend_name: str, level_text: str | None, expression: str | None,
        json_path: Path | None, junit_path: Path | None, jobs: int, shard_text: str | None,
        journal_path: Path | None, resume: bool, baseline: Path | None, failures_path: Path | None,
        skip_paths: tuple[Path, ...], flake_paths: tuple[Path, ...], retries: int | None, repeat: int, ep: str,
        device: str, harness: str | None, timeout_s: float, variant: str | None, failures_shown: int,
        html_path: Path | None, artifacts_dir: Path | None, artifacts_all: bool, tier_name: str | None,
        record: bool, history_db: str | None, history_meta: tuple[str, ...], path_text: str,
        directml: str | None, directml_version: str | None, adapter: str | None, warp: bool,
        session_config: tuple[str, ...], program_options: tuple[str, ...], known_issues: str,
        known_issues_file: Path | None, known_issues_release: str | None, suite_limits: SuiteLimits) -> None:
    """Run suite files or folders (default: the bundled test_vectors/) through a backend.

    On the directml backend and --ep dml, the known issues of the DirectML release loaded are applied (--known-issues).

    Exit status: 0 every case came out as expected, 1 one did not, 2 unusable input or usage,
    130/143 stopped by SIGINT/SIGTERM (the reports are still written, with the rest NOT_RUN)."""
    arguments = dict(locals())
    from dmlconform.cli.early_start import start_early, wanted
    from dmlconform.processes import start_fork_server

    # The workers' fork server starts while this command imports; for a backend that starts this package's programs
    # a bare one, whose workers start them at once (cli/early_start.py) and import while the devices come up.
    start_fork_server(light=wanted(backend_name, arguments))
    early = start_early(backend_name, jobs, arguments)
    from dmlconform.cli.execution import StopRequest

    stop = StopRequest().install()
    try:
        status = _run(stop, early=early, **arguments)
    finally:
        stop.restore()
        if early is not None:
            early.discard()
    sys.exit(status)


def _run(stop: StopRequest, early: EarlyStart | None, paths: tuple[Path, ...], backend_name: str,
         level_text: str | None,
         expression: str | None, json_path: Path | None, junit_path: Path | None, jobs: int, shard_text: str | None,
         journal_path: Path | None, resume: bool, baseline: Path | None, failures_path: Path | None,
         skip_paths: tuple[Path, ...], flake_paths: tuple[Path, ...], retries: int | None, repeat: int, ep: str,
         device: str, harness: str | None, timeout_s: float, variant: str | None, failures_shown: int,
         html_path: Path | None, artifacts_dir: Path | None, artifacts_all: bool, tier_name: str | None,
         record: bool, history_db: str | None, history_meta: tuple[str, ...], path_text: str,
         directml: str | None, directml_version: str | None, adapter: str | None, warp: bool,
         session_config: tuple[str, ...], program_options: tuple[str, ...], known_issues: str,
         known_issues_file: Path | None, known_issues_release: str | None, suite_limits: SuiteLimits) -> int:
    from dmlconform.backends.base import BackendOptions
    from dmlconform.cli.common import write_html_report
    from dmlconform.cli.execution import RunRequest, default_journal, execute, finish_closing
    from dmlconform.report.console import render
    from dmlconform.results import ResultsError
    from dmlconform.results.expectations import load_expectations
    from dmlconform.runner import KeepOutputs

    level = parse_level(level_text)
    shard = parse_shard_option(shard_text)
    execution_paths = parse_path_option(path_text)
    if resume and journal_path is None and json_path is None:
        fail("--resume needs the journal: give --journal FILE, or --json FILE to use the journal beside it")
    try:
        expectations = load_expectations(baseline, list(skip_paths), list(flake_paths))
    except ResultsError as exc:
        fail(str(exc))
    if artifacts_all and artifacts_dir is None:
        fail("--artifacts-all needs --artifacts DIR")
    meta = _history_meta(record, history_meta)
    choice = known_issue_choice(known_issues, known_issues_file, known_issues_release)
    keep = KeepOutputs.NONE if artifacts_dir is None else KeepOutputs.ALL if artifacts_all else KeepOutputs.FAILING
    options = BackendOptions(ep=ep, harness=harness, timeout_s=timeout_s, variant=variant, device=device,
                             directml=directml, directml_version=directml_version, adapter=adapter, warp=warp,
                             session_config=check_session_config(session_config), program_options=program_options)
    request = RunRequest(paths, backend_name, options,
                         level, expression, tier_name, jobs, shard, journal_path or default_journal(json_path), resume,
                         expectations, retries, repeat, keep, artifacts_dir, json_path,
                         suite_limits=suite_limits, early=early, known_issues=choice, execution_paths=execution_paths)
    console = make_console()
    run = execute(request, stop, console)
    render(run, console, failures_shown)
    write_reports(run, json_path, junit_path, failures_path, expectations)
    if html_path is not None:
        write_html_report(run, html_path)
    if record:
        _record(run, json_path, history_db, meta)
    finish_closing()
    if stop.signal is not None:
        return stop.exit_status
    return EXIT_OK if run.passed else EXIT_FAILED


def _history_meta(record: bool, items: tuple[str, ...]) -> dict[str, str]:
    """--meta, checked before the run rather than after it."""
    if not items:
        return {}
    if not record:
        fail("--meta is for --record")
    from dmlconform.history import HistoryError
    from dmlconform.history.ingest import parse_meta

    try:
        return parse_meta(items)
    except HistoryError as exc:
        fail(str(exc))


def _record(run: RunResult, json_path: Path | None, url: str | None, meta: dict[str, str]) -> None:
    """The run into the history, from its result document: the file --json wrote (the same run as a later `history
    add` of that file), else the document as it would be written."""
    from dmlconform.history import HistoryError
    from dmlconform.history.database import open_database
    from dmlconform.history.ingest import add_records, read_record, record_from_text
    from dmlconform.report.json_report import dumps
    from dmlconform.results.document import to_document

    try:
        record = read_record(json_path, meta) if json_path is not None else \
            record_from_text(dumps(to_document(run)), "dmlconform run", meta)
        with open_database(url, create=True) as database:
            (added,) = add_records(database, [record])
            where = database.shown
    except HistoryError as exc:
        fail(str(exc))
    click.echo(f"dmlconform: recorded as run #{added.run_id} of {added.stack} in {where}", err=True)
