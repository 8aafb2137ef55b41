"""`dmlconform repro CASE_ID --out DIR`: a self-contained bundle that replays one case without the suites."""

from __future__ import annotations

import shlex
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click

from dmlconform.cli.common import EXIT_FAILED, EXIT_OK, bundled_suites, fail, make_console, suite_limit_option

if TYPE_CHECKING:
    from dmlconform.feature_levels import FeatureLevel
    from dmlconform.run_result import RunResult
    from dmlconform.suite.limits import SuiteLimits

#: Defaults of `run` that need not be repeated on the replay command line.
_RUN_DEFAULTS = {"repeat": 1, "timeout_s": 60.0}


def run_options(run: RunResult | None, target: FeatureLevel, path: str = "operator") -> list[str]:
    """The options of `dmlconform run` that reproduce the recorded run's result for one case, on its execution path
    (`--path`, where not the operator path)."""
    settings = run.settings if run is not None else {}
    backend = run.backend.name if run is not None else "numpy"
    options = ["--backend", backend]
    if backend in ("numpy", "torch") and settings.get("variant"):
        options += ["--variant", str(settings["variant"])]
    if backend == "torch" and settings.get("device"):
        options += ["--device", str(settings["device"])]
    if backend == "onnxruntime":
        options += ["--ep", str(settings.get("ep") or "auto")]
        for entry in settings.get("session_config") or []:
            options += ["--session-config", str(entry)]
    if backend in ("directml", "onnxruntime"):
        for key, option in (("directml", "--directml"), ("directml_version", "--directml-version"),
                            ("adapter", "--adapter")):
            if settings.get(key):
                options += [option, str(settings[key])]
        if settings.get("warp") is True:
            options.append("--warp")
        options += [f"--program-option={option}" for option in settings.get("program_options") or []]
    if backend == "native":
        options += ["--harness", str(settings.get("harness"))]
    timeout_s = float(settings.get("timeout_s") or 60.0)
    if backend in ("native", "directml") and timeout_s != _RUN_DEFAULTS["timeout_s"]:
        options += ["--timeout", f"{timeout_s:g}"]
    if int(settings.get("repeat") or 1) != _RUN_DEFAULTS["repeat"]:
        options += ["--repeat", str(settings["repeat"])]
    if path != "operator":
        options += ["--path", path]
    return [*options, "--feature-level", target.label]


@click.command()
@click.argument("case_id")
@click.option("--out", "out_dir", required=True, type=click.Path(path_type=Path, file_okay=False),
              help="Folder to write the bundle into (created).")
@click.option("--result", "result_path", metavar="RUN.json", type=click.Path(path_type=Path, dir_okay=False),
              help="The run whose result to reproduce: its backend and options go into the command line, and what "
              "the backend returned (its artifacts, else the case run again) into actual/.")
@click.option("--suites", "suite_paths", multiple=True, type=click.Path(path_type=Path),
              help="Suite files or folders to find the case in (default: the bundled test_vectors/). Repeatable.")
@click.option("--no-rerun", is_flag=True, help="Never run the case again: without artifacts, the bundle has no "
              "actual/ outputs.")
@suite_limit_option
def repro(case_id: str, out_dir: Path, result_path: Path | None, suite_paths: tuple[Path, ...],
          no_rerun: bool, suite_limits: SuiteLimits) -> None:
    """Write a repro bundle for one case: a one-case suite with .npy inputs and expected outputs, the actual
    outputs, a DxDispatch model of the DirectML operator, and the exact command line that reproduces the result.
    A CASE_ID ending in @graph or @in-place is the case on that execution path: the command line runs it with --path.

    Exit status: 0 written and checked (its suite, loaded back, judges the actual outputs as the case does),
    1 written but the check found a difference, 2 unusable input."""
    from dmlconform.results import ResultsError
    from dmlconform.triage import TriageError
    from dmlconform.triage.bundle import SUITE, replay_command, write_bundle
    from dmlconform.triage.inspection import inspect_case
    from dmlconform.triage.session import open_case

    try:
        session = open_case(case_id, result_path, list(suite_paths) or [bundled_suites()], not no_rerun,
                            suite_limits)
        inspection = inspect_case(session.case, session.actual.outputs, session.target)
        options = run_options(session.run, session.target, session.case.path.value)
        check = write_bundle(out_dir, session.case, session.actual.outputs, inspection, options, session.recorded,
                             session.run, session.actual.source, session.target)
    except (ResultsError, TriageError) as exc:
        fail(str(exc))
    console = make_console()
    for note in session.notes:
        console.print(f"[yellow]note: {note}[/]", highlight=False)
    console.print(f"wrote {out_dir}/ ({SUITE}, inputs/, answers, "
                  f"{'actual/, ' if session.actual.outputs is not None else ''}dxdispatch.json, result.json, "
                  "README.md, reproduce.sh)", highlight=False)
    console.print(f"actual outputs: {session.actual.source}", highlight=False)
    console.print("reproduce with:  " + shlex.join(replay_command(out_dir, options)), markup=False, highlight=False)
    if session.recorded is not None:
        recorded = session.recorded.outcome or session.recorded.status
        console.print(f"recorded status: {recorded.value}", highlight=False)
    if check.bundle_status is not None:
        console.print(f"check: the actual outputs judged against the bundle's suite come to {check.bundle_status.value}"
                      f", against the original case to {check.case_status.value if check.case_status else '-'}",
                      highlight=False)
    for problem in check.problems:
        console.print(f"[bold red]check: {problem}[/]", highlight=False)
    if not check.tensors_identical:
        console.print("[bold red]check: the bundle's tensors are not bit-identical to the case's[/]")
    sys.exit(EXIT_OK if check.ok else EXIT_FAILED)
