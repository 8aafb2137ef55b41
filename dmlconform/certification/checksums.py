"""The checksum list of a package: every file but the list itself, as `sha256sum` writes it.

A line is `<64 hex digits><two spaces><path>`, paths relative to the package with `/` between folders, sorted.
Paths are limited to the characters case ids and output names use, so no line needs `sha256sum`'s escapes and
no path can leave the package. The list's own SHA-256 is the package digest: the one value a vendor submits
beside the package (or signs) to pin every file.
"""

from __future__ import annotations

import hashlib
import os
import re
from pathlib import Path

from dmlconform.atomic_file import write_atomically
from dmlconform.certification import CHECKSUMS, Problem, ProblemKind

#: A package's checksum list holds a line per file; the full tier keeps about 6,000 outputs.
MAX_CHECKSUMS_BYTES = 64 << 20
_LINE = re.compile(r"([0-9a-f]{64})  ([A-Za-z0-9._+@\-]+(?:/[A-Za-z0-9._+@\-]+)*)")
_CHUNK = 1 << 20


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as file:
        while chunk := file.read(_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def package_files(folder: Path) -> tuple[list[str], list[str]]:
    """Every regular file under `folder` (relative, `/`-separated, sorted) but the checksum list; and every
    entry that is neither a regular file nor a folder (links, devices), which a package must not hold."""
    files, odd = [], []
    for root, folders, names in os.walk(folder):
        base = Path(root)
        for name in sorted(folders):
            if (base / name).is_symlink():
                odd.append((base / name).relative_to(folder).as_posix())
        folders[:] = sorted(f for f in folders if not (base / f).is_symlink())
        for name in names:
            path = base / name
            relative = path.relative_to(folder).as_posix()
            if path.is_symlink() or not path.is_file():
                odd.append(relative)
            elif relative != CHECKSUMS:
                files.append(relative)
    return sorted(files), sorted(odd)


def render_checksums(folder: Path) -> str:
    files, odd = package_files(folder)
    if odd:
        raise ValueError(f"{folder / odd[0]}: a package holds only regular files and folders")
    for relative in files:
        if not _LINE.fullmatch(f"{'0' * 64}  {relative}"):
            raise ValueError(f"{folder / relative}: a package file name uses only letters, digits and . _ + - @")
    return "".join(f"{file_sha256(folder / relative)}  {relative}\n" for relative in files)


def write_checksums(folder: Path) -> str:
    """Write the checksum list of everything in `folder`; the package digest (the list's SHA-256)."""
    text = render_checksums(folder)
    write_atomically(folder / CHECKSUMS, text)
    return hashlib.sha256(text.encode()).hexdigest()


def parse_checksums(raw: bytes, name: str) -> tuple[dict[str, str], list[Problem]]:
    """Path -> SHA-256 of a checksum list's lines, and a problem per line that is not one (a path that could
    leave the folder is not one)."""
    problems: list[Problem] = []
    listed: dict[str, str] = {}
    try:
        text = raw.decode("ascii")
    except UnicodeDecodeError:
        return {}, [Problem(ProblemKind.INVALID, name, "is not ASCII text")]
    for number, line in enumerate(text.splitlines(), start=1):
        match = _LINE.fullmatch(line)
        parts = match.group(2).split("/") if match else []
        where = f"{name}: line {number}"
        if match is None or any(part in (".", "..") for part in parts):
            problems.append(Problem(ProblemKind.INVALID, where, "is not '<sha256>  <path inside the package>'"))
        elif match.group(2) in listed or match.group(2) == CHECKSUMS:
            problems.append(Problem(ProblemKind.INVALID, where, f"lists {match.group(2)} again"))
        else:
            listed[match.group(2)] = match.group(1)
    return listed, problems


def check_checksums(folder: Path) -> tuple[list[Problem], set[str], str | None]:
    """Every listed file present and matching, nothing unlisted: the problems, the files that matched (the only
    ones the other checks may trust), and the package digest (None without a readable list)."""
    path = folder / CHECKSUMS

    def invalid(where: str, message: str) -> Problem:
        return Problem(ProblemKind.INVALID, where, message)

    try:
        if path.is_symlink() or not path.is_file():
            return [invalid(CHECKSUMS, "missing: a package lists its files' SHA-256 here")], set(), None
        if path.stat().st_size > MAX_CHECKSUMS_BYTES:
            return [invalid(CHECKSUMS, f"is larger than {MAX_CHECKSUMS_BYTES >> 20} MiB; not read")], set(), None
        raw = path.read_bytes()
    except OSError as exc:
        return [invalid(CHECKSUMS, f"cannot be read ({exc.strerror or exc})")], set(), None
    digest = hashlib.sha256(raw).hexdigest()
    listed, problems = parse_checksums(raw, CHECKSUMS)
    present, odd = package_files(folder)
    problems += [invalid(relative, "is not a regular file (a link or a device); a package holds only files")
                 for relative in odd]
    matched = set()
    for relative, expected in listed.items():
        file = folder / relative
        if relative in odd:
            continue
        if not file.is_file():
            problems.append(invalid(relative, f"missing: {CHECKSUMS} lists it"))
            continue
        try:
            actual = file_sha256(file)
        except OSError as exc:
            problems.append(invalid(relative, f"cannot be read ({exc.strerror or exc})"))
            continue
        if actual != expected:
            problems.append(invalid(relative, f"changed: its SHA-256 is {actual[:16]}…, {CHECKSUMS} says "
                                              f"{expected[:16]}…"))
        else:
            matched.add(relative)
    problems += [invalid(relative, f"is not in {CHECKSUMS}: added after the package was made")
                 for relative in present if relative not in listed]
    return problems, matched, digest
