"""Where DirectML.dll comes from, and the cache of releases fetched from the package index.

DirectML itself is not on the package index; the win_amd64 wheels of onnxruntime-directml carry it (with
onnxruntime.dll) under `onnxruntime/capi/`. `fetch` downloads one such wheel with pip, takes the three DLLs out of
it, checks them and records what it took in `release.json`; a release lives in
`<cache_root>/directml/<onnxruntime-directml version>/`. A folder becomes that name only by one rename, after
every file in it has been written, checked and flushed to disk, so an interrupted fetch leaves at most a
`.staging-*` folder that readers ignore. Readers trust a release only while every file still has the digest
recorded when it was fetched.

`choose_directml` says which DirectML.dll a run uses and why (its `origin`), in this order: the path given, the
DMLCONFORM_DIRECTML environment variable, the release version given, on Windows the installed
onnxruntime-directml's DLL, then the cache (DEFAULT_VERSION, else the newest).
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import json
import os
import re
import secrets
import shlex
import shutil
import subprocess
import sys
import time
import zipfile
import zlib
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from dmlconform import cache_folder
from dmlconform.atomic_file import sync_folder, write_atomically
from dmlconform.directml.pe import DllError, DllFacts, check_directml, check_onnxruntime

PACKAGE = "onnxruntime-directml"
#: onnxruntime-directml 1.24.4 ships DirectML 1.15.4.0.
DEFAULT_VERSION = "1.24.4"
#: sha256 of the DLLs in the published wheels: a fetched file that disagrees is refused. Versions not named here
#: are trusted on first use (their digests are recorded at fetch and checked from then on).
KNOWN_DIGESTS: dict[str, dict[str, str]] = {
    "1.24.4": {
        "DirectML.dll": "c07cb8c2f870f0152bfb690f64c4b048e78bbc219efad420a9758fc896cbecb0",
        "onnxruntime.dll": "0a49bb13573807ad309aa9967a46471c07d6495bab5b279d1fad474aefd8ef4b",
        "onnxruntime_providers_shared.dll": "85cf8642189d1ff9c4bf3c0bc07dd70ee1555fbb554586a3300c865eff7be811",
    },
}
WHEEL_FOLDER = "onnxruntime/capi"
DIRECTML_DLL = "DirectML.dll"
ONNXRUNTIME_DLL = "onnxruntime.dll"
PROVIDERS_SHARED_DLL = "onnxruntime_providers_shared.dll"
RELEASE_FILES = (DIRECTML_DLL, ONNXRUNTIME_DLL, PROVIDERS_SHARED_DLL)
RELEASE_RECORD = "release.json"
RELEASE_FORMAT = "dmlconform-directml-release/v1"
STAGING_PREFIX = ".staging-"
#: A staging folder this old belongs to no fetch still running (a fetch takes a minute): readers remove it.
STALE_STAGING_SECONDS = 3600
#: A wheel member larger than this is refused before it is inflated (the DLLs are 1 to 25 MiB).
MAX_MEMBER_BYTES = 256 << 20
MAX_RECORD_BYTES = 1 << 20
CHUNK_BYTES = 1 << 20
#: A version as the package index spells onnxruntime-directml's (1.24.4, 1.17.0rc1, 1.20.0.post1): a folder name.
VERSION_PATTERN = re.compile(r"[0-9]+(\.[0-9]+)*([a-z]+[0-9]*)?(\.post[0-9]+)?", re.IGNORECASE)
#: A run on Windows can use the installed onnxruntime-directml; tests switch it on elsewhere.
ON_WINDOWS = os.name == "nt"

Log = Callable[[str], None]


class FetchError(RuntimeError):
    """A release that could not be fetched; one line saying why and what to do."""


class DirectMLNotFound(RuntimeError):
    """No usable DirectML.dll where one was asked for; one line saying where to get one."""


class ReleaseError(RuntimeError):
    """A cache folder that is not a valid release; one line naming the folder and what is wrong."""


@dataclass(frozen=True)
class FetchedRelease:
    #: onnxruntime-directml's version, also the folder's name.
    package_version: str
    #: DirectML.dll's file version (1.15.4.0).
    directml_version: str
    folder: Path
    #: File name -> sha256, for the DLLs the wheel carried (DirectML.dll always).
    files: dict[str, str]
    #: The wheel's file name and digest (the wheel itself is not kept).
    wheel: str
    wheel_sha256: str
    #: ISO 8601, UTC.
    fetched_at: str

    @property
    def directml_dll(self) -> Path:
        return self.folder / DIRECTML_DLL

    @property
    def onnxruntime_dll(self) -> Path | None:
        return self.folder / ONNXRUNTIME_DLL if ONNXRUNTIME_DLL in self.files else None

    @property
    def providers_shared_dll(self) -> Path | None:
        return self.folder / PROVIDERS_SHARED_DLL if PROVIDERS_SHARED_DLL in self.files else None


@dataclass(frozen=True)
class DirectMLChoice:
    dll: Path
    #: '--directml', 'DMLCONFORM_DIRECTML', 'onnxruntime-directml <version> (installed)' or
    #: 'cache: onnxruntime-directml <version>'.
    origin: str
    facts: DllFacts
    #: The cached release the DLL belongs to, if it came from the cache.
    release: FetchedRelease | None


def cache_root(environ: Mapping[str, str] | None = None) -> Path:
    """The user's cache folder (cache_folder.py)."""
    return cache_folder.cache_root(environ, ON_WINDOWS)


def releases_folder(root: Path | None = None) -> Path:
    return (cache_root() if root is None else root) / "directml"


def version_key(version: str) -> tuple[tuple[int, ...], int, str]:
    """Sorts versions numerically (1.10 after 1.9), a pre-release (1.17.0rc1) before its release, .postN after."""
    match = re.match(r"([0-9]+(?:\.[0-9]+)*)(.*)", version)
    if match is None:
        return (), 0, version
    numbers = tuple(int(part) for part in match.group(1).split("."))
    while numbers and numbers[-1] == 0:  # 1.24 and 1.24.0 are one version
        numbers = numbers[:-1]
    rest = match.group(2).lower()
    rank = 1 if not rest else 2 if rest.startswith(".post") else 0
    return numbers, rank, rest


def release_problem(folder: Path) -> str | None:
    """Why `folder` is not a valid release (one line), or None when it is."""
    try:
        load_release(folder)
    except ReleaseError as error:
        return str(error)
    return None


def load_release(folder: Path) -> FetchedRelease:
    """The release recorded in `folder`'s release.json, after every file's digest has been checked again."""
    folder = Path(folder)
    record_path = folder / RELEASE_RECORD
    refetch = f"fetch it again: dmlconform fetch directml {folder.name}"
    try:
        if record_path.stat().st_size > MAX_RECORD_BYTES:
            raise ReleaseError(f"{record_path}: larger than {MAX_RECORD_BYTES} bytes, so not written by a fetch; "
                               f"{refetch}")
        text = record_path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ReleaseError(f"{folder}: not a release (no {RELEASE_RECORD}); a fetch that finished writes one; "
                           f"{refetch}") from None
    except (OSError, UnicodeDecodeError) as error:
        raise ReleaseError(f"{record_path}: cannot be read ({_reason(error)}); {refetch}") from None
    try:
        record = json.loads(text)
    except json.JSONDecodeError as error:
        raise ReleaseError(f"{record_path}: not JSON ({error.msg} at line {error.lineno}); {refetch}") from None
    release = _release_from_record(record, folder, lambda problem: ReleaseError(f"{record_path}: {problem}; {refetch}"))
    known = KNOWN_DIGESTS.get(release.package_version, {})
    for name, recorded in sorted(release.files.items()):
        path = folder / name
        try:
            actual = _sha256_of(path)
        except FileNotFoundError:
            raise ReleaseError(f"{path}: missing, though {RELEASE_RECORD} lists it; {refetch}") from None
        except OSError as error:
            raise ReleaseError(f"{path}: cannot be read ({_reason(error)}); {refetch}") from None
        if actual != recorded:
            raise ReleaseError(f"{path}: changed since it was fetched (sha256 {actual}, {RELEASE_RECORD} says "
                               f"{recorded}); {refetch}")
        if name in known and actual != known[name]:
            raise ReleaseError(f"{path}: not the file onnxruntime-directml {release.package_version} publishes "
                               f"(sha256 {actual}, published {known[name]}); {refetch}")
    return release


def _release_from_record(record: object, folder: Path, fail: Callable[[str], ReleaseError]) -> FetchedRelease:
    """The release a parsed release.json describes; `fail` makes each refusal."""
    if not isinstance(record, dict):
        raise fail("not a JSON object")
    if record.get("format") != RELEASE_FORMAT:
        raise fail(f"format is {record.get('format')!r}, not {RELEASE_FORMAT!r}")
    fields = ("package_version", "directml_version", "wheel", "wheel_sha256", "fetched_at")
    for field in fields:
        if not isinstance(record.get(field), str) or not record[field]:
            raise fail(f"{field!r} is missing or not a string")
    if record["package_version"] != folder.name:
        raise fail(f"it records onnxruntime-directml {record['package_version']}, but the folder is named "
                   f"{folder.name}")
    files = record.get("files")
    if not isinstance(files, dict) or DIRECTML_DLL not in files:
        raise fail(f"'files' does not list {DIRECTML_DLL}")
    for name, digest in files.items():
        # Only the DLLs a fetch writes: a name from the record is joined to the folder, so nothing else may pass.
        if name not in RELEASE_FILES:
            raise fail(f"'files' names {name!r}, not one of {', '.join(RELEASE_FILES)}")
        if not isinstance(digest, str) or not re.fullmatch(r"[0-9a-f]{64}", digest):
            raise fail(f"the sha256 of {name} is not 64 hex digits")
    return FetchedRelease(package_version=record["package_version"], directml_version=record["directml_version"],
                          folder=folder, files=dict(files), wheel=record["wheel"],
                          wheel_sha256=record["wheel_sha256"], fetched_at=record["fetched_at"])


def releases(root: Path | None = None) -> list[FetchedRelease]:
    """The valid releases in the cache under `root` (default `cache_root()`), newest first."""
    folder = releases_folder(root)
    _remove_stale_staging(folder)
    found = []
    with contextlib.suppress(OSError):
        for entry in folder.iterdir():
            if entry.name.startswith(".") or not entry.is_dir():
                continue
            with contextlib.suppress(ReleaseError):
                found.append(load_release(entry))
    return sorted(found, key=lambda release: version_key(release.package_version), reverse=True)


def _remove_stale_staging(folder: Path) -> None:
    """Staging folders left by fetches that were killed; a recent one may belong to a fetch still running."""
    with contextlib.suppress(OSError):
        for entry in folder.iterdir():
            if entry.name.startswith(STAGING_PREFIX):
                with contextlib.suppress(OSError):
                    if time.time() - entry.lstat().st_mtime > STALE_STAGING_SECONDS:
                        shutil.rmtree(entry)


def pip_command(pip: Sequence[str] | None = None, environ: Mapping[str, str] | None = None) -> list[str]:
    """The command that runs pip: `pip`, else $DMLCONFORM_PIP split like a shell line, else this Python's pip."""
    env = os.environ if environ is None else environ
    if pip:
        return list(pip)
    if env.get("DMLCONFORM_PIP"):
        words = shlex.split(env["DMLCONFORM_PIP"], posix=not ON_WINDOWS)
        return [word[1:-1] if len(word) > 1 and word[0] == word[-1] == '"' else word for word in words]
    return [sys.executable, "-m", "pip"]


#: Python versions whose win_amd64 wheels are asked for, in turn: the DLLs are the same in each, but no one Python
#: version has a wheel of every release (1.9-1.11 stop at 3.9, 1.24 starts at 3.11).
WHEEL_PYTHONS = ("3.11", "3.10", "3.8")


def available_versions(pip: Sequence[str] | None = None, environ: Mapping[str, str] | None = None) -> list[str]:
    """Every onnxruntime-directml release the package index has a win_amd64 wheel of, newest first."""
    env = os.environ if environ is None else environ
    found: set[str] = set()
    for python in WHEEL_PYTHONS:
        try:
            done = subprocess.run([*pip_command(pip, env), "index", "versions", PACKAGE, "--platform", "win_amd64",
                                   "--python-version", python, "--only-binary=:all:"], capture_output=True,
                                  text=True, timeout=120, env=dict(env), check=False)
        except (OSError, subprocess.TimeoutExpired) as error:
            raise FetchError(f"{PACKAGE}: cannot list the package index's releases ({error})") from None
        for line in done.stdout.splitlines():
            if line.startswith("Available versions:"):
                found.update(v.strip() for v in line.partition(":")[2].split(",") if v.strip())
    if not found:
        raise FetchError(f"{PACKAGE}: the package index listed no release (pip index versions; check the network "
                         "and PIP_INDEX_URL)")
    return sorted(found, key=version_key, reverse=True)


def fetch(version: str | None, log: Log, pip: Sequence[str] | None = None,
          environ: Mapping[str, str] | None = None, force: bool = False) -> FetchedRelease:
    """Download onnxruntime-directml `version`'s win_amd64 wheel, and keep its checked DLLs in the cache; a valid
    cached copy is kept unless `force`."""
    env = os.environ if environ is None else environ
    version = DEFAULT_VERSION if version is None else version.strip()
    if not VERSION_PATTERN.fullmatch(version) or len(version) > 64:
        raise FetchError(f"{PACKAGE}=={version}: not a version number (such as {DEFAULT_VERSION}): give one that "
                         f"https://pypi.org/project/{PACKAGE}/#history lists")
    root = releases_folder(cache_root(env))
    target = root / version
    if target.exists():
        problem = release_problem(target)
        if problem is None and not force:
            release = load_release(target)
            log(f"{PACKAGE} {version}: already in the cache at {target} (DirectML {release.directml_version}); "
                "nothing to fetch")
            return release
        log(f"{PACKAGE} {version}: " + (f"the cached copy is not valid ({problem}); fetching it again" if problem
                                         else "fetching it again (--force)"))
    try:
        root.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise FetchError(f"{root}: cannot create the cache folder ({_reason(error)}); set DMLCONFORM_CACHE to a "
                         "writable folder") from None
    _remove_stale_staging(root)
    staging = root / f"{STAGING_PREFIX}{version}-{os.getpid()}-{secrets.token_hex(4)}"
    try:
        staging.mkdir()
        release = _fetch_into(staging, version, log, pip_command(pip, env), env)
        return _publish(staging, target, release, log)
    except OSError as error:
        raise FetchError(f"{PACKAGE}=={version}: cannot write the cache at {root} ({_reason(error)}); free some "
                         "space or set DMLCONFORM_CACHE to a writable folder") from None
    finally:
        shutil.rmtree(staging, ignore_errors=True)  # after a success it has been renamed away


def _fetch_into(staging: Path, version: str, log: Log, pip: list[str], env: Mapping[str, str]) -> FetchedRelease:
    """Download, extract and check into `staging`, and write release.json there."""
    download = staging / "wheel"
    download.mkdir()
    requirement = f"{PACKAGE}=={version}"
    log(f"{requirement}: downloading the win_amd64 wheel with pip")
    for python in WHEEL_PYTHONS:
        try:
            _run_pip(pip, ["download", "--no-deps", "--only-binary=:all:", "--platform", "win_amd64",
                           "--python-version", python, requirement, "-d", str(download)], requirement, log, env)
            break
        except FetchError as error:
            if python == WHEEL_PYTHONS[-1] or "not on the package index" not in str(error):
                raise
    wheel = _the_wheel(download, version, requirement)
    wheel_sha256 = _sha256_of(wheel)
    log(f"{requirement}: {wheel.name} ({wheel.stat().st_size} bytes, sha256 {wheel_sha256})")
    files = _extract(wheel, staging, requirement)
    shutil.rmtree(download)
    known = KNOWN_DIGESTS.get(version, {})
    for name, digest in files.items():
        if name in known and digest != known[name]:
            raise FetchError(f"{wheel.name}: its {name} has sha256 {digest}, not the {known[name]} that {requirement} "
                             "publishes: the package index served another file; check PIP_INDEX_URL and try again")
    try:
        directml = check_directml(staging / DIRECTML_DLL)
        if ONNXRUNTIME_DLL in files:
            check_onnxruntime(staging / ONNXRUNTIME_DLL)
    except DllError as error:
        member = f"{WHEEL_FOLDER}/{Path(error.path).name}"
        raise FetchError(f"{wheel.name}: {member}: {error.problem}") from None
    assert directml.file_version is not None  # check_directml requires one
    log(f"{requirement}: DirectML.dll is DirectML {directml.file_version} (x64), sha256 {files[DIRECTML_DLL]}")
    release = FetchedRelease(package_version=version, directml_version=directml.file_version,
                             folder=staging, files=files, wheel=wheel.name, wheel_sha256=wheel_sha256,
                             fetched_at=datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"))
    record = {"format": RELEASE_FORMAT, "package": PACKAGE, "package_version": version,
              "directml_version": release.directml_version, "files": files, "wheel": release.wheel,
              "wheel_sha256": wheel_sha256, "fetched_at": release.fetched_at}
    write_atomically(staging / RELEASE_RECORD, json.dumps(record, indent=2, sort_keys=True) + "\n")
    return release


def _run_pip(pip: list[str], arguments: list[str], requirement: str, log: Log, env: Mapping[str, str]) -> None:
    """Run pip, passing on its progress lines; a failure is a FetchError with pip's last error line."""
    tail: deque[str] = deque(maxlen=40)
    try:
        process = subprocess.Popen([*pip, *arguments], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                   stderr=subprocess.STDOUT, env=dict(env))
    except OSError as error:
        raise FetchError(f"{requirement}: cannot run pip ({shlex.join(pip)}: {_reason(error)}); install pip or set "
                         "DMLCONFORM_PIP to a command that runs it") from None
    try:
        assert process.stdout is not None
        for raw in process.stdout:
            line = raw.decode("utf-8", "replace").strip()
            if line:
                tail.append(line)
            if line.startswith(("Collecting", "Downloading", "Saved", "File was already downloaded")):
                log(f"pip: {line}")
        status = process.wait()
    except BaseException:
        process.kill()  # a KeyboardInterrupt must not leave pip writing into the staging folder
        process.wait()
        raise
    if status == 0:
        return
    errors = [line for line in tail if line.startswith("ERROR:")]
    last = (errors or list(tail) or ["no output"])[-1]
    if any("No matching distribution" in line or "Could not find a version" in line for line in tail):
        raise FetchError(f"{requirement}: not on the package index (pip: {last})")
    how = f"was killed by signal {-status}" if status < 0 else f"failed (exit status {status})"
    raise FetchError(f"{requirement}: pip download {how} (pip: {last}); check the network and the package index "
                     "(PIP_INDEX_URL), then try again")


def _the_wheel(download: Path, version: str, requirement: str) -> Path:
    wheels = sorted(path for path in download.iterdir() if path.name.endswith(".whl"))
    matching = [path for path in wheels if path.name.startswith(f"onnxruntime_directml-{version}-")
                and "win_amd64" in path.name]
    if len(matching) == 1:
        return matching[0]
    if len(wheels) == 1 and not matching:
        raise FetchError(f"{requirement}: pip downloaded {wheels[0].name}, not a win_amd64 wheel of {requirement}; "
                         "check DMLCONFORM_PIP and the package index (PIP_INDEX_URL)")
    names = ", ".join(path.name for path in wheels) or "nothing"
    raise FetchError(f"{requirement}: pip reported success but downloaded {names}, not one win_amd64 wheel; check "
                     "DMLCONFORM_PIP and the package index (PIP_INDEX_URL)")


def _extract(wheel: Path, staging: Path, requirement: str) -> dict[str, str]:
    """Copy the release's DLLs out of the wheel into `staging`, bounded; file name -> sha256."""
    files = {}
    corrupt = f"{wheel.name}: not a whole wheel ({{}}); the download was cut short or damaged: try again"
    try:
        with zipfile.ZipFile(wheel) as archive:
            for name in RELEASE_FILES:
                member = f"{WHEEL_FOLDER}/{name}"
                try:
                    info = archive.getinfo(_member_path(archive, member))
                except KeyError:
                    if name == DIRECTML_DLL:
                        raise FetchError(f"{wheel.name}: has no {member}, so it is not a DirectML build of "
                                         f"onnxruntime; give a version of {PACKAGE}, not of onnxruntime") from None
                    continue
                if info.file_size > MAX_MEMBER_BYTES:
                    raise FetchError(f"{wheel.name}: {member} declares {info.file_size} bytes, more than the "
                                     f"{MAX_MEMBER_BYTES} a DLL may have here: not a wheel to trust")
                files[name] = _copy_member(archive, info, staging / name, wheel.name)
    except FetchError:
        raise
    # RuntimeError: an encrypted member; NotImplementedError: a compression zipfile lacks.
    except (zipfile.BadZipFile, zlib.error, EOFError, ValueError, NotImplementedError, RuntimeError) as error:
        raise FetchError(corrupt.format(error)) from None
    return files


def _member_path(archive: zipfile.ZipFile, member: str) -> str:
    """Where the wheel keeps `member`: at its root, or (releases 1.9.0-1.11.1) under its .data/purelib folder."""
    if member in archive.NameToInfo:
        return member
    kept = [name for name in archive.NameToInfo
            if name.endswith(f".data/purelib/{member}") and name.count("/") == member.count("/") + 2]
    return kept[0] if len(kept) == 1 else member


def _copy_member(archive: zipfile.ZipFile, info: zipfile.ZipInfo, destination: Path, wheel: str) -> str:
    """Stream one member to `destination` (flushed to disk), counting what it inflates to; its sha256."""
    digest = hashlib.sha256()
    written = 0
    with archive.open(info) as source, open(destination, "wb") as target:
        while chunk := source.read(CHUNK_BYTES):
            written += len(chunk)
            if written > MAX_MEMBER_BYTES:  # the header's size is the member's claim, not a bound
                raise FetchError(f"{wheel}: {info.filename} inflates past {MAX_MEMBER_BYTES} bytes: not a wheel "
                                 "to trust")
            digest.update(chunk)
            target.write(chunk)
        target.flush()
        os.fsync(target.fileno())
    return digest.hexdigest()


def _publish(staging: Path, target: Path, release: FetchedRelease, log: Log) -> FetchedRelease:
    """Rename the finished staging folder to the release's name: the one step that makes it trusted."""
    sync_folder(staging)
    displaced = None
    if target.exists():
        if release_problem(target) is None:  # another fetch of this version finished first
            log(f"{PACKAGE} {release.package_version}: another fetch stored it first at {target}")
            return load_release(target)
        # An invalid copy (found before the fetch): moved aside, then removed.
        displaced = target.with_name(f"{STAGING_PREFIX}replaced-{target.name}-{secrets.token_hex(4)}")
        with contextlib.suppress(FileNotFoundError):
            os.rename(target, displaced)
    try:
        os.rename(staging, target)
    except OSError:
        # Another fetch of this version finished in the meantime: keep its copy if it is valid.
        if target.exists() and release_problem(target) is None:
            log(f"{PACKAGE} {release.package_version}: another fetch stored it first at {target}")
            return load_release(target)
        raise
    finally:
        if displaced is not None:
            shutil.rmtree(displaced, ignore_errors=True)
    sync_folder(target.parent)
    published = load_release(target)
    log(f"{PACKAGE} {release.package_version}: DirectML {published.directml_version} stored at {target}")
    return published


def choose_directml(path: str | None, version: str | None,
                    environ: Mapping[str, str] | None = None) -> DirectMLChoice:
    """The DirectML.dll a run uses: `path` (--directml); else $DMLCONFORM_DIRECTML; else the cached release
    `version` (--directml-version); else, on Windows, the installed onnxruntime-directml's; else the cached
    DEFAULT_VERSION, else the newest cached release."""
    env = os.environ if environ is None else environ
    if path:
        return _chosen(Path(path), "--directml", None)
    if env.get("DMLCONFORM_DIRECTML"):
        return _chosen(Path(env["DMLCONFORM_DIRECTML"]), "DMLCONFORM_DIRECTML", None)
    cache = cache_root(env)
    if version:
        folder = releases_folder(cache) / version
        if not VERSION_PATTERN.fullmatch(version) or not folder.is_dir():
            raise DirectMLNotFound(f"{PACKAGE} {version}: not in the cache ({releases_folder(cache)}): dmlconform "
                                   f"fetch directml {version}")
        problem = release_problem(folder)
        if problem is not None:
            raise DirectMLNotFound(f"{PACKAGE} {version} in the cache is not usable: {problem}")
        release = load_release(folder)
        return _chosen(release.directml_dll, f"cache: {PACKAGE} {version}", release)
    if ON_WINDOWS:
        installed = installed_directml()
        if installed is not None:
            dll, installed_version = installed
            return _chosen(dll, f"{PACKAGE} {installed_version} (installed)", None)
    release = _first_valid(_release_folders(cache, prefer=DEFAULT_VERSION))
    if release is not None:
        return _chosen(release.directml_dll, f"cache: {PACKAGE} {release.package_version}", release)
    raise DirectMLNotFound("no DirectML.dll: run `dmlconform fetch directml` (or give --directml PATH)")


def _release_folders(root: Path | None, prefer: str) -> list[Path]:
    """The cache's release folders, `prefer` first, then newest first: the order `choose_directml` takes them in."""
    folder = releases_folder(root)
    _remove_stale_staging(folder)
    found = []
    with contextlib.suppress(OSError):
        found = [entry for entry in folder.iterdir() if not entry.name.startswith(".") and entry.is_dir()]
    found.sort(key=lambda entry: version_key(entry.name), reverse=True)
    return sorted(found, key=lambda entry: entry.name != prefer)  # stable: the rest stay newest first


def _first_valid(folders: list[Path]) -> FetchedRelease | None:
    """The first folder that holds a valid release. Each is checked (every file's digest) only when it is reached:
    a run chooses one release, and checking the dozens a matrix fetched would cost every start most of a second."""
    for folder in folders:
        with contextlib.suppress(ReleaseError):
            return load_release(folder)
    return None


def installed_directml() -> tuple[Path, str] | None:
    """The installed onnxruntime package's DirectML.dll and onnxruntime-directml's version, found without importing
    onnxruntime (importing it loads the DLL)."""
    try:
        spec = importlib.util.find_spec("onnxruntime")
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    dll = Path(next(iter(spec.submodule_search_locations))) / "capi" / DIRECTML_DLL
    if not dll.is_file():
        return None  # onnxruntime without DirectML (the CPU or CUDA build)
    from importlib import metadata  # only here: the import is a tenth of a second on slow machines

    try:
        installed_version = metadata.version(PACKAGE)
    except metadata.PackageNotFoundError:
        installed_version = "of unknown version"
    return dll, installed_version


def _chosen(dll: Path, origin: str, release: FetchedRelease | None) -> DirectMLChoice:
    try:
        facts = check_directml(dll)
    except DllError as error:
        raise DirectMLNotFound(f"{origin}: {error}") from None
    return DirectMLChoice(dll=dll, origin=origin, facts=facts, release=release)


def _sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as file:
        while chunk := file.read(CHUNK_BYTES):
            digest.update(chunk)
    return digest.hexdigest()


def _reason(error: BaseException) -> str:
    return getattr(error, "strerror", None) or str(error) or type(error).__name__
