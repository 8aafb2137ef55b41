"""The `dmlconform` command line: one module per command (run, merge, crosscheck, list/ops/backends, diff,
show, repro, report, generate, coverage, certify, verify, doctor, fetch, matrix, history); `common` and `execution`
(the run engine of run, certify and matrix) are shared."""

from __future__ import annotations

import click

from dmlconform import __version__
from dmlconform.cli.certify import certify
from dmlconform.cli.common import EXIT_FAILED, EXIT_OK, EXIT_UNUSABLE, bundled_suites
from dmlconform.cli.coverage import coverage
from dmlconform.cli.crosscheck import crosscheck
from dmlconform.cli.diff import diff
from dmlconform.cli.doctor import doctor
from dmlconform.cli.fetch import fetch
from dmlconform.cli.generate import generate
from dmlconform.cli.history import history
from dmlconform.cli.listing import backends, list_cases, ops
from dmlconform.cli.matrix import matrix
from dmlconform.cli.merge import merge
from dmlconform.cli.report import report
from dmlconform.cli.repro import repro
from dmlconform.cli.run import run
from dmlconform.cli.show import show
from dmlconform.cli.verify import verify

__all__ = ["EXIT_FAILED", "EXIT_OK", "EXIT_UNUSABLE", "bundled_suites", "main"]


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="dmlconform")
def main() -> None:
    """Conformance tests for DirectML gradient operators."""


for _command in (run, merge, crosscheck, list_cases, ops, backends, diff, show, repro, report, generate,
                 coverage, certify, verify, doctor, fetch, matrix, history):
    main.add_command(_command)
