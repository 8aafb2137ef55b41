"""The `dmlconform` command line: one module per command (run, merge, crosscheck, list/ops/backends, diff,
show, repro, report, generate, coverage, certify, verify, doctor, fetch, matrix, history); `common` and `execution`
(the run engine of run, certify and matrix) are shared."""

from __future__ import annotations

import importlib

import click

from dmlconform import __version__
from dmlconform.cli.common import EXIT_FAILED, EXIT_OK, EXIT_UNUSABLE, bundled_suites

__all__ = ["EXIT_FAILED", "EXIT_OK", "EXIT_UNUSABLE", "bundled_suites", "main"]

#: Each command's name, module (in cli/) and function (help lists them by name): a command is imported when it
#: runs (or help lists it), so that each pays for its own imports only (`run --backend directml` starts its harnesses
#: before its heavy imports; cli/early_start.py).
COMMANDS = (("run", "run", "run"), ("merge", "merge", "merge"), ("crosscheck", "crosscheck", "crosscheck"),
            ("list", "listing", "list_cases"), ("ops", "listing", "ops"), ("backends", "listing", "backends"),
            ("diff", "diff", "diff"), ("show", "show", "show"), ("repro", "repro", "repro"),
            ("report", "report", "report"), ("generate", "generate", "generate"), ("coverage", "coverage", "coverage"),
            ("certify", "certify", "certify"), ("verify", "verify", "verify"), ("doctor", "doctor", "doctor"),
            ("fetch", "fetch", "fetch"), ("matrix", "matrix", "matrix"), ("history", "history", "history"))


class _Commands(click.Group):
    """The command group, importing a command's module when the command is asked for."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(name for name, _, _ in COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        found = next(((module, function) for name, module, function in COMMANDS if name == cmd_name), None)
        if found is None:
            return None
        command = getattr(importlib.import_module(f"dmlconform.cli.{found[0]}"), found[1])
        assert isinstance(command, click.Command)
        return command


@click.group(cls=_Commands, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="dmlconform")
def main() -> None:
    """Conformance tests for DirectML gradient operators."""
