"""`dmlconform crosscheck`: run each case on several backends and arbitrate where they disagree.

Exit status: 0 when no golden is suspect, 1 when one is (anywhere), 2 for unusable input or usage.
"""

from __future__ import annotations

import sys
from dataclasses import replace
from pathlib import Path

import click

from dmlconform.cli.common import (
    EXIT_FAILED,
    EXIT_OK,
    TIER_HELP,
    check_session_config,
    directml_options,
    fail,
    load_cases,
    make_console,
    suite_limit_option,
    write_json_output,
)
from dmlconform.suite.limits import SuiteLimits
from dmlconform.suite.tiers import NAMES

DEFAULT_BACKENDS = "numpy,onnxruntime,torch"
#: What the part after the colon of `NAME:OPTION` sets, per backend.
SPEC_OPTION = {"torch": "device", "onnxruntime": "ep", "numpy": "variant"}


def parse_backends(text: str) -> list[tuple[str, str, str | None]]:
    """`numpy,onnxruntime:cuda,torch:cuda:1` -> [(label, backend name, option or None)]; ValueError if unusable."""
    specs = []
    for part in (p.strip() for p in text.split(",")):
        if not part:
            raise ValueError(f"--backends {text!r}: an empty backend name")
        name, _, option = part.partition(":")
        if option and name not in SPEC_OPTION:
            raise ValueError(f"--backends: {part!r}: {name} takes no option after ':' (options: "
                             + ", ".join(f"{n}:{o.upper()}" for n, o in SPEC_OPTION.items()) + ")")
        specs.append((part, name, option or None))
    labels = [label for label, _, _ in specs]
    repeated = sorted({label for label in labels if labels.count(label) > 1})
    if repeated:
        raise ValueError(f"--backends: {', '.join(repeated)} named twice")
    if len(specs) < 2:
        raise ValueError(f"--backends {text!r}: a crosscheck needs at least two backends")
    return specs


@click.command()
@click.argument("paths", nargs=-1, type=click.Path(path_type=Path))
@click.option("--backends", "backends_text", default=DEFAULT_BACKENDS, show_default=True, metavar="A,B[,...]",
              help="Backends to run side by side; NAME:OPTION sets the device of torch (torch:cuda:1), the "
              "execution provider of onnxruntime (onnxruntime:cuda) or the variant of numpy (numpy:swapped).")
@click.option("-k", "expression", metavar="EXPR", help="Select cases, as for run.")
@click.option("--tier", "tier_name", type=click.Choice(NAMES), help=TIER_HELP)
@click.option("--device", default="cpu", show_default=True, metavar="cpu|cuda[:N]",
              help="PyTorch device for a plain `torch`.")
@click.option("--ep", default="cpu", show_default=True, type=click.Choice(["auto", "dml", "cuda", "cpu"]),
              help="ONNX Runtime execution provider for a plain `onnxruntime`.")
@click.option("--harness", metavar="'CMD ARGS'", help="Native harness command line (native backend).")
@click.option("--timeout", "timeout_s", default=60.0, show_default=True, type=click.FloatRange(0.001),
              help="Seconds one case may take on the native harness.")
@click.option("--json", "json_path", type=click.Path(path_type=Path), help="Write the crosscheck as JSON here.")
@click.option("--show", "shown", default=25, show_default=True, type=click.IntRange(0),
              help="Cases that are not 'all agree' printed in full.")
@directml_options
@suite_limit_option
def crosscheck(paths: tuple[Path, ...], backends_text: str, expression: str | None, tier_name: str | None,
               device: str, ep: str,
               harness: str | None, timeout_s: float, json_path: Path | None, shown: int, directml: str | None,
               directml_version: str | None, adapter: str | None, warp: bool, session_config: tuple[str, ...],
               program_options: tuple[str, ...], suite_limits: SuiteLimits) -> None:
    """Run each case on every backend and, where they disagree, say whether a backend or the golden is wrong.

    Verdicts per case: "all agree"; "backend X differs" (X does not match the golden, at least one backend
    does); "golden suspect" (two or more backends agree with each other, match no answer of the golden, and
    outnumber those that match it); "undecided". Backends following different candidates of an undocumented
    behaviour agree. Exit status: 0, 1 when a golden is suspect anywhere, 2 for unusable input or usage."""
    from dmlconform.backends import create_backend
    from dmlconform.backends.base import BackendOptions
    from dmlconform.report.crosscheck import crosscheck_document, render_crosscheck
    from dmlconform.runner.crosscheck import crosscheck_cases

    try:
        specs = parse_backends(backends_text)
    except ValueError as exc:
        fail(str(exc))
    base = BackendOptions(ep=ep, harness=harness, timeout_s=timeout_s, device=device, directml=directml,
                          directml_version=directml_version, adapter=adapter, warp=warp,
                          session_config=check_session_config(session_config), program_options=program_options)
    cases = load_cases(paths, expression, tier_name, limits=suite_limits)
    backends = []
    try:
        for label, name, option in specs:
            options = replace(base, **{SPEC_OPTION[name]: option}) if option else base
            try:
                backends.append(create_backend(name, options))
            except Exception as exc:  # the factory's one-line reason: torch missing, no such device, ...
                reason = exc.args[0] if isinstance(exc, KeyError) and exc.args else exc
                fail(f"--backends {label}: {reason}")
        run = crosscheck_cases(cases, backends, [label for label, _, _ in specs])
    finally:
        for backend in backends:
            backend.close()
    render_crosscheck(run, make_console(), shown)
    if json_path is not None:
        write_json_output(json_path, crosscheck_document(run))
    sys.exit(EXIT_FAILED if run.golden_suspect else EXIT_OK)
