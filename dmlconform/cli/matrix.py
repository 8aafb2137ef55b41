"""`dmlconform matrix`: a tier on the real DirectML.dll of each onnxruntime-directml release, one `run` per distinct
DLL (the run engine, so each result is exactly `run`'s), compared with a reference release case by case; the
results, matrix.json and matrix.md are kept in one folder. The comparison is results/matrix.py."""

from __future__ import annotations

import json
import os
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from dmlconform.cli.common import EXIT_FAILED, EXIT_OK, fail, make_console, parse_path_option, path_option
from dmlconform.suite.tiers import NAMES
from dmlconform.surface.paths import ExecutionPath

if TYPE_CHECKING:
    from rich.console import Console

    from dmlconform.cli.execution import RunRequest, StopRequest
    from dmlconform.directml.library import FetchedRelease
    from dmlconform.results.expectations import Expectations
    from dmlconform.results.matrix import FetchRelease, RunRelease
    from dmlconform.run_result import RunResult

RESULT_PREFIX = "onnxruntime-directml-"


@click.command()
@click.argument("versions", nargs=-1, metavar="[VERSION]...")
@click.option("--all-available", is_flag=True, help="Every release the package index has (fetched as needed), "
              "instead of the cached ones.")
@click.option("--tier", "tier_name", type=click.Choice(NAMES), default="standard", show_default=True,
              help="The bundled suites' tier to run on each release.")
@click.option("--out", "out_dir", required=True, type=click.Path(path_type=Path, file_okay=False),
              help="Folder for each release's result (onnxruntime-directml-V.json), matrix.json and matrix.md.")
@click.option("--adapter", metavar="N|DRIVER", help="The device, as for `run --adapter` (under Wine: lavapipe, ...).")
@click.option("--jobs", "-j", default=1, show_default=True, type=click.IntRange(0, 256),
              help="Worker processes per run (harnesses at once); 0: one per CPU.")
@click.option("--baseline", type=click.Path(path_type=Path, dir_okay=False),
              help="CSV of known failures for every run (they come out EXPECTED_FAIL), as for `run --baseline`.")
@click.option("-k", "expression", metavar="EXPR", help="Select cases, as for `run -k`.")
@click.option("--reference", metavar="V", help="Compare every release with this one. [default: the newest that ran]")
@click.option("--timeout", "timeout_s", default=60.0, show_default=True, type=click.FloatRange(0.001),
              help="Seconds one case may take, as for `run --timeout`.")
@click.option("--same-dll", "same_dll", type=click.Choice(["bytes", "code"]), default="bytes", show_default=True,
              help="Which releases are not run again: bytes, those whose DirectML.dll is byte-identical to one run; "
              "code, also those whose DLL differs from one run only in its Authenticode signature and PE checksum "
              "(the same build, re-signed for another onnxruntime-directml release).")
@click.option("--reuse", is_flag=True, help="Take a release's result already in --out instead of running it again, "
              "when it was run on the same DirectML.dll with the same settings and baseline (a matrix cut short goes "
              "on where it stopped).")
@click.option("--xz", "compress", is_flag=True, help="Write each release's result compressed with xz "
              "(onnxruntime-directml-V.json.xz), for keeping whole tiers in a repository.")
@path_option
def matrix(versions: tuple[str, ...], all_available: bool, tier_name: str, out_dir: Path, adapter: str | None,
           jobs: int, baseline: Path | None, expression: str | None, reference: str | None, timeout_s: float,
           same_dll: str, reuse: bool, compress: bool, path_text: str) -> None:
    """Run a tier on the DirectML.dll of each onnxruntime-directml VERSION (default: every cached release) and
    compare them: per release the DLL's version and digest, the feature level it reports, the cases per status, and
    the cases whose status or outputs (bit for bit) differ from the reference's (each case on each --path: a case on
    the graph path is compared with the reference's on the graph path). A release whose DirectML.dll is
    byte-identical to one already run is not run again (see --same-dll). No release's known issues are applied: the
    results say what each DirectML did (they are the evidence the known issues rest on; --baseline still applies).

    Exit status: 0 every release ran (whatever its cases came to), 1 a release could not be fetched or run,
    2 unusable input or usage, 130/143 stopped by SIGINT/SIGTERM."""
    arguments = dict(locals())
    from dmlconform.processes import start_fork_server

    start_fork_server()  # the workers' fork server imports while this command does
    from dmlconform.cli.execution import StopRequest

    stop = StopRequest().install()
    try:
        status = _matrix(stop, **arguments)
    finally:
        stop.restore()
    sys.exit(status)


def _matrix(stop: StopRequest, versions: tuple[str, ...], all_available: bool, tier_name: str, out_dir: Path,
            adapter: str | None, jobs: int, baseline: Path | None, expression: str | None, reference: str | None,
            timeout_s: float, same_dll: str, reuse: bool, compress: bool, path_text: str) -> int:
    from dmlconform import __version__
    from dmlconform.atomic_file import write_atomically
    from dmlconform.cli.execution import path_settings
    from dmlconform.report.matrix import matrix_markdown, render_matrix
    from dmlconform.results import ResultsError
    from dmlconform.results.expectations import load_expectations
    from dmlconform.results.matrix import Matrix, compare_rows, matrix_document, run_matrix

    if os.environ.get("DMLCONFORM_DIRECTML"):
        # It would win over each release's own DLL (directml/library.py: choose_directml), so every row would run it.
        fail("DMLCONFORM_DIRECTML is set: `matrix` runs each release's own DirectML.dll; unset it")
    execution_paths = parse_path_option(path_text)
    chosen = _versions(versions, all_available)
    if reference is not None and reference not in chosen:
        fail(f"--reference {reference}: not one of the releases in the matrix ({', '.join(chosen)})")
    try:
        expectations = load_expectations(baseline, [], [])
    except ResultsError as exc:
        fail(str(exc))
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        fail(f"--out {out_dir}: cannot create it: {exc.strerror or exc}")

    started, clock = datetime.now(UTC), time.monotonic()
    console = make_console()
    settings: dict[str, Any] = {
        "tool_version": __version__, "tier": tier_name, "expression": expression, "adapter": adapter, "jobs": jobs,
        "timeout_s": timeout_s, "same_dll": same_dll,
        "baseline": [{"path": e.path, "sha256": e.sha256} for e in expectations.files],
        "versions": "all available" if all_available else list(versions) or "cached", **path_settings(execution_paths)}
    runner = release_runner(tier_name, expression, adapter, jobs, timeout_s, expectations, out_dir, compress, reuse,
                            stop, console, execution_paths)
    rows = run_matrix(chosen, release_fetcher(stop), runner, _log, same_code=same_dll == "code")
    used = compare_rows(rows, reference)
    result = Matrix(rows, used, settings, started.isoformat(), time.monotonic() - clock)
    try:
        write_atomically(out_dir / "matrix.json", _json_text(matrix_document(result)))
        write_atomically(out_dir / "matrix.md", matrix_markdown(result))
    except OSError as exc:
        fail(f"--out {out_dir}: cannot write: {exc.strerror or exc}")
    render_matrix(result, console)
    if stop.signal is not None:
        return stop.exit_status
    return EXIT_OK if result.complete else EXIT_FAILED


def _versions(given: tuple[str, ...], all_available: bool) -> list[str]:
    """The releases of the matrix, newest first."""
    from dmlconform.directml.library import VERSION_PATTERN, FetchError, available_versions, releases, version_key

    if given and all_available:
        fail("give VERSIONs or --all-available, not both")
    for version in given:
        if not VERSION_PATTERN.fullmatch(version):
            fail(f"{version}: not an onnxruntime-directml version (such as 1.24.4)")
    if all_available:
        try:
            found = available_versions()
        except FetchError as exc:
            fail(str(exc))
    elif given:
        found = list(dict.fromkeys(given))
    else:
        found = [release.package_version for release in releases()]
        if not found:
            fail("no onnxruntime-directml release in the cache: `dmlconform fetch directml V`, or give VERSIONs or "
                 "--all-available")
    return sorted(found, key=version_key, reverse=True)


def _log(line: str) -> None:
    click.echo(f"dmlconform: {line}", err=True)


def release_fetcher(stop: StopRequest) -> FetchRelease:
    """Fetches a release into the cache (a valid cached copy as it is); ReleaseUnusable when it cannot."""
    from dmlconform.directml.library import FetchError, fetch
    from dmlconform.results.matrix import ReleaseUnusable

    def fetch_release(version: str) -> FetchedRelease:
        _stopped(stop)
        try:
            return fetch(version, _log)
        except FetchError as exc:
            raise ReleaseUnusable(str(exc)) from None
        except ValueError as exc:  # a DLL in the wheel that is not what it should be
            raise ReleaseUnusable(f"onnxruntime-directml {version}: {exc}") from None

    return fetch_release


def _stopped(stop: StopRequest) -> None:
    from dmlconform.results.matrix import ReleaseUnusable

    if stop.event.is_set():
        raise ReleaseUnusable(f"the matrix was stopped by {stop.signal.name if stop.signal else 'a signal'}")


def release_runner(tier_name: str, expression: str | None, adapter: str | None, jobs: int, timeout_s: float,
                   expectations: Expectations, out_dir: Path, compress: bool, reuse: bool, stop: StopRequest,
                   console: Console, execution_paths: tuple[ExecutionPath, ...] = (ExecutionPath.OPERATOR,)
                   ) -> RunRelease:
    """Runs the tier on a release's DirectML.dll with the run engine, each case on each of `execution_paths` where it
    applies, and writes its result into `out_dir`; the run and the file's name. ReleaseUnusable when the harness
    cannot start on that DLL."""
    from dmlconform.backends.base import BackendOptions
    from dmlconform.cli.execution import BackendUnavailable, RunRequest, execute
    from dmlconform.results.matrix import ReleaseRun, ReleaseUnusable

    def run_release(release: FetchedRelease) -> ReleaseRun:
        _stopped(stop)
        version = release.package_version
        name = f"{RESULT_PREFIX}{version}.json" + (".xz" if compress else "")
        options = BackendOptions(timeout_s=timeout_s, directml_version=version, adapter=adapter)
        request = RunRequest((), "directml", options, expression=expression, tier_name=tier_name, jobs=jobs,
                             expectations=expectations, result_file=out_dir / name, raise_if_unavailable=True,
                             execution_paths=execution_paths)
        kept = _kept_result(out_dir / name, request, release) if reuse else None
        if kept is not None:
            click.echo(f"dmlconform: onnxruntime-directml {version}: taking the result kept in {out_dir / name} "
                       "(--reuse)", err=True)
            return ReleaseRun(kept, name, reused=True)
        click.echo(f"dmlconform: onnxruntime-directml {version}: DirectML.dll {release.directml_version}: running the "
                   f"{tier_name} tier", err=True)
        try:
            run = execute(request, stop, console)
        except BackendUnavailable as exc:
            raise ReleaseUnusable(str(exc)) from None
        _stopped(stop)  # a run cut short is no result of this release
        ran = run.backend.extra.get("directml_dll_sha256")
        if ran != release.files["DirectML.dll"]:
            raise ReleaseUnusable(f"the run used DirectML.dll sha256 {ran}, not the release's "
                                  f"{release.files['DirectML.dll']}")
        _write_result(run, out_dir / name, compress)
        click.echo(f"dmlconform: onnxruntime-directml {version}: {len(run.results)} cases in {run.duration_s:.0f} s "
                   f"-> {out_dir / name}", err=True)
        return ReleaseRun(run, name)

    return run_release


def _kept_result(path: Path, request: RunRequest, release: FetchedRelease) -> RunResult | None:
    """The result at `path` if it is a whole run of this request on this release's DLL, else None (with a line
    saying why it is run again)."""
    import lzma

    from dmlconform import __version__
    from dmlconform.case_result import Status
    from dmlconform.results import ResultsError
    from dmlconform.results.document import from_document

    if not path.exists():
        return None
    try:
        raw = path.read_bytes()
        run = from_document(json.loads(lzma.decompress(raw) if path.suffix == ".xz" else raw), path)
    except (OSError, lzma.LZMAError, ValueError, ResultsError) as exc:  # JSONDecodeError is a ValueError
        _log(f"{path}: not reused ({str(exc).splitlines()[0]})")
        return None
    kept = {"tool version": run.tool_version, "settings": run.settings,
            "DirectML.dll": run.backend.extra.get("directml_dll_sha256"),
            "expectations": [e.sha256 for e in run.expectations]}
    wanted = {"tool version": __version__, "settings": request.settings, "DirectML.dll": release.files["DirectML.dll"],
              "expectations": [e.sha256 for e in request.expectations.files]}
    differing = [key for key in kept if kept[key] != wanted[key]]
    if run.interrupted or any(r.status is Status.NOT_RUN for r in run.results):
        differing.append("cases not run")
    if differing:
        _log(f"{path}: not reused: its {', '.join(differing)} differ from this matrix's; running it again")
        return None
    return run


def _write_result(run: RunResult, path: Path, compress: bool) -> None:
    import lzma

    from dmlconform.atomic_file import write_atomically
    from dmlconform.report.json_report import dumps
    from dmlconform.results.document import to_document

    text = dumps(to_document(run))
    try:
        write_atomically(path, lzma.compress(text.encode("utf-8"), preset=9) if compress else text)
    except OSError as exc:
        fail(f"cannot write {path}: {exc.strerror or exc}")


def _json_text(document: dict[str, Any]) -> str:
    return json.dumps(document, indent=1, ensure_ascii=False) + "\n"
