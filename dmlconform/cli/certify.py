"""`dmlconform certify`: the certification run with its options fixed, written as a package that `dmlconform
verify` checks (docs/certification.md); `--merge` puts shard packages together."""

from __future__ import annotations

import shlex
import shutil
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from dmlconform.certification import PACKAGE_TIERS
from dmlconform.cli.common import (
    EXIT_FAILED,
    EXIT_OK,
    check_session_config,
    directml_options,
    fail,
    known_issue_choice,
    make_console,
    parse_path_option,
    parse_shard_option,
    path_option,
)

if TYPE_CHECKING:
    from rich.console import Console

    from dmlconform.backends.base import BackendOptions
    from dmlconform.certification.package import Claim, PackageParts
    from dmlconform.certification.waivers import WaiverFile
    from dmlconform.run_result import RunResult


@click.command()
@click.argument("shard_packages", nargs=-1, type=click.Path(path_type=Path, file_okay=False))
@click.option("-o", "--output", required=True, type=click.Path(path_type=Path, file_okay=False),
              help="The package folder to write (new, or empty).")
@click.option("--level", "level_text", metavar="L", help="The DirectML feature level claimed, e.g. 6_4: every case "
              "required at it or below must match (or be waived).")
@click.option("--tier", "tier_name", default="standard", show_default=True, type=click.Choice(PACKAGE_TIERS),
              help="The suite: the committed standard tier, or full (generated on first use); smoke makes a "
                   "rehearsal package in minutes, never a certification.")
@click.option("--backend", "backend_name", help="The backend driving the device: directml (the real DirectML.dll), "
              "native (a harness), onnxruntime, torch, numpy.")
@click.option("--harness", metavar="'CMD ARGS'", help="Native harness command line (native backend).")
@click.option("--harness-file", "harness_files", multiple=True, type=click.Path(path_type=Path, dir_okay=False),
              help="A file the harness is made of (its binary, DirectML.dll) when the command starts it through a "
              "wrapper: its SHA-256 goes into the package. Repeatable.")
@click.option("--timeout", "timeout_s", default=60.0, show_default=True, type=click.FloatRange(0.001),
              help="Seconds one case may take.")
@click.option("--ep", default="auto", show_default=True, type=click.Choice(["auto", "dml", "cuda", "cpu"]),
              help="ONNX Runtime execution provider (onnxruntime backend).")
@click.option("--device", default="cpu", show_default=True, metavar="cpu|cuda[:N]", help="PyTorch device (torch).")
@click.option("--variant", metavar="NAME", help="Reference reading where the docs are silent (numpy, torch).")
@click.option("--waivers", "waivers_path", type=click.Path(path_type=Path, dir_okay=False),
              help="Waivers granted for this device (YAML, docs/certification.md): a case they cover that does not "
                   "match is WAIVED.")
@click.option("--jobs", "-j", default=1, show_default=True, type=click.IntRange(0, 256),
              help="Worker processes, each with its own backend; 0: one per CPU.")
@click.option("--shard", "shard_text", metavar="I/N", help="Run part I of N; `certify --merge` the N packages.")
@click.option("--merge", is_flag=True, help="Merge the shard packages given as arguments into one package.")
@click.option("--show", "failures_shown", default=25, show_default=True, type=click.IntRange(0),
              help="Failing cases printed in full.")
@click.option("--suite-root", type=click.Path(path_type=Path, file_okay=False, exists=True), hidden=True,
              help="Testing only: this folder stands in for the bundled suites (verify must be given it too).")
@click.option("--known-issues", "known_issues", default="on", show_default=True, type=click.Choice(["on", "off"]),
              help="The known issues of the DirectML release the directml backend or --ep dml loads (docs/known-"
              "issues.md): on, a case one explains is WAIVED as DirectML's, with the list's provenance in the package; "
              "off, it counts against the claim.")
@click.option("--known-issues-file", "known_issues_file", metavar="FILE",
              type=click.Path(path_type=Path, dir_okay=False),
              help="A known-issue list of your own (a private DirectML build's) instead of the one this dmlconform "
              "ships; `verify --known-issues-file` must be given it too.")
@path_option
@directml_options
def certify(shard_packages: tuple[Path, ...], output: Path, level_text: str | None, tier_name: str,
            backend_name: str | None, harness: str | None, harness_files: tuple[Path, ...], timeout_s: float, ep: str,
            device: str, variant: str | None, waivers_path: Path | None, jobs: int, shard_text: str | None,
            merge: bool, failures_shown: int, suite_root: Path | None, known_issues: str,
            known_issues_file: Path | None, path_text: str, directml: str | None,
            directml_version: str | None, adapter: str | None, warp: bool, session_config: tuple[str, ...],
            program_options: tuple[str, ...]) -> None:
    """Run the certification suite for a claimed feature level and write a certification package.

    Every case of the tier runs: no -k, skips, baselines or flake lists; retries as CI does. Exit status: 0 the
    claim holds (for a shard: every case of it matched or is waived), 1 it does not, 2 unusable input or usage,
    130/143 interrupted (the package is still written, and says so)."""
    if merge:
        given = {"--level": level_text, "--backend": backend_name, "--waivers": waivers_path, "--shard": shard_text,
                 "--known-issues-file": known_issues_file,
                 "--suite-root": suite_root, "--harness": harness,
                 "--path": path_text if path_text != "operator" else None}
        extra = [name for name, value in given.items() if value is not None]
        if extra or harness_files:
            fail(f"--merge takes shard packages only; {', '.join(extra or ['--harness-file'])} came with the shards")
        if not shard_packages:
            fail("--merge needs the shard packages: dmlconform certify --merge -o PKG SHARD_PKG...")
        sys.exit(_merge(shard_packages, output, failures_shown))
    if shard_packages:
        fail(f"unexpected argument {shard_packages[0]}: certify runs the tier's suites (shard packages go with "
             "--merge)")
    if level_text is None:
        fail("--level: give the feature level claimed, e.g. --level 6_4")
    if backend_name is None:
        fail("--backend: give the backend that drives the device, e.g. --backend native --harness CMD")
    from dmlconform.processes import start_fork_server

    start_fork_server()  # the workers' fork server imports while this command does
    from dmlconform.cli.execution import StopRequest

    stop = StopRequest().install()
    try:
        from dmlconform.backends.base import BackendOptions

        options = BackendOptions(ep=ep, harness=harness, timeout_s=timeout_s, variant=variant, device=device,
                                 directml=directml, directml_version=directml_version, adapter=adapter, warp=warp,
                                 session_config=check_session_config(session_config), program_options=program_options)
        status = _certify(stop, output, level_text, tier_name, backend_name, options, harness_files, waivers_path,
                          jobs, shard_text, failures_shown, suite_root, known_issues, known_issues_file, path_text)
    finally:
        stop.restore()
    sys.exit(status)


def _fresh_folder(output: Path) -> None:
    if output.exists() and (not output.is_dir() or any(output.iterdir())):
        fail(f"-o {output}: exists and is not an empty folder; certify writes a new package")
    try:
        output.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        fail(f"-o {output}: cannot create it: {exc.strerror or exc}")


def _load_waivers(path: Path | None) -> tuple[WaiverFile | None, bytes | None]:
    from dmlconform.certification import CertificationError
    from dmlconform.certification.waivers import parse_waivers, read_waiver_bytes

    if path is None:
        return None, None
    try:
        raw = read_waiver_bytes(path)  # read once: the package holds exactly the bytes that were applied
        return parse_waivers(raw, str(path)), raw
    except CertificationError as exc:
        fail(str(exc))


def _command(values: list[tuple[str, Any]]) -> list[str]:
    """The command line as given, for the record (click keeps no copy of the raw arguments)."""
    words = ["dmlconform", "certify"]
    for name, value in values:
        if value is None or value is False or value == ():
            continue
        for item in value if isinstance(value, tuple) else (value,):
            words += [name] if item is True else [name, str(item)]
    return words


def _certify(stop: Any, output: Path, level_text: str, tier_name: str, backend_name: str, options: BackendOptions,
             harness_files: tuple[Path, ...], waivers_path: Path | None, jobs: int, shard_text: str | None,
             failures_shown: int, suite_root: Path | None, known_issues: str,
             known_issues_file: Path | None, path_text: str = "operator") -> int:
    from dmlconform.certification import OUTPUTS, RESULTS
    from dmlconform.certification.environment import environment_record, file_digests
    from dmlconform.certification.known_issues import apply_known_issues
    from dmlconform.certification.package import Claim, PackageParts
    from dmlconform.certification.waivers import DeviceIdentity, apply_waivers
    from dmlconform.cli.common import parse_level
    from dmlconform.cli.execution import RunRequest, execute
    from dmlconform.runner import KeepOutputs

    level = parse_level(level_text)
    assert level is not None
    shard = parse_shard_option(shard_text)
    execution_paths = parse_path_option(path_text)
    waivers, waivers_raw = _load_waivers(waivers_path)
    choice = known_issue_choice(known_issues, known_issues_file, None)
    for path in harness_files:
        if not path.is_file():
            fail(f"--harness-file {path}: no such file")
    # Digested before the run: the files that were started, not whatever is there afterwards.
    files = file_digests(_program_paths(backend_name, options, harness_files))
    _fresh_folder(output)
    request = RunRequest((suite_root,) if suite_root else (), backend_name, options, level, None, tier_name, jobs,
                         shard, keep=KeepOutputs.ALL, artifacts_dir=output / OUTPUTS, result_file=output / RESULTS,
                         durable_artifacts=False, execution_paths=execution_paths)
    console = make_console()
    run = execute(request, stop, console)
    device_identity = DeviceIdentity.of(run.backend)
    # DirectML's own first: a vendor's waiver is for what is left, the device's.
    resolution = choice.resolve(run.backend)
    applied = resolution.issues if resolution is not None else None
    if resolution is not None:
        run.known_issues = resolution.record()
    if applied is not None:
        apply_known_issues(run.results, applied)
    if waivers is not None:
        apply_waivers(run.results, waivers, device_identity)
    command = _command([("--level", level_text), ("--tier", tier_name), ("--backend", backend_name),
                        ("--harness", options.harness), ("--harness-file", harness_files),
                        ("--timeout", options.timeout_s),
                        ("--ep", options.ep if backend_name == "onnxruntime" else None),
                        ("--device", options.device if backend_name == "torch" else None),
                        ("--variant", options.variant), ("--directml", options.directml),
                        ("--directml-version", options.directml_version), ("--adapter", options.adapter),
                        ("--warp", options.warp), ("--session-config", options.session_config),
                        ("--program-option", options.program_options), ("--waivers", waivers_path),
                        ("--known-issues", known_issues if known_issues != "on" else None),
                        ("--known-issues-file", known_issues_file),
                        ("--path", ",".join(p.value for p in execution_paths) if len(execution_paths) > 1
                         or execution_paths[0].value != "operator" else None),
                        ("--jobs", jobs), ("--shard", shard_text), ("--suite-root", suite_root), ("-o", output)])
    claim = Claim(level, tier_name, suite_root is not None, tuple(p.value for p in execution_paths))
    parts = PackageParts(claim, environment_record(run.backend, files, command), _manifest(run, tier_name, suite_root),
                         "", command, files, waivers, waivers_raw, applied)
    _package(output, run, parts, console, failures_shown)
    if stop.signal is not None:
        return stop.exit_status
    from dmlconform.certification.verdict import certification_verdict

    verdict = certification_verdict(run, level, tier_name)
    if shard is not None:  # a shard cannot hold the claim alone: it is good when nothing in it stands against it
        return EXIT_OK if not verdict.not_matched and not run.interrupted else EXIT_FAILED
    return EXIT_OK if verdict.certified else EXIT_FAILED


def _program_paths(backend_name: str, options: BackendOptions, extra: tuple[Path, ...]) -> list[Path]:
    """The files the device's software is made of, for their digests: a native harness's program and the files its
    command names; the packaged harness or host, the DirectML.dll (and onnxruntime.dll) they load; --harness-file."""
    from dmlconform.backends import uses_wine_programs
    from dmlconform.directml.start import StartError, program_files

    if backend_name == "native":
        return _harness_paths(options.harness, extra)
    if uses_wine_programs(backend_name, options):
        try:
            return [*program_files(backend_name == "onnxruntime", options.directml, options.directml_version), *extra]
        except StartError as exc:
            fail(f"--backend {backend_name}: {exc}")
    return list(extra)


def _harness_paths(harness: str | None, extra: tuple[Path, ...]) -> list[Path]:
    """The files a harness command names: its program (found on PATH) and any argument that is a file."""
    from dmlconform.backends.native import HarnessStartError, harness_argv

    paths: list[Path] = []
    try:
        argv = harness_argv(harness or "")
    except (HarnessStartError, ValueError):
        argv = []
    for position, word in enumerate(argv):
        found = shutil.which(word) if position == 0 and not Path(word).is_file() else word
        if found and Path(found).is_file():
            paths.append(Path(found))
    return [*paths, *extra]


def _manifest(run: RunResult, tier_name: str, suite_root: Path | None) -> dict[str, Any]:
    from dmlconform.certification.manifest import manifest_document, suite_files
    from dmlconform.cli.common import suite_roots

    assert run.suite is not None
    return manifest_document(tier_name, run.suite.fingerprint, run.suite.cases,
                             suite_files(suite_roots(tier_name, suite_root)))


def _package(output: Path, run: RunResult, parts: PackageParts, console: Console, failures_shown: int) -> None:
    """Print the report and the verdict (recorded as the console log), then write the package."""
    from dmlconform.certification.package import write_package
    from dmlconform.certification.verdict import certification_verdict
    from dmlconform.report.console import render

    console.record = True
    render(run, console, failures_shown)
    _verdict_lines(run, parts.claim, console)
    parts.console_log = console.export_text(clear=False)
    try:
        document, digest = write_package(output, run, parts)
    except (OSError, ValueError) as exc:
        fail(f"-o {output}: cannot write the package: {exc}")
    verdict = certification_verdict(run, parts.claim.level, parts.claim.tier)
    assert document["verdict"]["certified"] == verdict.certified
    click.echo(f"package written to {output}; package digest (SHA-256 of CHECKSUMS.sha256): {digest}")


def _verdict_lines(run: RunResult, claim: Claim, console: Console) -> None:
    from dmlconform.certification.verdict import certification_verdict

    verdict = certification_verdict(run, claim.level, claim.tier)
    counts = (f"{verdict.matched}/{verdict.required} required cases matched, {verdict.waived} waived, "
              f"{len(verdict.not_matched)} neither")
    if verdict.certified:
        console.print(f"[bold green]certification at {claim.level} ({claim.tier} tier): HOLDS[/] ({counts})")
        return
    console.print(f"[bold red]certification at {claim.level} ({claim.tier} tier): DOES NOT HOLD[/] ({counts})")
    for reason in verdict.reasons:
        console.print(f"  - {reason}", markup=False, highlight=False)


def _merge(folders: tuple[Path, ...], output: Path, failures_shown: int) -> int:
    from dmlconform.certification import CERTIFICATION, ENVIRONMENT, CertificationError
    from dmlconform.certification.environment import tool_record
    from dmlconform.certification.package import (
        MAX_JSON_BYTES,
        Claim,
        PackageParts,
        merge_shard_packages,
        merged_known_issues,
        read_json_file,
        read_shard_package,
        shard_record,
    )
    from dmlconform.feature_levels import FeatureLevel
    from dmlconform.results import ResultsError

    try:
        shards = [read_shard_package(folder) for folder in folders]
        shards.sort(key=lambda s: s.run.shard.index if s.run.shard else 0)
        for shard in shards:
            if shard.document.get("tool") != tool_record():
                raise CertificationError(shard.folder / CERTIFICATION, "was made by another dmlconform (version or "
                                         "source); shards are merged by the release that made them", field="tool")
        environment = read_json_file(shards[0].folder / ENVIRONMENT, MAX_JSON_BYTES[ENVIRONMENT])
        if not isinstance(environment, dict):
            raise CertificationError(shards[0].folder / ENVIRONMENT, "is not a JSON object")
        _fresh_folder(output)
        merged, waivers, waivers_raw = merge_shard_packages(shards, output)
        known_issues = merged_known_issues(shards)
    except (CertificationError, ResultsError) as exc:
        fail(str(exc))
    except OSError as exc:
        fail(f"-o {output}: cannot write: {exc.strerror or exc}")
    first = shards[0].document
    level = FeatureLevel.parse(first["claim"]["feature_level"])
    claim = Claim(level, first["claim"]["tier"], first["suite"].get("custom_root") is True)
    command = ["dmlconform", "certify", "--merge", "-o", str(output), *map(str, folders)]
    environment["merged_by"] = {"command": shlex.join(command), "shards": len(shards)}
    parts = PackageParts(claim, environment, shards[0].manifest, "", command, first.get("harness_files", {}),
                         waivers, waivers_raw, known_issues, [shard_record(s) for s in shards],
                         {s.run.shard.index: s.folder for s in shards if s.run.shard is not None})
    _package(output, merged, parts, make_console(), failures_shown)
    from dmlconform.certification.verdict import certification_verdict

    return EXIT_OK if certification_verdict(merged, level, claim.tier).certified else EXIT_FAILED
