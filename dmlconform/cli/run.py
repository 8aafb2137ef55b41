"""`dmlconform run`: select, shard, run in worker processes, settle retries against expectations, journal
every case as it finishes, and write the reports; SIGINT/SIGTERM stop it cleanly (exit 130/143)."""

from __future__ import annotations

import os
import signal
import sys
import threading
import time
from datetime import UTC, datetime
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, Any

import click

from dmlconform import __version__
from dmlconform.cli.common import (
    EXIT_FAILED,
    EXIT_OK,
    TIER_HELP,
    fail,
    load_cases,
    make_console,
    parse_level,
    write_reports,
)
from dmlconform.suite.tiers import DEFAULT, NAMES

if TYPE_CHECKING:
    from dmlconform.case import Case
    from dmlconform.case_result import CaseResult, Status
    from dmlconform.feature_levels import FeatureLevel
    from dmlconform.results.journal import Journal, JournalWriter


class StopRequest:
    """SIGINT and SIGTERM set an event that the run loop polls; nothing is raised in the middle of a step."""

    def __init__(self) -> None:
        self.event = threading.Event()
        self.signal: signal.Signals | None = None
        self._previous: dict[int, Any] = {}

    def install(self) -> StopRequest:
        for sig in (signal.SIGINT, signal.SIGTERM):
            self._previous[sig] = signal.signal(sig, self._handle)
        return self

    def _handle(self, signum: int, frame: FrameType | None) -> None:
        if self.event.is_set():  # asked twice: the user means it, whatever the run is doing
            os._exit(128 + signum)
        self.signal = signal.Signals(signum)
        self.event.set()

    def restore(self) -> None:
        for sig, handler in self._previous.items():
            signal.signal(sig, handler)

    @property
    def exit_status(self) -> int:
        assert self.signal is not None
        return 128 + int(self.signal)


def default_journal(json_path: Path | None) -> Path | None:
    """Next to the JSON result: reports/numpy.json -> reports/numpy.journal.jsonl."""
    return None if json_path is None else json_path.with_name(json_path.stem + ".journal.jsonl")


def backend_settings(backend_name: str, ep: str, harness: str | None, timeout_s: float,
                     variant: str | None, device: str = "cpu") -> dict[str, Any]:
    """The backend options that change results, for this backend only (merge and resume compare them)."""
    if backend_name == "torch":
        return {"device": device, "variant": variant}
    if backend_name == "native":
        return {"harness": harness, "timeout_s": timeout_s}
    if backend_name == "onnxruntime":
        return {"ep": ep, **({"harness": harness, "timeout_s": timeout_s} if harness else {})}
    return {"variant": variant}


@click.command()
@click.argument("paths", nargs=-1, type=click.Path(path_type=Path))
@click.option("--backend", "backend_name", default="numpy", show_default=True,
              help="Backend to test: numpy (the reference), onnxruntime, native, torch, or a plugin's "
              "(`dmlconform backends` lists them).")
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
              "onnxruntime backend, an ONNX model host to run the graphs in (--ep dml on Linux uses "
              "examples/ort_dml_host/run_under_wine.sh unless told otherwise).")
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
def run(paths: tuple[Path, ...], backend_name: str, level_text: str | None, expression: str | None,
        json_path: Path | None, junit_path: Path | None, jobs: int, shard_text: str | None,
        journal_path: Path | None, resume: bool, baseline: Path | None, failures_path: Path | None,
        skip_paths: tuple[Path, ...], flake_paths: tuple[Path, ...], retries: int | None, repeat: int, ep: str,
        device: str, harness: str | None, timeout_s: float, variant: str | None, failures_shown: int,
        html_path: Path | None, artifacts_dir: Path | None, artifacts_all: bool, tier_name: str | None) -> None:
    """Run suite files or folders (default: the bundled test_vectors/) through a backend.

    Exit status: 0 every case came out as expected, 1 one did not, 2 unusable input or usage,
    130/143 stopped by SIGINT/SIGTERM (the reports are still written, with the rest NOT_RUN)."""
    stop = StopRequest().install()
    try:
        status = _run(**locals())
    finally:
        stop.restore()
    sys.exit(status)


def _run(stop: StopRequest, paths: tuple[Path, ...], backend_name: str, level_text: str | None,
         expression: str | None, json_path: Path | None, junit_path: Path | None, jobs: int, shard_text: str | None,
         journal_path: Path | None, resume: bool, baseline: Path | None, failures_path: Path | None,
         skip_paths: tuple[Path, ...], flake_paths: tuple[Path, ...], retries: int | None, repeat: int, ep: str,
         device: str, harness: str | None, timeout_s: float, variant: str | None, failures_shown: int,
         html_path: Path | None, artifacts_dir: Path | None, artifacts_all: bool, tier_name: str | None) -> int:
    from dmlconform.backends.base import BackendOptions
    from dmlconform.case_result import Status
    from dmlconform.cli.common import write_html_report
    from dmlconform.report.console import render
    from dmlconform.report.progress import progress_for
    from dmlconform.results import ResultsError
    from dmlconform.results.artifacts import save_artifacts
    from dmlconform.results.document import backend_json, configuration
    from dmlconform.results.expectations import load_expectations
    from dmlconform.results.journal import read_journal
    from dmlconform.run_result import RunResult, Shard, SuiteInfo
    from dmlconform.runner import KeepOutputs
    from dmlconform.runner.loading import default_helpers, parallel_parser
    from dmlconform.runner.pool import BackendStartError, WorkerPool, WorkerSetup
    from dmlconform.suite.fingerprint import selection_fingerprint, suite_file_hashes
    from dmlconform.suite.shard import parse_shard, shard_positions

    started, clock = datetime.now(UTC), time.monotonic()
    level = parse_level(level_text)
    shard = None
    if shard_text is not None:
        try:
            shard = Shard(*parse_shard(shard_text))
        except ValueError as exc:
            fail(f"--shard: {exc}")
    if resume and journal_path is None and json_path is None:
        fail("--resume needs the journal: give --journal FILE, or --json FILE to use the journal beside it")
    journal_path = journal_path or default_journal(json_path)
    try:
        expectations = load_expectations(baseline, list(skip_paths), list(flake_paths))
    except ResultsError as exc:
        fail(str(exc))
    if artifacts_all and artifacts_dir is None:
        fail("--artifacts-all needs --artifacts DIR")
    keep = KeepOutputs.NONE if artifacts_dir is None else KeepOutputs.ALL if artifacts_all else KeepOutputs.FAILING
    options = BackendOptions(ep=ep, harness=harness, timeout_s=timeout_s, variant=variant, device=device)
    pool = WorkerPool(WorkerSetup(backend_name, options, level, repeat, keep),
                      (os.cpu_count() or 1) if jobs == 0 else jobs, stop.event, timeout_s)
    pool.launch()  # backends (harnesses) start while the suites load
    try:
        cases = load_cases(paths, expression, tier_name, parallel_parser(default_helpers()))
        suite = SuiteInfo(selection_fingerprint(cases), len(cases), suite_file_hashes(cases))
        positions = shard_positions(cases, shard.index, shard.count) if shard else list(range(len(cases)))
        retries = (1 if backend_name == "native" else 0) if retries is None else retries
        settings = {"expression": expression, "tier": tier_name or (None if paths else DEFAULT.value),
                    "repeat": repeat, "retries": retries,
                    **backend_settings(backend_name, ep, harness, timeout_s, variant, device)}

        journal = None
        if resume and journal_path is not None and journal_path.exists():
            try:
                journal = read_journal(journal_path)
            except ResultsError as exc:
                fail(str(exc))

        try:
            info = pool.start()
        except BackendStartError as exc:
            if not stop.event.is_set():
                fail(f"--backend {backend_name}: {exc}")
            from dmlconform.backend_info import BackendInfo
            from dmlconform.feature_levels import HIGHEST

            info = BackendInfo(backend_name, "unknown (interrupted before the backend started)", "unknown",
                               level or HIGHEST)
        target = level or info.feature_level
        run = RunResult(info, target, started, 0.0, tool_version=__version__, suite=suite, shard=shard,
                        settings=settings, expectations=expectations.files)
        header = {"configuration": configuration(run), "backend": backend_json(info), "started": started.isoformat()}

        done = _journaled(journal, journal_path, header, {cases[p].full_id: p for p in positions}, stop)
        run.resumed = len(done)
        for position in positions:
            skip = expectations.skip(cases[position].full_id)
            if skip is not None and position not in done:
                done[position] = _unrun(cases, position, Status.SKIPPED, f"skipped ({skip.source}: {skip.text})",
                                        target)
        writer = _journal_writer(journal, journal_path, header)
        tasks = [(p, cases[p]) for p in positions if p not in done]
        console = make_console()
        label = f"{info.name}" + (f" shard {shard}" if shard else "")
        with progress_for(console, len(positions), label) as progress:
            progress.skip_done(list(done.values()))

            def finished(position: int, attempts: list[Any]) -> None:
                result = expectations.settle(attempts)
                result.index = position
                if artifacts_dir is not None and result.actual_outputs:
                    try:
                        save_artifacts(result, artifacts_dir, json_path)
                    except OSError as exc:
                        fail(f"--artifacts {artifacts_dir}: cannot write: {exc.strerror or exc}")
                done[position] = result
                if writer is not None:
                    writer.append(result)
                progress.advance(result)

            if not stop.event.is_set():
                pool.run(tasks, finished, expectations.needs_retry, retries)
        if stop.event.is_set():
            pool.kill()
            why = f"not run: the run was interrupted by {stop.signal.name if stop.signal else 'a signal'}"
            missing_status = Status.NOT_RUN
        else:
            pool.close()
            why, missing_status = "not run: no worker process could run it (see the messages above)", Status.ERROR
        for position in positions:
            if position not in done:
                done[position] = _unrun(cases, position, missing_status, why, target)
        run.results = [done[p] for p in positions]
        run.duration_s = time.monotonic() - clock
        run.interrupted = stop.signal.name if stop.signal else None
        if writer is not None:
            if run.interrupted is None:
                writer.finish({"cases": len(run.results), "duration_s": round(run.duration_s, 6)})
            writer.close()
        render(run, console, failures_shown)
        write_reports(run, json_path, junit_path, failures_path, expectations)
        if html_path is not None:
            write_html_report(run, html_path)
        if stop.signal is not None:
            return stop.exit_status
        return EXIT_OK if run.passed else EXIT_FAILED
    finally:
        pool.kill()  # already gone after a normal close; on an error exit, not left behind


def _unrun(cases: list[Case], position: int, status: Status, message: str, target: FeatureLevel) -> CaseResult:
    from dmlconform.runner.judge import unrun_result

    result = unrun_result(cases[position], status, message, target)
    result.index = position
    return result


def _journaled(journal: Journal | None, path: Path | None, header: dict[str, Any], positions_by_id: dict[str, int],
               stop: StopRequest) -> dict[int, CaseResult]:
    """The results a journal already holds, by position, once it is shown to belong to this run."""
    from dmlconform.results import ResultsError
    from dmlconform.results.journal import check_same_run

    if journal is None or path is None:
        return {}
    try:
        check_same_run(journal, path, "configuration", header["configuration"])
        if not stop.event.is_set():  # an interrupted start knows no backend to compare
            check_same_run(journal, path, "backend", header["backend"])
        for result in journal.results:
            if result.id not in positions_by_id:
                raise ResultsError(path, "is not in this run's selection", f"case {result.id}")
    except ResultsError as exc:
        fail(str(exc))
    if journal.torn:
        click.echo(f"dmlconform: {path}: dropping a torn last line (the run was killed while writing it); that "
                   "case runs again", err=True)
    return {positions_by_id[r.id]: r for r in journal.results}


def _journal_writer(journal: Journal | None, path: Path | None, header: dict[str, Any]) -> JournalWriter | None:
    from dmlconform.results.journal import JournalWriter

    if path is None:
        return None
    try:
        if journal is not None:
            return JournalWriter(path, append_at=journal.valid_bytes)
        return JournalWriter(path, header)
    except OSError as exc:
        fail(f"cannot write the journal {path}: {exc.strerror or exc}")
