"""What every command shares: exit statuses, the one-line error, the console, loading and selecting cases."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn

import click

if TYPE_CHECKING:
    from collections.abc import Callable

    from rich.console import Console

    from dmlconform.case import Case
    from dmlconform.feature_levels import FeatureLevel
    from dmlconform.known_issues import KnownIssueChoice
    from dmlconform.results.expectations import Expectations
    from dmlconform.run_result import RunResult, Shard
    from dmlconform.suite.limits import SuiteLimits
    from dmlconform.suite.loader import SuiteParser
    from dmlconform.surface.paths import ExecutionPath

EXIT_OK, EXIT_FAILED, EXIT_UNUSABLE = 0, 1, 2


def bundled_suites() -> Path:
    """The bundled test_vectors/: inside the installed package, or beside it in a source checkout."""
    package = Path(__file__).resolve().parent.parent
    packaged = package / "test_vectors"
    return packaged if packaged.is_dir() else package.parent / "test_vectors"


def suite_path(path: Path) -> Path:
    """A PATH argument: the file or folder itself; where none is there, the bundled suite of that name, given as it is
    in a checkout (test_vectors/max_pooling_grad) or by its name alone (max_pooling_grad, smoke/relu_grad.yaml), so
    that the same command works from an installed wheel, anywhere. Unusable input (exit 2) when neither exists."""
    if path.exists() or path.is_absolute():
        return path
    parts = path.parts[1:] if path.parts[:1] == ("test_vectors",) else path.parts
    bundled = bundled_suites()
    if parts and ".." not in parts and bundled.joinpath(*parts).exists():
        return bundled.joinpath(*parts)
    import difflib

    names = sorted(p.name for p in bundled.iterdir() if not p.name.startswith(".")) if bundled.is_dir() else []
    near = difflib.get_close_matches(path.as_posix().removeprefix("test_vectors/"), names, n=1)
    fail(f"{path}: no such file or folder, nor a bundled suite" + (f" (did you mean {near[0]}?)" if near else "")
         + (f"; bundled: {', '.join(names)}" if names else ""))


def suite_roots(tier_name: str, suite_root: Path | None) -> list[tuple[str, Path]]:
    """The folders whose files make up the tier's suite, by the label the manifest gives them."""
    if suite_root is not None:
        return [("test_vectors", suite_root)]
    roots = [("test_vectors", bundled_suites())]
    if tier_name == "full":
        from dmlconform.generation.cache import full_tier_folder

        roots.append(("full", full_tier_folder()))
    return roots


def make_console(stderr: bool = False) -> Console:
    from rich.console import Console

    console = Console(stderr=stderr)
    if not console.is_terminal:
        console = Console(stderr=stderr, width=120)
    return console


def fail(message: str) -> NoReturn:
    """Print one line to stderr and exit 2: unusable input or usage."""
    click.echo(f"dmlconform: error: {message}", err=True)
    sys.exit(EXIT_UNUSABLE)


TIER_HELP = ("Suite tier: smoke (seconds), standard (the default without PATHs), full (large; generated on "
             "demand into a cache). With PATHs, only suite files of this tier or below (and files that name none).")


def write_json_output(json_path: Path, document: object) -> None:
    """A command's --json: the document to standard output for '-', else written atomically to the file."""
    import json

    text = json.dumps(document, indent=1) + "\n"
    if str(json_path) == "-":
        click.echo(text, nl=False)
        return
    from dmlconform.atomic_file import write_atomically

    try:
        write_atomically(json_path, text)
    except OSError as exc:
        fail(f"cannot write {json_path}: {exc.strerror or exc}")


PATH_HELP = ("How each case reaches DirectML: operator (a compiled operator), graph (a compiled graph), in-place "
             "(an output bound over the input it may alias; only where the operator's page allows it), a comma "
             "list, or all. Each case runs on each path that applies to it; ids on graph and in-place end in "
             "@graph and @in-place.")


def path_option(command: Callable[..., object]) -> Callable[..., object]:
    """`--path operator|graph|in-place|all` (or a comma list), given to the command as `path_text`; read with
    `parse_path_option`."""
    return click.option("--path", "path_text", default="operator", show_default=True,
                        metavar="operator|graph|in-place|all", help=PATH_HELP)(command)


def parse_path_option(text: str) -> tuple[ExecutionPath, ...]:
    """`--path` as the paths asked, in the order they run (operator, graph, in-place); a bad one is one line, exit 2."""
    from dmlconform.surface.paths import ExecutionPath, parse_paths

    try:
        asked = parse_paths(text)
    except ValueError as exc:
        fail(f"--path {text}: {exc}")
    return tuple(path for path in ExecutionPath if path in asked)


SUITE_LIMIT_HELP = ("Raise (or lower) a limit on the suites loaded: files=N (suite files; default 10000), cases=N "
                    "(default 100000), bytes=SIZE (the tensor bytes the cases declare plus 32 per byte of suite "
                    "text, e.g. 16GiB; default 2GiB); NAME=none lifts one. Repeatable. See docs/fuzzing.md.")


def suite_limit_option(command: Callable[..., object]) -> Callable[..., object]:
    """`--suite-limit NAME=N`, repeatable, given to the command as `suite_limits` (a SuiteLimits)."""

    def parse(context: click.Context, parameter: click.Parameter, values: tuple[str, ...]) -> SuiteLimits:
        from dmlconform.suite.limits import SuiteLimits

        try:
            return SuiteLimits.parse(values)
        except ValueError as exc:
            raise click.BadParameter(str(exc)) from None

    return click.option("--suite-limit", "suite_limits", multiple=True, metavar="NAME=N", callback=parse,
                        help=SUITE_LIMIT_HELP)(command)


def directml_options(command: Callable[..., object]) -> Callable[..., object]:
    """The real DirectML's options (the directml backend, and onnxruntime's --ep dml through the packaged host), given
    to the command as `directml`, `directml_version`, `adapter`, `warp`, `session_config` and `program_options`."""
    options = (
        click.option("--directml", "directml", metavar="PATH", envvar="DMLCONFORM_DIRECTML",
                     type=click.Path(dir_okay=False),
                     help="DirectML.dll to run (default: $DMLCONFORM_DIRECTML, else --directml-version's, else on "
                     "Windows the installed onnxruntime-directml's, else the release `dmlconform fetch directml` "
                     "fetched)."),
        click.option("--directml-version", "directml_version", metavar="V",
                     help="The DirectML.dll of onnxruntime-directml release V, fetched into the cache by "
                     "`dmlconform fetch directml V` (several side by side; `dmlconform doctor` lists them)."),
        click.option("--adapter", "adapter", metavar="N|DRIVER",
                     help="The device: a DXGI adapter's index, or under Wine a Vulkan driver for Direct3D 12 "
                     "(lavapipe, nvidia, radeon, intel, or a driver manifest's path). Default: adapter 0 of every "
                     "installed driver."),
        click.option("--warp", is_flag=True, help="Windows' software adapter, WARP (not under Wine: use --adapter "
                     "lavapipe)."),
        click.option("--session-config", "session_config", multiple=True, metavar="KEY=VALUE",
                     help="An ONNX Runtime session config entry for every session (onnxruntime backend), e.g. "
                     "ep.dml.disable_graph_fusion=1. Repeatable."),
        click.option("--program-option", "program_options", multiple=True, metavar="OPT",
                     help="An option of the packaged DirectML harness or ONNX Runtime host itself, e.g. "
                     "--program-option=--disable-metacommands or --program-option=--debug-layer. Repeatable."),
    )
    for option in reversed(options):
        command = option(command)
    return command


def known_issue_options(command: Callable[..., object]) -> Callable[..., object]:
    """The DirectML release's known issues (docs/known-issues.md), given to the command as `known_issues`,
    `known_issues_file` and `known_issues_release`."""
    options = (
        click.option("--known-issues", "known_issues", default="on", show_default=True,
                     type=click.Choice(["on", "off", "strict"]),
                     help="The known issues of the DirectML release the directml backend or --ep dml loads: on, a "
                     "case one explains is EXPECTED_FAIL and does not fail the run; off, it counts as a failure; "
                     "strict, as on, and one that passes (UNEXPECTED_PASS) fails the run."),
        click.option("--known-issues-file", "known_issues_file", metavar="FILE",
                     type=click.Path(path_type=Path, dir_okay=False),
                     help="A known-issue list of your own (format dmlconform-known-issues/v1) instead of the one "
                     "this dmlconform ships."),
        click.option("--known-issues-release", "known_issues_release", metavar="V",
                     help="Apply DirectML V's known issues whatever the DLL says it is (a DLL given by path, a "
                     "private build)."),
    )
    for option in reversed(options):
        command = option(command)
    return command


def known_issue_choice(mode: str, file: Path | None, release: str | None) -> KnownIssueChoice:
    """The choice, its list read and checked: a malformed file or an unknown release is one line, exit 2."""
    from dmlconform.known_issues import KnownIssueChoice, KnownIssueError, Mode, load_known_issues

    try:
        listing = load_known_issues(file) if file is not None else None
        return KnownIssueChoice(Mode(mode), listing, release).checked()
    except KnownIssueError as exc:
        fail(str(exc))


def check_session_config(entries: tuple[str, ...]) -> tuple[str, ...]:
    for entry in entries:
        if "=" not in entry or entry.startswith("="):
            fail(f"--session-config {entry}: use KEY=VALUE")
    return entries


def load_cases(paths: tuple[Path, ...], expression: str | None, tier_name: str | None = None,
               parse: SuiteParser | None = None, limits: SuiteLimits | None = None,
               execution_paths: tuple[ExecutionPath, ...] | None = None) -> list[Case]:
    """The selected cases of the given suites, or of the bundled ones at the tier (default: standard), on each of the
    execution paths asked where it applies (default: the operator path alone; `suite.select.on_paths`)."""
    from dmlconform.suite import SuiteError, parsed_cache
    from dmlconform.suite.loader import load_paths, load_suites
    from dmlconform.suite.select import SelectError, on_paths, select
    from dmlconform.suite.tiers import DEFAULT, Tier

    tier = Tier.parse(tier_name) if tier_name else None
    roots = [suite_path(path) for path in paths]
    if not roots:
        tier = tier or DEFAULT
        roots = [bundled_suites()]
        if tier is Tier.FULL:
            roots.append(_full_tier())
    parse = parse or load_suites
    if parsed_cache.enabled():
        parse = parsed_cache.with_cache(parse)
    try:
        cases = load_paths(roots, tier, parse, limits)
        selected = select(cases, expression)
    except (SuiteError, SelectError) as exc:
        fail(str(exc))
    return on_paths(selected, execution_paths) if execution_paths else selected


def _full_tier() -> Path:
    from dmlconform.generation import GenerationError
    from dmlconform.generation.tier_files import ensure_full_tier

    try:
        return ensure_full_tier(lambda line: click.echo(f"dmlconform: {line}", err=True),
                                lambda line: click.echo(f"  {line}", err=True))
    except GenerationError as exc:
        fail(str(exc))
    except OSError as exc:
        fail(f"cannot write the full tier: {exc.strerror or exc} ({getattr(exc, 'filename', '')})")


def parse_level(text: str | None) -> FeatureLevel | None:
    from dmlconform.feature_levels import FeatureLevel

    if text is None:
        return None
    try:
        return FeatureLevel.parse(text)
    except ValueError as exc:
        fail(f"--feature-level: {exc}")


def parse_shard_option(text: str | None) -> Shard | None:
    """`--shard I/N` as a Shard; a malformed one is a usage error (exit 2)."""
    from dmlconform.run_result import Shard
    from dmlconform.suite.shard import parse_shard

    if text is None:
        return None
    try:
        return Shard(*parse_shard(text))
    except ValueError as exc:
        fail(f"--shard: {exc}")


def write_reports(run: RunResult, json_path: Path | None, junit_path: Path | None, failures_path: Path | None,
                  expectations: Expectations) -> None:
    """Each report written atomically; an unwritable path is a usage error (exit 2)."""
    from dmlconform.atomic_file import write_atomically
    from dmlconform.report.json_report import write_json
    from dmlconform.report.junit import write_junit
    from dmlconform.results.expectations import next_baseline

    writers = ((json_path, write_json), (junit_path, write_junit),
               (failures_path, lambda r, p: write_atomically(p, next_baseline(r.results, expectations))))
    for path, writer in writers:
        if path is not None:
            try:
                writer(run, path)
            except OSError as exc:
                fail(f"cannot write {path}: {exc.strerror or exc}")


def write_html_report(run: RunResult, path: Path, old: RunResult | None = None) -> None:
    """The self-contained HTML report (with a diff section against `old`), written atomically."""
    from dmlconform.atomic_file import write_atomically
    from dmlconform.report.html import render_html
    from dmlconform.results.diff import diff_runs

    try:
        write_atomically(path, render_html(run, diff_runs(old, run) if old is not None else None))
    except OSError as exc:
        fail(f"cannot write {path}: {exc.strerror or exc}")
