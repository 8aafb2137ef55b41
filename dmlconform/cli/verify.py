"""`dmlconform verify PACKAGE`: check a certification package; `--rerun N` spot-checks cases on the certifier's
own unit of the device (docs/certification.md)."""

from __future__ import annotations

import secrets
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click

from dmlconform.cli.common import EXIT_FAILED, EXIT_OK, check_session_config, directml_options, fail

if TYPE_CHECKING:
    from dmlconform.backends.base import BackendOptions
    from dmlconform.certification.verify import OpenedPackage, Shipped, Verification

#: verify's own exit statuses beyond 0 (valid, the claim holds), 1 (valid, it does not) and 2 (usage).
EXIT_INVALID, EXIT_SPOT_CHECK = 3, 4
PROBLEMS_SHOWN = 100


@click.command()
@click.argument("package", type=click.Path(path_type=Path, file_okay=False))
@click.option("--waivers", "granted_path", type=click.Path(path_type=Path, dir_okay=False),
              help="The waivers the certification body granted: every waiver the package applies must be one of "
                   "them, unchanged.")
@click.option("--known-issues-file", "known_issues_file", metavar="FILE",
              type=click.Path(path_type=Path, dir_okay=False),
              help="Re-derive the package's DirectML known issues with this list (the one certify was given) instead "
                   "of the one this dmlconform ships.")
@click.option("--digest", metavar="SHA256", help="The package digest submitted with the package (the SHA-256 of "
              "CHECKSUMS.sha256): the package must be that one.")
@click.option("--rerun", "rerun_count", type=click.IntRange(1), metavar="N",
              help="Spot-check: run N cases picked at random again on --backend (your own unit of the device) and "
                   "compare what they come to with the package.")
@click.option("--seed", type=click.IntRange(0), help="Seed of the --rerun sample (printed; default: a random one).")
@click.option("--backend", "backend_name", help="Backend for --rerun (directml, native, onnxruntime, torch, numpy).")
@click.option("--harness", metavar="'CMD ARGS'", help="Native harness command line (--rerun on native).")
@click.option("--timeout", "timeout_s", default=60.0, show_default=True, type=click.FloatRange(0.001),
              help="Seconds one re-run case may take.")
@click.option("--ep", default="auto", show_default=True, type=click.Choice(["auto", "dml", "cuda", "cpu"]),
              help="ONNX Runtime execution provider (--rerun on onnxruntime).")
@click.option("--device", default="cpu", show_default=True, metavar="cpu|cuda[:N]", help="PyTorch device (torch).")
@click.option("--variant", metavar="NAME", help="Reference reading where the docs are silent (numpy, torch).")
@click.option("--all", "show_all", is_flag=True, help=f"List every problem (default: the first {PROBLEMS_SHOWN}).")
@click.option("--suite-root", type=click.Path(path_type=Path, file_okay=False, exists=True), hidden=True,
              help="Testing only: this folder stands in for the bundled suites.")
@directml_options
def verify(package: Path, granted_path: Path | None, known_issues_file: Path | None, digest: str | None,
           rerun_count: int | None, seed: int | None,
           backend_name: str | None, harness: str | None, timeout_s: float, ep: str, device: str, variant: str | None,
           show_all: bool, suite_root: Path | None, directml: str | None, directml_version: str | None,
           adapter: str | None, warp: bool, session_config: tuple[str, ...], program_options: tuple[str, ...]) -> None:
    """Check a certification package: files, suite, every case re-judged from its outputs, waivers, shards.

    Exit status: 0 the package is valid and its claim holds; 1 valid, the claim does not hold; 2 unusable input
    or usage; 3 invalid (changed, incomplete, or not made by this release's certify); 4 valid, but the --rerun
    spot-check came out otherwise on this unit. One line per problem."""
    from dmlconform.backends.base import BackendOptions
    from dmlconform.certification import CertificationError, ProblemKind
    from dmlconform.certification.spot_check import sample
    from dmlconform.certification.verify import looks_like_package, open_package, verify_package
    from dmlconform.certification.waivers import load_waivers

    if not looks_like_package(package):
        fail(f"{package}: not a certification package (no CHECKSUMS.sha256 or certification.json in it)")
    if (rerun_count is None) != (backend_name is None):
        fail("--rerun N and --backend go together: the spot-check runs N cases on that backend")
    granted = None
    if granted_path is not None:
        try:
            granted = load_waivers(granted_path)
        except CertificationError as exc:
            fail(str(exc))
    opened = open_package(package)
    if opened.document is None or opened.level is None or opened.tier is None:
        _report(package, opened.problems, show_all)
        click.echo(f"dmlconform verify: {package}: INVALID: its claim cannot be read")
        sys.exit(EXIT_INVALID)
    shipped = _shipped(opened, suite_root)
    if known_issues_file is not None:
        from dmlconform.known_issues import KnownIssueError, load_known_issues

        try:
            shipped.known_issues = load_known_issues(known_issues_file)
        except KnownIssueError as exc:
            fail(str(exc))
    seed = secrets.randbelow(1 << 31) if seed is None else seed
    chosen = sample([case.full_id for case in shipped.cases], rerun_count, seed) if rerun_count else []
    verification = verify_package(opened, shipped, granted, digest, frozenset(chosen))
    if chosen and verification.worst() in (None, ProblemKind.CLAIM):
        assert backend_name is not None
        _spot_check(verification, shipped, backend_name,
                    BackendOptions(ep=ep, harness=harness, timeout_s=timeout_s, variant=variant, device=device,
                                   directml=directml, directml_version=directml_version, adapter=adapter, warp=warp,
                                   session_config=check_session_config(session_config),
                                   program_options=program_options),
                    chosen, seed, opened)
    _report(package, verification.problems, show_all)
    for note in verification.notes[:PROBLEMS_SHOWN]:
        click.echo(f"dmlconform verify: known issues: {note}")
    if len(verification.notes) > PROBLEMS_SHOWN:
        click.echo(f"dmlconform verify: known issues: ... and {len(verification.notes) - PROBLEMS_SHOWN} more")
    if verification.stray_writes:
        ids = verification.stray_writes
        click.echo(f"dmlconform verify: stray writes: {len(ids)} case(s) wrote outside their tensors; taken as "
                   "recorded, not re-derived (the bytes around the kept outputs are not in the package; a stray write "
                   f"can only fail a case): {', '.join(ids[:PROBLEMS_SHOWN])}"
                   + (f" and {len(ids) - PROBLEMS_SHOWN} more" if len(ids) > PROBLEMS_SHOWN else ""))
    sys.exit(_summary(package, opened, verification))


def _shipped(opened: OpenedPackage, suite_root: Path | None) -> Shipped:
    from dmlconform import __version__
    from dmlconform.certification.manifest import suite_files
    from dmlconform.certification.verify import Shipped
    from dmlconform.cli.common import load_cases, suite_roots
    from dmlconform.runner.loading import default_helpers, parallel_parser

    assert opened.tier is not None
    paths = (suite_root,) if suite_root is not None else ()
    from dmlconform.surface.paths import ExecutionPath

    cases = load_cases(paths, None, opened.tier, parallel_parser(default_helpers()),
                       execution_paths=tuple(ExecutionPath(name) for name in opened.paths))
    name = f"dmlconform {__version__}'s {opened.tier} tier" + (f" (stand-in {suite_root})" if suite_root else "")
    shipped = Shipped(cases, suite_files(suite_roots(opened.tier, suite_root)), name)
    if opened.custom_suite and suite_root is None:
        from dmlconform.certification import CERTIFICATION, Problem, ProblemKind

        opened.problems.append(Problem(ProblemKind.INVALID, CERTIFICATION, "field suite.custom_root: the package was "
                                       "made on a stand-in suite (a testing option), not on dmlconform's own"))
    return shipped


def _spot_check(verification: Verification, shipped: Shipped, backend_name: str, options: BackendOptions,
                chosen: list[str], seed: int, opened: OpenedPackage) -> None:
    from dmlconform.backends import create_backend
    from dmlconform.certification.spot_check import compare, device_note, spot_check_problems
    from dmlconform.certification.waivers import DeviceIdentity
    from dmlconform.runner import KeepOutputs, run_case

    run = verification.run
    assert run is not None and opened.level is not None
    try:
        backend = create_backend(backend_name, options)
    except Exception as exc:  # whatever a backend raises while starting, it is one line here
        fail(f"--backend {backend_name}: cannot create it: {exc.args[0] if exc.args else exc}")
    recorded = {r.id: r for r in run.results}
    cases = {case.full_id: case for case in shipped.cases}
    click.echo(f"dmlconform verify: spot-check: {len(chosen)} case(s) again on {backend_name} (--seed {seed})")
    try:
        note = device_note(DeviceIdentity.of(run.backend), DeviceIdentity.of(backend.info()))
        if note:
            click.echo(f"dmlconform verify: {note}")
        checks = []
        for case_id in chosen:
            again = run_case(cases[case_id], backend, opened.level, keep_outputs=KeepOutputs.ALL)
            checks.append(compare(recorded[case_id], verification.outputs.get(case_id), again,
                                  dict(again.actual_outputs)))
    finally:
        backend.close()
    identical = sum(1 for c in checks if c.identical)
    compared = sum(1 for c in checks if c.identical is not None)
    click.echo(f"dmlconform verify: spot-check: {sum(c.agrees for c in checks)}/{len(checks)} came out as in the "
               f"package; outputs bit-identical in {identical}/{compared} that have outputs")
    verification.problems += spot_check_problems(checks)


def _report(package: Path, problems: list, show_all: bool) -> None:
    shown = problems if show_all else problems[:PROBLEMS_SHOWN]
    for problem in shown:
        click.echo(f"{package / problem.where.split(': ', 1)[0]}"
                   + (f": {problem.where.split(': ', 1)[1]}" if ": " in problem.where else "")
                   + f": {problem.message}")
    if len(problems) > len(shown):
        click.echo(f"... and {len(problems) - len(shown)} more problem(s) (--all lists them)")


def _summary(package: Path, opened: OpenedPackage, verification: Verification) -> int:
    from dmlconform.certification import ProblemKind

    worst = verification.worst()
    count = sum(1 for p in verification.problems if p.kind is worst)
    if worst is ProblemKind.INVALID:
        click.echo(f"dmlconform verify: {package}: INVALID: {count} problem(s); the package is not what dmlconform "
                   "certify wrote, or is incomplete")
        return EXIT_INVALID
    verdict, run = verification.verdict, verification.run
    assert verdict is not None and run is not None
    device = run.backend.device + (f", driver {run.backend.extra['driver_version']}"
                                   if run.backend.extra.get("driver_version") else "")
    if worst is ProblemKind.SPOT_CHECK:
        click.echo(f"dmlconform verify: {package}: SPOT-CHECK FAILED: {count} re-run case(s) came out otherwise on "
                   "this unit than in the package")
        return EXIT_SPOT_CHECK
    if worst is ProblemKind.CLAIM:
        click.echo(f"dmlconform verify: {package}: VALID, but the claim does not hold: not conformant at "
                   f"{verdict.level} on {device}: {'; '.join(verdict.reasons)}")
        return EXIT_FAILED
    waived = f", {verdict.waived} waived" if verdict.waived else ""
    click.echo(f"dmlconform verify: {package}: VALID: conformant at {verdict.level} on {device} ({opened.tier} tier, "
               f"{len(run.results)} cases re-judged, {verdict.matched}/{verdict.required} required matched{waived}); "
               f"package digest {opened.digest}")
    return EXIT_OK
