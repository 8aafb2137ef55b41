"""The commands of the docs' code blocks, and how each is checked (docs/docs-as-tests.md has the convention).

Every fenced block tagged bash, sh, shell or console in README.md and docs/*.md is read as commands: a command is a
line (with its `\\` continuations and any quoted text that spans lines; in a console block, the lines that start
with `$ `), its trailing comment kept for the reader. An HTML comment ending right above the block (only blank lines
between) annotates it, invisible in the rendered page:

    <!-- doc-commands: exit=1; 3: gpu; 5-6: network checkout (pip install from a checkout) -->

Directives are separated by `;`. One without a line prefix is for the whole block; `N:` or `N-M:` (physical lines of
the block, 1 being the line after the opening fence; a command is named by its first line) for those commands. The
words:

* `exit=N`: the exit status the doc gives the command (default 0);
* `tier=smoke`: the doc uses a larger tier only to illustrate: run with `--tier smoke` (in place of its `--tier`);
* `timeout=S`: seconds the command may take here (default 240);
* `gpu`, `windows`, `network`, `checkout`: not run by the test, and listed as such: it needs a GPU that is not
  lavapipe, Windows, the network (pip, apt-get, the package index), or a checkout of this repository (the
  benchmarks, the fuzzers, .ci/run's own commands);
* `alone` (a whole block only): the block needs nothing from the doc's earlier blocks, and runs as a test of its
  own (in parallel with the rest of the doc), in a folder with the fixtures only;
* `synopsis`: a usage line (`...`, `|`, placeholders), not a command: its subcommand and options are checked,
  nothing is run.
* `(...)`: a note for the reader of the markdown source; ignored.

Every other command runs, from the installed wheel, in a folder outside the checkout that holds the fixtures
(FIXTURE_FILES); the placeholders of PLACEHOLDERS are replaced and the variables of ENVIRONMENT are set; an optional
part written `[--opt V]` runs with the option. A command line that is neither run nor marked fails the fast test, and
so does an unmarked command that looks like one of the marked kinds (NEEDS_MARK).
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LANGUAGES = ("bash", "sh", "shell", "console")
NOT_RUN = ("gpu", "windows", "network", "checkout", "synopsis")
MARKS = NOT_RUN
DEFAULT_TIMEOUT = 240

#: Placeholders the docs use, and what the test puts in their place (a placeholder left in a command that runs fails
#: the fast test).
PLACEHOLDERS = {
    "CASE_ID": "relu_grad.edge/signed-zero-x",
    "RESULT.json": "reports/numpy.json",
    "PATH...": "test_vectors/relu_grad",
    "<the package digest the vendor submitted>": '"$(sha256sum pkg/CHECKSUMS.sha256 | cut -c1-64)"',
    "~/.ssh/vendor_key": "vendor_key",
}

#: Variables a command may use without setting them: what a CI job would have.
ENVIRONMENT = {
    "BUILD": "ci-1234", "BUILD_ID": "ci-1234", "SHA": "0123456789abcdef0123456789abcdef01234567",
    "COMMIT_SHA": "0123456789abcdef0123456789abcdef01234567", "BRANCH": "main",
    "JOB_URL": "https://ci.example.com/jobs/1234",
    "HARNESS": "python -m dmlconform.harness --backend numpy",
}

#: What the folder each doc's commands run in holds before its first command (tests/docs/test_doc_commands.py makes
#: them once from the installed wheel and copies them): name -> what it is.
FIXTURE_FILES = {
    "test_vectors/": "the checkout's bundled suites (a checkout's commands name them so)",
    "examples/": "the checkout's examples (baselines, waivers, the C harness, the plugin)",
    "old.json, new.json": "`dmlconform run --tier smoke --json` results of the reference",
    "reports/numpy.json": "`dmlconform run --json` (the standard tier on the reference: README command 1)",
    "ci/fails.csv, ci/flakes.txt, ci/skips.txt": "an empty baseline, flake list and skip list",
    "granted.yaml": "a waiver file that grants nothing (dmlconform-waivers/v1, no waivers)",
    "my_harness.exe, my-harness": "a harness of one's own: the Python reference harness, ignoring its arguments",
    "DirectML.dll": "a stand-in file for `--harness-file` to digest",
    "my/": "a suite folder of one's own (the bundled relu_grad suites)",
    "vendor_key, allowed_signers": "an SSH key pair, the public key allowed for vendor@example.com",
    "pkg/ (README.md only)": "`dmlconform certify --level 6_4 --backend native --harness \"$HARNESS\" --waivers granted.yaml -o pkg/`",
    "shard-2/ to shard-4/ (docs/certification.md only)": "the other machines' shards of its sharding example",
    "plugin-site/ (docs/plugins.md only)": "the example plugin as `pip install examples/plugin_backend` installs it, "
                                          "on PYTHONPATH",
}

#: An unmarked command that matches one of these fails the fast test: it needs that mark.
NEEDS_MARK = {
    "gpu": re.compile(r"--adapter[ =](nvidia|[0-9])|--device[ =]cuda|:cuda\b|--ep[ =]cuda"),
    "windows": re.compile(r"\.bat\b|\bcmd(\.exe)?\b|powershell"),
    "network": re.compile(r"\bpip install\b|\bapt(-get)? install\b|--available\b|--all-available\b|\bcurl\b|\bwget\b"
                          r"|\bfetch directml [0-9]|\bmatrix( [0-9.]+)* [0-9]+\.[0-9]+"),
    "checkout": re.compile(r"(^|[\s(])(benchmarks|fuzz|\.ci)/|-m fuzz\b|\bpytest\b|\bgit\b|\.venv/"),
    "synopsis": re.compile(r"\.\.\.(?!\w)|\w\|\w"),
}

_ANNOTATION = re.compile(r"<!--\s*doc-commands:(.*?)-->", re.S)
_FENCE = re.compile(r"^(```+|~~~+)\s*([\w-]*)[^\n]*\n(.*?)^\1\s*$", re.M | re.S)


class AnnotationError(ValueError):
    pass


@dataclass
class Command:
    doc: str
    line: int  # the line of the doc where the command begins
    block_line: int  # its first physical line in the block, 1-based
    text: str  # as the doc writes it, continuations joined by newlines
    marks: set[str] = field(default_factory=set)
    exit: int = 0
    tier: str | None = None
    timeout: int = DEFAULT_TIMEOUT
    alone: int | None = None  # the line of its block's fence, where the block runs as a test of its own

    @property
    def unit(self) -> str:
        """The test that runs the command: its doc's, or its block's own (`alone`)."""
        return self.doc if self.alone is None else f"{self.doc}:{self.alone}"

    @property
    def where(self) -> str:
        return f"{self.doc}:{self.line}"

    @property
    def runs(self) -> bool:
        return not (self.marks & set(NOT_RUN))

    def shown(self) -> str:
        return " ".join(part.strip() for part in self.text.replace("\\\n", " ").splitlines())

    def run_as(self) -> str:
        """The command line the test runs: placeholders replaced, optional parts taken, the tier made smoke."""
        text = self.text
        for placeholder, value in PLACEHOLDERS.items():
            text = text.replace(placeholder, value)
        text = re.sub(r"(?<=\s)\[(-[^\[\]]*|[\w./-]+)\]", r"\1", text)
        text = re.sub(r"(?<=\s)\[(-[^\[\]]*|[\w./-]+)\]", r"\1", text)  # one level of nesting
        if self.tier:
            if re.search(r"--tier[ =]\w+", text):
                text = re.sub(r"--tier[ =]\w+", f"--tier {self.tier}", text)
            else:
                text = re.sub(r"^(\s*dmlconform\s+\w+)", rf"\1 --tier {self.tier}", text, count=1)
        return text


@dataclass
class Block:
    doc: str
    line: int  # the line of the opening fence
    language: str
    commands: list[Command]


def unquoted(text: str, keep_quoted: bool = False) -> str:
    """The text with each comment removed and each quoted string emptied (or kept), by bash's rules, roughly."""
    out, quote, comment = [], None, False
    for index, char in enumerate(text):
        if comment:
            if char == "\n":
                comment = False
                out.append(char)
            continue
        if quote:
            if char == quote:
                quote = None
                out.append(char)
            elif keep_quoted:
                out.append(char)
            continue
        if char in "'\"":
            quote = char
            out.append(char)
        elif char == "#" and (index == 0 or text[index - 1].isspace()):
            comment = True
        else:
            out.append(char)
    return "".join(out)


def docs() -> list[Path]:
    return [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def _parse_annotation(text: str, where: str) -> list[tuple[tuple[int, int] | None, list[str]]]:
    directives = []
    text = re.sub(r"\([^)]*\)", " ", text)  # notes
    for directive in filter(None, (part.strip() for part in text.split(";"))):
        lines = None
        match = re.match(r"(\d+)(?:-(\d+))?\s*:\s*(.*)$", directive, re.S)
        if match:
            lines = (int(match[1]), int(match[2] or match[1]))
            directive = match[3]
        words = directive.split()
        if not words:
            raise AnnotationError(f"{where}: an empty doc-commands directive")
        for word in words:
            key = word.split("=", 1)[0]
            if word in MARKS or (key in ("exit", "timeout") and re.fullmatch(r"\w+=\d+", word)) \
                    or word in ("tier=smoke", "alone"):
                continue
            raise AnnotationError(f"{where}: doc-commands: unknown word {word!r} (known: {', '.join(MARKS)}, exit=N, "
                                  "tier=smoke, timeout=S, and notes in parentheses)")
        directives.append((lines, words))
    return directives


def _split_commands(body: str, language: str) -> list[tuple[int, str]]:
    """(first physical line, text) of each command in a block's body."""
    commands: list[tuple[int, str]] = []
    lines = body.split("\n")
    index = 0
    while index < len(lines):
        line = lines[index]
        start = index + 1
        index += 1
        if language == "console":
            if not line.startswith("$ "):
                continue
            line = line[2:]
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        text = line
        while index < len(lines) and (text.endswith("\\") or not _complete(text)):
            text += "\n" + (lines[index][2:] if language == "console" and lines[index].startswith("> ")
                            else lines[index])
            index += 1
        commands.append((start, text))
    return commands


def _complete(text: str) -> bool:
    try:
        shlex.split(text, comments=True)
    except ValueError:
        return False
    return True


def blocks(path: Path) -> list[Block]:
    text = path.read_text(encoding="utf-8")
    doc = path.relative_to(ROOT).as_posix()
    found = []
    for fence in _FENCE.finditer(text):
        if fence[2] not in LANGUAGES:
            continue
        fence_line = text.count("\n", 0, fence.start()) + 1
        before = text[:fence.start()].rstrip()
        annotation = None
        if before.endswith("-->"):
            start = before.rfind("<!--")
            match = _ANNOTATION.fullmatch(before[start:])
            if match:
                annotation = _parse_annotation(match[1], f"{doc}:{fence_line}")
        commands = [Command(doc, fence_line + first, first, command)
                    for first, command in _split_commands(fence[3], fence[2])]
        for lines, words in annotation or ():
            chosen = [c for c in commands if lines is None or lines[0] <= c.block_line <= lines[1]]
            if "alone" in words and lines is not None:
                raise AnnotationError(f"{doc}:{fence_line}: doc-commands: `alone` is for a whole block")
            if lines and not chosen:
                raise AnnotationError(f"{doc}:{fence_line}: doc-commands: lines {lines[0]}-{lines[1]} of the block "
                                      "begin no command")
            for command in chosen:
                for word in words:
                    key, _, value = word.partition("=")
                    if key == "exit":
                        command.exit = int(value)
                    elif key == "timeout":
                        command.timeout = int(value)
                    elif key == "tier":
                        command.tier = value
                    elif key == "alone":
                        command.alone = fence_line
                    else:
                        command.marks.add(word)
        found.append(Block(doc, fence_line, fence[2], commands))
    return found


def all_blocks() -> list[Block]:
    return [block for path in docs() for block in blocks(path)]


def all_commands() -> list[Command]:
    return [command for block in all_blocks() for command in block.commands]


_PLACEHOLDER = re.compile(r"(?<![\w$/.-])(?:[A-Z][A-Z0-9_]{2,}(?:\.\w+)?|<[^<>]+>)(?![\w=])")


def leftover_placeholders(command: Command) -> list[str]:
    """Placeholders left in what the test would run (outside quotes and comments), and variables nobody sets."""
    text = command.run_as()
    try:
        tokens = shlex.split(text.replace("\\\n", " "), comments=True)
    except ValueError:
        return ["(unbalanced quotes)"]
    unquoted = re.sub(r"'[^']*'|\"[^\"]*\"", " ", text)
    unquoted = re.sub(r"(^|\s)#.*", " ", unquoted)
    found = [m[0] for m in _PLACEHOLDER.finditer(unquoted) if not m[0].startswith("<<")]
    variables = set(re.findall(r"\$\{?([A-Za-z_]\w*)", text)) - set(ENVIRONMENT) - {"PATH", "HOME", "OUT"}
    assigned = {token.split("=", 1)[0] for token in tokens if re.match(r"[A-Za-z_]\w*=", token)}
    return found + sorted(f"${name}" for name in variables - assigned - _assigned_earlier(command))


def _assigned_earlier(command: Command) -> set[str]:
    names = set()
    for block in blocks(ROOT / command.doc):
        for other in block.commands:
            if other is command or other.line >= command.line:
                continue
            names |= set(re.findall(r"^\s*([A-Za-z_]\w*)=", other.text))
    return names


def invocations(command: Command) -> list[list[str]]:
    """The argument lists of the `dmlconform` commands in a command line (optional `[...]` parts included)."""
    text = re.sub(r"(?<=\s)\[|\](?=\s|$)", " ", command.run_as() if command.runs else command.text)
    lexer = shlex.shlex(text, posix=True, punctuation_chars=";&|()")
    lexer.whitespace_split = True
    lexer.commenters = "#"
    try:
        tokens = list(lexer)
    except ValueError:
        return []
    segments, current = [], []
    for token in tokens:
        if token and set(token) <= set(";&|()"):
            segments.append(current)
            current = []
        else:
            current.append(token)
    segments.append(current)
    found = []
    for segment in segments:
        while segment and re.match(r"[A-Za-z_]\w*=", segment[0]):
            segment = segment[1:]
        if segment and Path(segment[0]).name == "dmlconform":
            found.append(segment[1:])
    return found
