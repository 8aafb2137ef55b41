"""`dmlconform doctor`: what each backend needs and what was found, with a live handshake (dmlconform/doctor.py)."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from dmlconform.cli.common import EXIT_FAILED, EXIT_OK, make_console, write_json_output


@click.command()
@click.option("--json", "json_path", type=click.Path(path_type=Path, dir_okay=False, allow_dash=True),
              help="Write the findings as JSON here ('-': standard output).")
@click.option("--no-handshake", is_flag=True, help="Skip starting the harness and host (seconds per device).")
def doctor(json_path: Path | None, no_handshake: bool) -> None:
    """Check what every backend needs: Python packages and ONNX Runtime's providers, CUDA, the Windows programs,
    Wine, an X display and Vulkan drivers (off Windows), DirectML.dll, and a live handshake with the DirectML
    harness on each device. Each missing piece comes with the command that fixes it.

    Exit status: 0 when some DirectML path works (a harness or host answered, or onnxruntime-directml runs in this
    process), 1 when none does; with --no-handshake, 0 when no row is missing or broken, 1 when one is."""
    from dmlconform.doctor import diagnose
    from dmlconform.report.doctor import render_doctor

    diagnosis = diagnose(live=not no_handshake)
    if json_path is not None:
        write_json_output(json_path, diagnosis.to_json())
    if json_path is None or str(json_path) != "-":
        render_doctor(diagnosis, make_console())
    sys.exit(EXIT_OK if diagnosis.passed else EXIT_FAILED)
