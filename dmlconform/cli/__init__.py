"""The `dmlconform` command line."""

from __future__ import annotations

import sys
from pathlib import Path

import click
from rich.console import Console
from rich.table import Table

from dmlconform import __version__
from dmlconform.backends import backend_names, create_backend
from dmlconform.backends.base import Backend, BackendOptions
from dmlconform.case import Case
from dmlconform.feature_levels import FeatureLevel
from dmlconform.runner import RunResult, run_cases
from dmlconform.suite import SuiteError
from dmlconform.suite.loader import load_paths
from dmlconform.suite.select import SelectError, select

EXIT_OK, EXIT_FAILED, EXIT_UNUSABLE = 0, 1, 2


def bundled_suites() -> Path:
    """The bundled test_vectors/: inside the installed package, or beside it in a source checkout."""
    package = Path(__file__).resolve().parent.parent
    packaged = package / "test_vectors"
    return packaged if packaged.is_dir() else package.parent / "test_vectors"


def _console(stderr: bool = False) -> Console:
    console = Console(stderr=stderr)
    if not console.is_terminal:
        console = Console(stderr=stderr, width=120)
    return console


def _fail(message: str) -> None:
    """Print one line to stderr and exit 2: unusable input or usage."""
    click.echo(f"dmlconform: error: {message}", err=True)
    sys.exit(EXIT_UNUSABLE)


def _load(paths: tuple[Path, ...], expression: str | None) -> list[Case]:
    try:
        cases = load_paths(list(paths) or [bundled_suites()])
        return select(cases, expression)
    except (SuiteError, SelectError) as exc:
        _fail(str(exc))
        raise AssertionError from None  # unreachable: _fail exits


def _level(text: str | None) -> FeatureLevel | None:
    if text is None:
        return None
    try:
        return FeatureLevel.parse(text)
    except ValueError as exc:
        _fail(f"--feature-level: {exc}")
        raise AssertionError from None


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="dmlconform")
def main() -> None:
    """Conformance tests for DirectML gradient operators."""


@main.command()
@click.argument("paths", nargs=-1, type=click.Path(path_type=Path))
@click.option("--backend", "backend_name", default="numpy", show_default=True,
              help="Backend to test: numpy (the reference), onnxruntime, native.")
@click.option("--feature-level", "level_text", metavar="L", help="Judge at this level (e.g. 5_1) instead of "
              "the level the backend claims.")
@click.option("-k", "expression", metavar="EXPR", help="Select cases: words (id substring, op, dtype or tag) "
              "joined by and/or/not.")
@click.option("--json", "json_path", type=click.Path(path_type=Path), help="Write the JSON result here.")
@click.option("--junit", "junit_path", type=click.Path(path_type=Path), help="Write JUnit XML here.")
@click.option("--jobs", "-j", default=1, show_default=True, type=click.IntRange(1, 256),
              help="Cases run at once, where the backend allows it.")
@click.option("--ep", default="auto", show_default=True, type=click.Choice(["auto", "dml", "cuda", "cpu"]),
              help="ONNX Runtime execution provider (onnxruntime backend).")
@click.option("--harness", metavar="'CMD ARGS'", help="Native harness command line (native backend).")
@click.option("--timeout", "timeout_s", default=60.0, show_default=True, type=click.FloatRange(0.001),
              help="Seconds one case may take (native backend).")
@click.option("--variant", metavar="NAME", help="Reference behaviour where the docs are silent, e.g. swapped "
              "or nan-passes (numpy backend).")
@click.option("--show", "failures_shown", default=25, show_default=True, type=click.IntRange(0),
              help="Failing cases printed in full.")
def run(paths: tuple[Path, ...], backend_name: str, level_text: str | None, expression: str | None,
        json_path: Path | None, junit_path: Path | None, jobs: int, ep: str, harness: str | None,
        timeout_s: float, variant: str | None, failures_shown: int) -> None:
    """Run suite files or folders (default: the bundled test_vectors/) through a backend."""
    from dmlconform.report.console import render
    from dmlconform.report.json_report import write_json
    from dmlconform.report.junit import write_junit

    level = _level(level_text)
    cases = _load(paths, expression)
    options = BackendOptions(ep=ep, harness=harness, timeout_s=timeout_s, variant=variant)
    try:
        backend = create_backend(backend_name, options)
    except (KeyError, ValueError, RuntimeError, ImportError, OSError) as exc:
        _fail(f"--backend {backend_name}: {exc.args[0] if exc.args else exc}")
        return
    console = _console()
    try:
        result = _run_with_progress(cases, backend, level, jobs, console)
    finally:
        backend.close()
    render(result, console, failures_shown)
    for path, writer in ((json_path, write_json), (junit_path, write_junit)):
        if path is not None:
            try:
                writer(result, path)
            except OSError as exc:
                _fail(f"cannot write {path}: {exc}")
    sys.exit(EXIT_OK if result.passed else EXIT_FAILED)


def _run_with_progress(cases: list[Case], backend: Backend, level: FeatureLevel | None, jobs: int,
                       console: Console) -> RunResult:
    """A progress bar on a terminal only; CI logs get the report alone."""
    if not console.is_terminal:
        return run_cases(cases, backend, level)
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    with Progress(*columns, console=console, transient=True) as progress:
        task = progress.add_task(f"{backend.name}", total=len(cases))
        return run_cases(cases, backend, level, progress=lambda result: progress.advance(task))


@main.command("list")
@click.argument("paths", nargs=-1, type=click.Path(path_type=Path))
@click.option("-k", "expression", metavar="EXPR", help="Select cases as `run -k` does.")
def list_cases(paths: tuple[Path, ...], expression: str | None) -> None:
    """List the cases with their operator, data type, rank and required feature level."""
    cases = _load(paths, expression)
    table = Table("case", "op", "dtype", "rank", "required", "kind")
    for case in cases:
        kind = "invalid" if case.expect_invalid else ("candidates" if case.candidates else "single")
        table.add_row(case.full_id, case.op.name, case.dtype.name, str(case.rank), case.required_level.label,
                      kind)
    console = _console()
    console.print(table)
    console.print(f"{len(cases)} cases")


@main.command()
def ops() -> None:
    """Show each operator's support table (from its seed page) and the reference's variants."""
    from dmlconform.ops import OPERATORS

    table = Table("operator", "from level", "ranks", "data types", "variants")
    for op in OPERATORS.values():
        for number, row in enumerate(op.support.rows):
            names = ", ".join(d.name for d in sorted(row.dtypes, key=lambda d: d.value))
            table.add_row(op.name if number == 0 else "", row.level.label, f"{row.min_rank}-{row.max_rank}", names,
                          ", ".join(op.variants) if number == 0 else "")
    _console().print(table)


@main.command()
def backends() -> None:
    """List the available backends."""
    for name in backend_names():
        click.echo(name)
