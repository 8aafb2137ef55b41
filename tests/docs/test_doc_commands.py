"""The docs' commands (tests/docs/doc_commands.py has the convention; docs/docs-as-tests.md for the reader).

The fast tests (the test command) read every command and check its classification, its placeholders and its
`dmlconform` options against the CLI. The tests marked docs_commands (.ci/run's last step, with
`--doc-commands-bin` naming the bin folder of a virtual environment where the wheel is installed) run every command
that is not marked, doc by doc, in a folder outside the checkout, and list each marked command as a skip naming its
marks.
"""

from __future__ import annotations

import hashlib
import re
import shutil
import subprocess
import textwrap
from pathlib import Path

import click
import pytest

from tests.docs import doc_commands
from tests.docs.conftest import environment, sh
from tests.docs.doc_commands import NEEDS_MARK, NOT_RUN, ROOT, Command, unquoted

COMMANDS = doc_commands.all_commands()
_SLOW = re.compile(r"--ep dml|\bgenerate\b|\bcrosscheck\b|\bdoctor\b|\bcertify\b|--backend (directml|torch)")


def _weight(unit: str) -> int:
    return sum(10 if _SLOW.search(command.text) else 1
               for command in COMMANDS if command.unit == unit and command.runs)


#: The tests that run commands: one per doc, and one per block that runs `alone`; the slowest first, so that
#: pytest-xdist starts them first.
UNITS = sorted({command.unit for command in COMMANDS}, key=lambda unit: (-_weight(unit), unit))


def test_annotations_parse_and_every_block_has_commands() -> None:
    blocks = doc_commands.all_blocks()
    assert blocks, "no command blocks found in README.md and docs/*.md"
    empty = [f"{block.doc}:{block.line}" for block in blocks if not block.commands]
    assert not empty, f"command blocks without a command (tag them text?): {empty}"


def test_unmarked_commands_need_no_mark() -> None:
    """An unmarked command that looks like a GPU, Windows, network, checkout-only or usage line fails here, quickly:
    mark it (or change it) so that the docs-commands step does not run it."""
    problems = []
    for command in COMMANDS:
        code = doc_commands.unquoted(command.run_as())
        for mark, pattern in NEEDS_MARK.items():
            if mark not in command.marks and pattern.search(code) and not (mark == "synopsis" and command.marks):
                problems.append(f"{command.where}: looks like `{mark}` ({pattern.search(code)[0]!r}) but is not marked "
                                f"so: {command.shown()}")
    assert not problems, "\n".join(problems)


def test_commands_that_run_have_no_placeholder_left() -> None:
    problems = [f"{command.where}: {', '.join(left)} in `{command.run_as()}`: add it to PLACEHOLDERS or ENVIRONMENT "
                "(tests/docs/doc_commands.py), or mark the line synopsis"
                for command in COMMANDS if command.runs and (left := doc_commands.leftover_placeholders(command))]
    assert not problems, "\n".join(problems)


def _options(command: click.Command) -> set[str]:
    return {option for param in command.params for option in (*param.opts, *param.secondary_opts)} | {"-h", "--help"}


def test_dmlconform_subcommands_and_options_exist() -> None:
    """Every `dmlconform SUBCOMMAND --option` of the docs, run or not (synopsis lines too), is one the CLI has."""
    from dmlconform.cli import main

    problems = []
    for command in COMMANDS:
        for arguments in doc_commands.invocations(command):
            target: click.Command = main
            index = 0
            while isinstance(target, click.Group) and index < len(arguments) and not arguments[index].startswith("-"):
                name = arguments[index]
                found = target.get_command(click.Context(target), name)
                if found is None:
                    problems.append(f"{command.where}: no subcommand {name!r} in `{command.shown()}`")
                    break
                target = found
                index += 1
            else:
                if isinstance(target, click.Group):
                    problems.append(f"{command.where}: no subcommand named in `{command.shown()}`")
                    continue
                known = _options(target)
                for argument in arguments[index:]:
                    if argument.startswith("-") and argument != "-" and argument.split("=", 1)[0] not in known:
                        problems.append(f"{command.where}: `dmlconform {target.name}` has no option "
                                        f"{argument.split('=', 1)[0]} (in `{command.shown()}`)")
    assert not problems, "\n".join(problems)


# --- the docs-commands step of .ci/run -------------------------------------------------------------------------------

def _extra_fixtures(doc: str, folder: Path, env: dict[str, str]) -> None:
    """What one doc's commands take beyond doc_fixtures (doc_commands.FIXTURE_FILES names them too)."""
    if doc == "README.md":  # its certify line needs a GPU; its verify line checks a package all the same
        sh('dmlconform certify --level 6_4 --backend native --harness "$HARNESS" --waivers granted.yaml -o pkg/ '
            ">/dev/null", folder, env)
    elif doc == "docs/certification.md":  # "on each machine": the doc's command makes shard 1, these the others
        sh('for i in 2 3 4; do dmlconform certify --level 6_4 --backend native --harness "$HARNESS" --shard $i/4 '
            '-o shard-$i/ >/dev/null || exit 1; done', folder, env)
    elif doc == "docs/plugins.md":  # what its `pip install examples/plugin_backend` installs, on a path of its own
        site = folder / "plugin-site"
        shutil.copytree(ROOT / "examples" / "plugin_backend" / "dmlconform_example_plugin",
                        site / "dmlconform_example_plugin")
        info = site / "dmlconform_example_plugin-0.1.0.dist-info"
        info.mkdir()
        (info / "METADATA").write_text("Metadata-Version: 2.1\nName: dmlconform-example-plugin\nVersion: 0.1.0\n")
        (info / "entry_points.txt").write_text("[dmlconform.backends]\n"
                                               "example-reference = dmlconform_example_plugin:create\n")
        env["PYTHONPATH"] = str(site)


#: Commands that write nothing where they run: one that several docs give, word for word (comments aside) and with
#: the same exit status, runs once in a test run; a doc's test that finds it running in another's counts it there.
SHARED = re.compile(r"^dmlconform (generate --check|crosscheck|run|list|ops|coverage|doctor)\b(?!.*(\s(--json|--junit|"
                    r"--html|--out|-o|--artifacts|--record)\b|[>|&;$]))")


def _script(commands: list[Command], logs: Path, shared: Path) -> str:
    lines = ["cd \"$(dirname \"$0\")\""]
    for index, command in enumerate(commands):
        text = command.run_as()
        log, rc = f"{logs}/{index}.log", f"{logs}/{index}.rc"
        run = f"{{\n{text}\n}} > {log} 2>&1 < /dev/null\necho $? $start $EPOCHREALTIME > {rc}"
        code = unquoted(text, keep_quoted=True).strip()
        if SHARED.match(unquoted(text).strip()):
            memo = shared / hashlib.sha256(f"{code}\n{command.exit}".encode()).hexdigest()[:16]
            run = (f"exec 9>> {memo}.lock\n"
                   f"if ! flock -n 9; then echo '(running in the test of another doc, which checks it)' > {log}; "
                   f"echo {command.exit} $start $EPOCHREALTIME shared > {rc}\n"
                   f"elif [ -f {memo}.rc ]; then cp {memo}.log {log}; "
                   f"echo \"$(cut -d' ' -f1 {memo}.rc) $start $EPOCHREALTIME shared\" > {rc}\n"
                   f"else\n{run}\ncp {log} {memo}.log; cp {rc} {memo}.rc\nfi\nexec 9>&-")
        lines.append(f"start=$EPOCHREALTIME\n{run}")
    return "\n".join(lines) + "\n"


@pytest.mark.docs_commands
@pytest.mark.slow
@pytest.mark.parametrize("unit", UNITS)
def test_doc_commands_run(unit: str, doc_commands_bin: Path, doc_fixtures: Path, shared_runs: Path,
                          tmp_path: Path) -> None:
    """Each command of the doc that is not marked, in order, in one shell (a block's variables carry to its later
    commands, its files to the doc's later blocks), from the installed wheel, outside the checkout: it exits as the
    doc says."""
    commands = [command for command in COMMANDS if command.unit == unit and command.runs]
    doc = unit.split(":")[0]
    if not commands:
        marks = sorted({mark for command in COMMANDS if command.unit == unit for mark in command.marks})
        pytest.skip(f"{unit}: every command is marked ({', '.join(marks)})")
    folder = tmp_path / "work"
    shutil.copytree(doc_fixtures, folder, symlinks=True)
    env = environment(doc_commands_bin, folder)
    if unit == doc:
        _extra_fixtures(doc, folder, env)
    logs = tmp_path / "logs"
    logs.mkdir()
    script = folder / "doc-commands.sh"
    script.write_text(_script(commands, logs, shared_runs))
    timeout = sum(command.timeout for command in commands)
    subprocess.run(["bash", str(script)], env=env, timeout=timeout, check=False, stdin=subprocess.DEVNULL,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    problems = []
    for index, command in enumerate(commands):
        rc_file = logs / f"{index}.rc"
        log = (logs / f"{index}.log").read_text(errors="replace") if (logs / f"{index}.log").exists() else ""
        status, seconds = None, 0.0
        if rc_file.exists():
            code, start, end, *_ = rc_file.read_text().split()
            status, seconds = int(code), float(end) - float(start)
        print(f"{seconds:6.1f} s  exit {status}  {command.where}: {command.shown()[:100]}")
        if status != command.exit:
            problems.append(f"{command.where}: exited {status}, the doc says {command.exit}: `{command.run_as()}`\n"
                            + textwrap.indent("\n".join(log.rstrip().splitlines()[-12:]), "    | "))
    assert not problems, f"{unit}, run in {folder}:\n" + "\n".join(problems)


MARKED = [command for command in COMMANDS if not command.runs]


@pytest.mark.docs_commands
@pytest.mark.parametrize("command", MARKED, ids=[command.where for command in MARKED])
def test_marked_command_is_not_run(command: Command, doc_commands_bin: Path) -> None:
    """Listed, never silently left out: each command a doc marks is a skip naming why (`-ra` prints them)."""
    pytest.skip(f"{command.where}: {'/'.join(sorted(command.marks & set(NOT_RUN)))}, not run here: "
                f"{command.shown()[:120]}")

