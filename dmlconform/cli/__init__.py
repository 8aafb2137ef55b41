"""The `dmlconform` command line: one module per command (run, merge, crosscheck, list/ops/backends, diff,
show, repro, report, generate, coverage, certify, verify, doctor, fetch, matrix, history); `common` and `execution`
(the run engine of run, certify and matrix) are shared."""

from __future__ import annotations

import difflib
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


def _usage_line(error: click.UsageError, where: str) -> str:
    """A usage error as the one line every command's errors are (README: exit 2, one line), e.g. `dmlconform run: no
    such option --jbos (did you mean --jobs?)`, instead of click's usage, hint and message on three lines."""
    names, context = [], error.ctx
    while context is not None:
        names.append(context.info_name or "")
        context = context.parent
    command = " ".join(["dmlconform", *reversed(names[:-1])]) if names else where
    guesses: list[str] = []
    if isinstance(error, click.exceptions.NoSuchOption):
        message = f"no such option {error.option_name}"
        known = [name for parameter in error.ctx.command.params for name in parameter.opts + parameter.secondary_opts
                 if name.startswith("-")] if error.ctx is not None else list(error.possibilities or ())
        guesses = difflib.get_close_matches(error.option_name, known, n=1)
    elif isinstance(error, click.exceptions.NoSuchCommand):
        message = f"no such command {error.command_name}"
        group = error.ctx.command if error.ctx is not None else None
        known = group.list_commands(error.ctx) if isinstance(group, click.Group) and error.ctx is not None else []
        guesses = difflib.get_close_matches(error.command_name, known, n=1)
    else:
        message = " ".join(error.format_message().split()).rstrip(".")
        message = message[:1].lower() + message[1:]
    if guesses:
        message += f" (did you mean {' or '.join(guesses)}?)"
    return f"{command}: {message}"


def _one_line(error: click.UsageError, where: str) -> click.UsageError:
    if not isinstance(error, click.exceptions.NoArgsIsHelpError):  # a bare group shows its help, as asked
        error.show = lambda file=None: click.echo(_usage_line(error, where), err=True)  # type: ignore[method-assign]
    return error


class _Commands(click.Group):
    """The command group, importing a command's module when the command is asked for; its usage errors, and its
    commands', are one line (exit 2)."""

    def make_context(self, info_name: str | None, args: list[str], parent: click.Context | None = None,
                     **extra: object) -> click.Context:
        try:
            return super().make_context(info_name, args, parent, **extra)  # type: ignore[arg-type]
        except click.UsageError as error:
            raise _one_line(error, "dmlconform") from None

    def invoke(self, ctx: click.Context) -> object:
        try:
            return super().invoke(ctx)
        except click.UsageError as error:
            raise _one_line(error, " ".join(["dmlconform", *([ctx.invoked_subcommand] if ctx.invoked_subcommand
                                                              else [])])) from None

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
