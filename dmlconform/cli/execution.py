"""The run engine that `dmlconform run` and `dmlconform certify` share: select, shard, run in worker processes,
settle retries against expectations, journal every case as it finishes, keep outputs; SIGINT/SIGTERM stop it
cleanly. What to do with the finished run (reports, a certification package) is the command's business."""

from __future__ import annotations

import os
import signal
import threading
import time
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, Any, NoReturn

import click

from dmlconform import __version__
from dmlconform.backends.base import BackendOptions
from dmlconform.cli.common import fail, load_cases
from dmlconform.known_issues import KnownIssueChoice
from dmlconform.results.expectations import Expectations
from dmlconform.run_result import RunResult, Shard
from dmlconform.runner import KeepOutputs, default_retries
from dmlconform.suite.tiers import DEFAULT
from dmlconform.surface.paths import ExecutionPath

if TYPE_CHECKING:
    from rich.console import Console

    from dmlconform.backend_info import BackendInfo
    from dmlconform.case import Case
    from dmlconform.case_result import CaseResult, Status
    from dmlconform.cli.early_start import EarlyStart
    from dmlconform.feature_levels import FeatureLevel
    from dmlconform.results.journal import Journal, JournalWriter
    from dmlconform.suite.limits import SuiteLimits


class BackendUnavailable(RuntimeError):
    """The backend could not start (RunRequest.raise_if_unavailable); the message is one line saying why."""


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


def backend_settings(backend_name: str, options: BackendOptions) -> dict[str, Any]:
    """The backend options that change results, for this backend only (merge and resume compare them)."""
    if backend_name == "torch":
        return {"device": options.device, "variant": options.variant}
    if backend_name == "native":
        return {"harness": options.harness, "timeout_s": options.timeout_s}
    directml = {"directml": options.directml, "directml_version": options.directml_version,
                "adapter": options.adapter, "warp": options.warp, "program_options": list(options.program_options)}
    if backend_name == "directml":
        return {**directml, "timeout_s": options.timeout_s}
    if backend_name == "onnxruntime":
        host = {"harness": options.harness, "timeout_s": options.timeout_s} if options.harness else {}
        packaged = {**directml, "session_config": list(options.session_config)} if options.ep == "dml" else {}
        return {"ep": options.ep, **host, **packaged}
    return {"variant": options.variant}


@dataclass
class RunRequest:
    """What one run takes: the suites and selection, the backend, and how the run is carried out."""

    paths: tuple[Path, ...]
    backend_name: str
    options: BackendOptions
    level: FeatureLevel | None = None
    expression: str | None = None
    tier_name: str | None = None
    jobs: int = 1
    shard: Shard | None = None
    journal_path: Path | None = None
    resume: bool = False
    expectations: Expectations = field(default_factory=Expectations)
    #: None: the backend's default (`default_retries`).
    retries: int | None = None
    repeat: int = 1
    keep: KeepOutputs = KeepOutputs.NONE
    #: Where kept outputs go, and the result file they are recorded relative to.
    artifacts_dir: Path | None = None
    result_file: Path | None = None
    #: Kept outputs flushed to disk one by one (see save_npy).
    durable_artifacts: bool = True
    #: Bounds on the suite tree, counted before they are spent (None: the defaults).
    suite_limits: SuiteLimits | None = None
    #: A backend that cannot start raises BackendUnavailable instead of ending the command (exit 2): for a command
    #: that runs several backends and reports the one that could not start (`matrix`).
    raise_if_unavailable: bool = False
    #: Workers (and their harnesses) the command started before its imports (cli/early_start.py): the run's first
    #: workers when it is the run they were started for.
    early: EarlyStart | None = None
    #: The known issues of the DirectML release the backend loads, applied as expectations once the backend has said
    #: which release that is (None: not applied, as for `matrix`; `certify` applies them as waivers itself).
    known_issues: KnownIssueChoice | None = None
    #: The execution paths each case runs on where it applies (contract §9; `--path`), in the order they run.
    execution_paths: tuple[ExecutionPath, ...] = (ExecutionPath.OPERATOR,)

    @property
    def settings(self) -> dict[str, Any]:
        options = self.options
        retries = default_retries(self.backend_name) if self.retries is None else self.retries
        return {"expression": self.expression, "tier": self.tier_name or (None if self.paths else DEFAULT.value),
                "repeat": self.repeat, "retries": retries,
                **path_settings(self.execution_paths),
                **backend_settings(self.backend_name, options)}


def path_settings(paths: tuple[ExecutionPath, ...]) -> dict[str, Any]:
    """The paths asked, as a setting (merge and resume compare them); none on the operator path alone, so that a
    run's settings are what they were before paths existed."""
    return {} if tuple(paths) == (ExecutionPath.OPERATOR,) else {"paths": [path.value for path in paths]}


#: Worker pools closing after their run (see `_execute`).
_CLOSING: list[threading.Thread] = []


def execute(request: RunRequest, stop: StopRequest, console: Console) -> RunResult:
    """Run the request to the end (or to the stop request): one result per selected case, in selection order.
    Unusable input is a one-line error (exit 2); so is a backend that cannot start, unless the request asks for
    BackendUnavailable instead."""
    from dmlconform.backends import prepare

    early = request.early
    if early is not None and early.serves(request.backend_name, request.options):
        # Worked out as `prepare` does it, from the same options, before the workers started it.
        return _execute(replace(request, options=replace(request.options, prepared=early.start)), stop, console)
    if early is not None:
        early.discard()
    try:
        request = replace(request, options=prepare(request.backend_name, request.options))
    except RuntimeError as exc:
        _unavailable(request, str(exc))
    return _execute(request, stop, console)


def _execute(request: RunRequest, stop: StopRequest, console: Console) -> RunResult:
    from dmlconform.case_result import Status
    from dmlconform.report.progress import progress_for
    from dmlconform.results import ResultsError
    from dmlconform.results.artifacts import save_artifacts
    from dmlconform.results.document import backend_json, configuration
    from dmlconform.results.journal import read_journal
    from dmlconform.run_result import SuiteInfo
    from dmlconform.runner.loading import default_helpers, parallel_parser
    from dmlconform.runner.pool import BackendStartError, WorkerPool, WorkerSetup
    from dmlconform.suite.fingerprint import selection_fingerprint, suite_file_hashes
    from dmlconform.suite.shard import shard_positions

    started, clock = datetime.now(UTC), time.monotonic()
    level, shard, expectations, journal_path = request.level, request.shard, request.expectations, request.journal_path
    jobs = (os.cpu_count() or 1) if request.jobs == 0 else request.jobs
    pool = WorkerPool(WorkerSetup(request.backend_name, request.options, level, request.repeat, request.keep,
                                  dict(os.environ)),
                      jobs, stop.event, request.options.timeout_s,
                      early=request.early.take_workers() if request.early is not None else ())
    pool.launch()  # backends (harnesses) start while the suites load
    closing: threading.Thread | None = None
    try:
        cases = load_cases(request.paths, request.expression, request.tier_name, parallel_parser(default_helpers()),
                           request.suite_limits, request.execution_paths)
        suite = SuiteInfo(selection_fingerprint(cases), len(cases), suite_file_hashes(cases))
        positions = shard_positions(cases, shard.index, shard.count) if shard else list(range(len(cases)))
        settings = request.settings

        journal = None
        if request.resume and journal_path is not None and journal_path.exists():
            try:
                journal = read_journal(journal_path)
            except ResultsError as exc:
                fail(str(exc))

        try:
            info = pool.start()
        except BackendStartError as exc:
            if not stop.event.is_set():
                _unavailable(request, str(exc))
            from dmlconform.backend_info import BackendInfo
            from dmlconform.feature_levels import HIGHEST

            info = BackendInfo(request.backend_name, "unknown (interrupted before the backend started)", "unknown",
                               level or HIGHEST)
        # The loaded release is known only now that the backend has said which DLL it loaded.
        known_issues = request.known_issues.resolve(info) if request.known_issues is not None else None
        if known_issues is not None:
            expectations = expectations.with_known_issues(known_issues.issues, known_issues.mode)
        target = level or info.feature_level
        if level is not None and info.feature_level.value < level.value:
            click.echo(f"dmlconform: warning: {below_level(info, level)}", err=True)
        run = RunResult(info, target, started, 0.0, tool_version=__version__, suite=suite, shard=shard,
                        settings=settings, expectations=expectations.files,
                        known_issues=known_issues.record() if known_issues is not None else None)
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
        label = f"{info.name}" + (f" shard {shard}" if shard else "")
        with progress_for(console, len(positions), label) as progress:
            progress.skip_done(list(done.values()))

            def finished(position: int, attempts: list[Any]) -> None:
                result = expectations.settle(attempts)
                result.index = position
                if request.artifacts_dir is not None and result.actual_outputs:
                    try:
                        save_artifacts(result, request.artifacts_dir, request.result_file,
                                       request.durable_artifacts)
                    except OSError as exc:
                        fail(f"--artifacts {request.artifacts_dir}: cannot write: {exc.strerror or exc}")
                done[position] = result
                if writer is not None:
                    writer.append(result)
                progress.advance(result)

            if not stop.event.is_set():
                pool.run(tasks, finished, expectations.needs_retry, settings["retries"])
        if stop.event.is_set():
            pool.kill()
            why = f"not run: the run was interrupted by {stop.signal.name if stop.signal else 'a signal'}"
            missing_status = Status.NOT_RUN
        else:
            # The workers let their harnesses go (a GPU device's teardown takes tenths of a second) while the command
            # writes its reports: `finish_closing`, or else the interpreter's exit, waits for it.
            closing = threading.Thread(target=pool.close, name="dmlconform-close", daemon=False)
            closing.start()
            _CLOSING.append(closing)
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
        return run
    finally:
        if closing is None:
            pool.kill()  # on an error exit, or when interrupted: not left behind


def finish_closing() -> None:
    """Wait until the worker processes of every run `execute` returned have let their backends go and ended."""
    while _CLOSING:
        _CLOSING.pop().join()


def _unavailable(request: RunRequest, why: str) -> NoReturn:
    if request.raise_if_unavailable:
        raise BackendUnavailable(why)
    fail(f"--backend {request.backend_name}: {why}")


def below_level(info: BackendInfo, level: FeatureLevel) -> str:
    """One line for a backend whose device is below the level a run is judged at: what will happen and what to do."""
    dll = info.extra.get("directml_dll_version")
    fix = (f"a newer DirectML than {dll}: dmlconform fetch directml, then --directml-version" if dll else
           "a newer driver or DirectML")
    return (f"{info.name} reports feature level {info.feature_level} ({info.feature_level_source or 'its claim'}), "
            f"below --feature-level {level}: the cases that require more come out NOT_SUPPORTED, so the verdict at "
            f"{level} is no; for {level}, {fix}")


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
