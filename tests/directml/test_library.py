"""Where DirectML.dll comes from: fetching a release with a fake pip (DMLCONFORM_PIP) that serves a synthetic wheel,
fails, serves a damaged wheel or hangs until killed; what a failed fetch leaves behind (nothing trusted, no
staging folder); the cache's releases and their re-checked digests; and choose_directml's order and messages."""

from __future__ import annotations

import hashlib
import io
import json
import os
import re
import shlex
import signal
import struct
import sys
import threading
import time
import zipfile
from pathlib import Path

import pytest

from dmlconform.directml import library
from dmlconform.directml.library import (
    DEFAULT_VERSION,
    DirectMLNotFound,
    FetchedRelease,
    FetchError,
    cache_root,
    choose_directml,
    fetch,
    load_release,
    release_problem,
    releases,
    version_key,
)
from tests.directml.pe_files import X86, directml_dll, onnxruntime_dll, providers_shared_dll, wheel

FAKE_PIP = r'''
import json, os, re, shutil, sys, time
arguments = sys.argv[1:]
with open(os.environ["FAKE_PIP_LOG"], "a") as log:
    log.write(json.dumps(arguments) + "\n")
mode = os.environ.get("FAKE_PIP_MODE", "ok")
requirement = next(a for a in arguments if a.startswith("onnxruntime-directml=="))
version = requirement.split("==")[1]
folder = arguments[arguments.index("-d") + 1]
target = os.path.join(folder, f"onnxruntime_directml-{version}-cp311-cp311-win_amd64.whl")
data = open(os.environ["FAKE_PIP_WHEEL"], "rb").read()
print(f"Collecting {requirement}", flush=True)
if mode == "missing":
    print(f"ERROR: Could not find a version that satisfies the requirement {requirement} (from versions: 1.17.0)",
          file=sys.stderr)
    print(f"ERROR: No matching distribution found for {requirement}", file=sys.stderr)
    sys.exit(1)
if mode == "network":
    print("WARNING: Retrying after connection broken", file=sys.stderr)
    print("ERROR: Could not install packages due to an OSError: HTTPSConnectionPool: Max retries exceeded",
          file=sys.stderr)
    sys.exit(1)
if mode == "nowheel":
    sys.exit(0)
if mode in ("truncated", "hang"):
    data = data[: len(data) // 2]
with open(target, "wb") as file:
    file.write(data)
if mode == "hang":
    with open(os.environ["FAKE_PIP_PID"] + ".tmp", "w") as file:
        file.write(str(os.getpid()))
    os.replace(os.environ["FAKE_PIP_PID"] + ".tmp", os.environ["FAKE_PIP_PID"])
    time.sleep(60)
print(f"Saved {target}", flush=True)
print("Successfully downloaded onnxruntime-directml", flush=True)
'''
VERSION = "1.99.0"


class Cache:
    """A cache folder, a fake pip and the wheel it serves, and the environment that names them."""

    def __init__(self, tmp_path: Path) -> None:
        self.root = tmp_path / "cache"
        self.wheel = tmp_path / "served.whl"
        self.pip_log = tmp_path / "pip-calls.jsonl"
        self.pid_file = tmp_path / "pip.pid"
        script = tmp_path / "fake_pip.py"
        script.write_text(FAKE_PIP)
        self.serve(wheel())
        self.environ = {**os.environ, "DMLCONFORM_CACHE": str(self.root),
                        "DMLCONFORM_PIP": f"{shlex.quote(sys.executable)} {shlex.quote(str(script))}",
                        "FAKE_PIP_WHEEL": str(self.wheel), "FAKE_PIP_LOG": str(self.pip_log),
                        "FAKE_PIP_PID": str(self.pid_file)}
        self.environ.pop("DMLCONFORM_DIRECTML", None)
        self.logged: list[str] = []

    def serve(self, data: bytes) -> None:
        self.wheel.write_bytes(data)

    def fetch(self, version: str | None = VERSION, mode: str = "ok") -> FetchedRelease:
        return fetch(version, self.logged.append, environ={**self.environ, "FAKE_PIP_MODE": mode})

    def pip_calls(self) -> list[list[str]]:
        return [json.loads(line) for line in self.pip_log.read_text().splitlines()] if self.pip_log.exists() else []

    def folder_contents(self) -> list[str]:
        """What the cache's directml/ folder holds, hidden folders (staging) included."""
        folder = self.root / "directml"
        return sorted(entry.name for entry in folder.iterdir()) if folder.exists() else []


@pytest.fixture
def cache(tmp_path: Path) -> Cache:
    return Cache(tmp_path)


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def test_fetch_keeps_the_checked_dlls_and_records_versions_and_digests(cache: Cache) -> None:
    release = cache.fetch()
    folder = cache.root / "directml" / VERSION
    assert release == FetchedRelease(
        package_version=VERSION, directml_version="1.15.4.0", folder=folder,
        files={"DirectML.dll": sha256(directml_dll()), "onnxruntime.dll": sha256(onnxruntime_dll()),
               "onnxruntime_providers_shared.dll": sha256(providers_shared_dll())},
        wheel=f"onnxruntime_directml-{VERSION}-cp311-cp311-win_amd64.whl", wheel_sha256=sha256(cache.wheel.read_bytes()),
        fetched_at=release.fetched_at)
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", release.fetched_at)
    assert release.directml_dll.read_bytes() == directml_dll() and release.onnxruntime_dll == folder / "onnxruntime.dll"
    # The wheel is not kept, and nothing but the release is left in the cache.
    assert sorted(p.name for p in folder.iterdir()) == ["DirectML.dll", "onnxruntime.dll",
                                                       "onnxruntime_providers_shared.dll", "release.json"]
    assert cache.folder_contents() == [VERSION]
    record = json.loads((folder / "release.json").read_text())
    assert {key: record[key] for key in ("package_version", "directml_version", "files", "wheel", "wheel_sha256",
                                         "fetched_at")} == {
        "package_version": VERSION, "directml_version": "1.15.4.0", "files": release.files, "wheel": release.wheel,
        "wheel_sha256": release.wheel_sha256, "fetched_at": release.fetched_at}
    [arguments] = cache.pip_calls()
    assert arguments[:-1] == ["download", "--no-deps", "--only-binary=:all:", "--platform", "win_amd64",
                              "--python-version", "3.11", f"onnxruntime-directml=={VERSION}", "-d"]
    assert Path(arguments[-1]).parent.name.startswith(".staging-")  # downloaded inside the staging folder
    assert load_release(folder) == release and releases(cache.root) == [release]


def test_a_wheel_without_the_onnxruntime_dlls_gives_a_release_without_them(cache: Cache) -> None:
    cache.serve(wheel({"onnxruntime/capi/DirectML.dll": directml_dll()}))
    release = cache.fetch()
    assert release.files.keys() == {"DirectML.dll"} and release.onnxruntime_dll is None
    assert release.providers_shared_dll is None and load_release(release.folder) == release


def test_the_oldest_releases_keep_their_dlls_under_the_wheels_data_folder(cache: Cache) -> None:
    """onnxruntime-directml 1.9.0-1.11.1 put onnxruntime/capi/ under onnxruntime_directml-V.data/purelib/."""
    data = f"onnxruntime_directml-{VERSION}.data/purelib/onnxruntime/capi"
    cache.serve(wheel({f"{data}/DirectML.dll": directml_dll(), f"{data}/onnxruntime.dll": onnxruntime_dll()}))
    release = cache.fetch()
    assert release.files.keys() == {"DirectML.dll", "onnxruntime.dll"} and release.directml_version == "1.15.4.0"


def test_fetching_a_version_already_in_the_cache_does_nothing(cache: Cache) -> None:
    first = cache.fetch()
    assert cache.fetch() == first
    assert len(cache.pip_calls()) == 1
    assert cache.logged[-1] == (f"onnxruntime-directml {VERSION}: already in the cache at {first.folder} "
                                "(DirectML 1.15.4.0); nothing to fetch")


def damaged_member(data: bytes) -> bytes:
    """The wheel with a byte of DirectML.dll's compressed data flipped (its CRC no longer agrees)."""
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        info = archive.getinfo("onnxruntime/capi/DirectML.dll")
    start = info.header_offset + 30 + len(info.filename.encode()) + len(info.extra)
    damaged = bytearray(data)
    damaged[start + info.compress_size // 2] ^= 0xFF
    return bytes(damaged)


def declared_size(data: bytes, size: int) -> bytes:
    """The wheel with DirectML.dll's uncompressed size in its central directory record rewritten."""
    name = b"onnxruntime/capi/DirectML.dll"
    record = data.index(b"PK\x01\x02")
    while data[record + 46:record + 46 + struct.unpack_from("<H", data, record + 28)[0]] != name:
        record = data.index(b"PK\x01\x02", record + 4)
    return data[:record + 24] + struct.pack("<I", size) + data[record + 28:]


@pytest.mark.parametrize(("mode", "served", "expected"), [
    ("missing", None, f"onnxruntime-directml=={VERSION}: not on the package index (pip: ERROR: No matching "
                      f"distribution found for onnxruntime-directml=={VERSION})"),
    ("network", None, f"onnxruntime-directml=={VERSION}: pip download failed (exit status 1) (pip: ERROR: Could not "
                      "install packages due to an OSError: HTTPSConnectionPool: Max retries exceeded); check the "
                      "network and the package index (PIP_INDEX_URL), then try again"),
    ("nowheel", None, "pip reported success but downloaded nothing, not one win_amd64 wheel"),
    ("truncated", None, "not a whole wheel (File is not a zip file); the download was cut short or damaged"),
    ("ok", damaged_member(wheel()), "not a whole wheel (Bad CRC-32 for file 'onnxruntime/capi/DirectML.dll')"),
    ("ok", declared_size(wheel(), 300 << 20), "onnxruntime/capi/DirectML.dll declares 314572800 bytes, more than "
                                              "the 268435456 a DLL may have here"),
    ("ok", wheel({"onnxruntime/capi/onnxruntime.dll": onnxruntime_dll()}),
     "has no onnxruntime/capi/DirectML.dll, so it is not a DirectML build of onnxruntime"),
    ("ok", wheel({"onnxruntime/capi/DirectML.dll": directml_dll(machine=X86, pe32_plus=False)}),
     f"onnxruntime_directml-{VERSION}-cp311-cp311-win_amd64.whl: onnxruntime/capi/DirectML.dll: a 32-bit (x86) DLL; "
     "DirectML needs the 64-bit (x64) DirectML.dll"),
    ("ok", wheel({"onnxruntime/capi/DirectML.dll": directml_dll(version=None)}),
     "onnxruntime/capi/DirectML.dll: no file version"),
    ("ok", wheel({"onnxruntime/capi/DirectML.dll": directml_dll()[:1500]}),
     "onnxruntime/capi/DirectML.dll: truncated: section '.rsrc' ends at byte 2048 of 1500; not a usable DirectML.dll"),
    ("ok", wheel({"onnxruntime/capi/DirectML.dll": directml_dll(), "onnxruntime/capi/onnxruntime.dll": directml_dll()}),
     "onnxruntime/capi/onnxruntime.dll: not ONNX Runtime: it does not export OrtGetApiBase"),
])
def test_a_failed_fetch_says_why_in_one_line_and_leaves_nothing(cache: Cache, mode: str, served: bytes | None,
                                                                expected: str) -> None:
    if served is not None:
        cache.serve(served)
    with pytest.raises(FetchError) as caught:
        cache.fetch(mode=mode)
    assert expected in str(caught.value) and "\n" not in str(caught.value), str(caught.value)
    assert cache.folder_contents() == [] and releases(cache.root) == []


def test_a_file_that_disagrees_with_a_known_digest_is_refused(cache: Cache, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(library.KNOWN_DIGESTS, VERSION, {"DirectML.dll": "0" * 64})
    with pytest.raises(FetchError, match=r"its DirectML.dll has sha256 \w+, not the 0{64} that onnxruntime-directml"):
        cache.fetch()
    assert cache.folder_contents() == []


def test_pip_that_cannot_be_run_is_a_fetch_error(cache: Cache, tmp_path: Path) -> None:
    cache.environ["DMLCONFORM_PIP"] = str(tmp_path / "no-such-pip")
    with pytest.raises(FetchError, match=r"cannot run pip \(.*no-such-pip: No such file or directory\); install pip "
                                         "or set DMLCONFORM_PIP"):
        cache.fetch()
    assert cache.folder_contents() == []


def test_a_version_that_is_not_one_is_refused_before_pip_runs(cache: Cache) -> None:
    for bad in ("../../etc", "1.2/3", "latest", ""):
        with pytest.raises(FetchError, match="not a version number"):
            cache.fetch(bad)
    assert cache.pip_calls() == []


@pytest.mark.skipif(os.name == "nt", reason="kills the fake pip with SIGKILL")
def test_pip_killed_mid_download_leaves_nothing(cache: Cache) -> None:
    outcome: list[BaseException] = []

    def run() -> None:
        try:
            cache.fetch(mode="hang")
        except BaseException as error:
            outcome.append(error)

    thread = threading.Thread(target=run)
    thread.start()
    deadline = time.monotonic() + 30
    while not cache.pid_file.exists() and time.monotonic() < deadline:
        time.sleep(0.01)
    staging = [name for name in cache.folder_contents() if name.startswith(".staging-")]
    assert len(staging) == 1  # the half-downloaded wheel is there, in a folder no reader trusts
    assert releases(cache.root) == []
    os.kill(int(cache.pid_file.read_text()), signal.SIGKILL)  # the fake pip this test started
    thread.join(30)
    assert isinstance(outcome[0], FetchError)
    assert f"onnxruntime-directml=={VERSION}: pip download was killed by signal {signal.SIGKILL}" in str(outcome[0])
    assert cache.folder_contents() == []


@pytest.mark.parametrize("at", ["downloading", "sha256", "is DirectML"])
def test_an_interrupted_fetch_leaves_nothing(cache: Cache, at: str) -> None:
    def interrupt(line: str) -> None:
        if at in line:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        fetch(VERSION, interrupt, environ=cache.environ)
    assert cache.folder_contents() == []
    assert cache.fetch().directml_version == "1.15.4.0"  # and the next fetch starts afresh


def tampered(release: FetchedRelease, how: str) -> str:
    """Damage the release as `how` says; the words its problem must contain."""
    dll = release.directml_dll
    record = release.folder / "release.json"
    if how == "appended":
        dll.write_bytes(dll.read_bytes() + b"\0")
        return f"{dll}: changed since it was fetched (sha256 "
    if how == "truncated":
        dll.write_bytes(dll.read_bytes()[:100])
        return f"{dll}: changed since it was fetched"
    if how == "deleted":
        dll.unlink()
        return f"{dll}: missing, though release.json lists it"
    if how == "no record":
        record.unlink()
        return f"{release.folder}: not a release (no release.json)"
    if how == "garbage record":
        record.write_text("{not json")
        return f"{record}: not JSON (Expecting property name enclosed in double quotes at line 1)"
    if how == "record names another file":
        document = json.loads(record.read_text())
        document["files"]["../../../etc/passwd"] = "0" * 64
        record.write_text(json.dumps(document))
        return "'files' names '../../../etc/passwd', not one of DirectML.dll"
    if how == "record of another version":
        document = json.loads(record.read_text())
        document["package_version"] = "1.0.0"
        record.write_text(json.dumps(document))
        return f"it records onnxruntime-directml 1.0.0, but the folder is named {VERSION}"
    raise AssertionError(how)


@pytest.mark.parametrize("how", ["appended", "truncated", "deleted", "no record", "garbage record",
                                 "record names another file", "record of another version"])
def test_a_release_damaged_after_fetch_is_not_valid_and_says_why(cache: Cache, how: str) -> None:
    release = cache.fetch()
    expected = tampered(release, how)
    problem = release_problem(release.folder)
    assert problem is not None and expected in problem and "\n" not in problem, problem
    assert problem.endswith(f"fetch it again: dmlconform fetch directml {VERSION}")
    assert releases(cache.root) == []
    with pytest.raises(DirectMLNotFound, match=r"^no DirectML.dll: run `dmlconform fetch directml`"):
        choose_directml(None, None, cache.environ)
    with pytest.raises(DirectMLNotFound, match=f"onnxruntime-directml {VERSION} in the cache is not usable: "):
        choose_directml(None, VERSION, cache.environ)
    # Fetching it again replaces it.
    again = cache.fetch()
    assert any("the cached copy is not valid" in line for line in cache.logged)
    assert release_problem(again.folder) is None and cache.folder_contents() == [VERSION]


def test_readers_ignore_staging_folders_and_remove_only_stale_ones(cache: Cache) -> None:
    cache.fetch()
    stale = cache.root / "directml" / ".staging-1.0.0-1-dead"
    recent = cache.root / "directml" / ".staging-1.0.1-2-busy"
    for folder in (stale, recent):
        folder.mkdir()
        (folder / "DirectML.dll").write_bytes(directml_dll())
    hour_ago = time.time() - 2 * library.STALE_STAGING_SECONDS
    os.utime(stale, (hour_ago, hour_ago))
    assert [r.package_version for r in releases(cache.root)] == [VERSION]
    assert not stale.exists() and recent.exists()  # a recent one may be a fetch still running


def test_versions_sort_numerically_newest_first(cache: Cache) -> None:
    for version in ("1.9.0", "1.10.0", "1.10.0rc1", "1.2.0"):
        cache.fetch(version)
    assert [r.package_version for r in releases(cache.root)] == ["1.10.0", "1.10.0rc1", "1.9.0", "1.2.0"]
    assert sorted(["1.24.4", "1.24.10", "1.3", "1.24.4.post1", "1.24"], key=version_key) == [
        "1.3", "1.24", "1.24.4", "1.24.4.post1", "1.24.10"]


def test_cache_root_follows_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(library, "ON_WINDOWS", False)
    assert cache_root({"DMLCONFORM_CACHE": "/c", "XDG_CACHE_HOME": "/x"}) == Path("/c")
    assert cache_root({"XDG_CACHE_HOME": "/x", "HOME": "/h"}) == Path("/x/dmlconform")
    assert cache_root({"XDG_CACHE_HOME": "relative", "HOME": "/h"}) == Path("/h/.cache/dmlconform")
    assert cache_root({"HOME": "/h"}) == Path("/h/.cache/dmlconform")
    monkeypatch.setattr(library, "ON_WINDOWS", True)
    assert cache_root({"LOCALAPPDATA": "/l", "XDG_CACHE_HOME": "/x"}) == Path("/l/dmlconform/cache")
    assert cache_root({"DMLCONFORM_CACHE": "/c", "LOCALAPPDATA": "/l"}) == Path("/c")


# choose_directml: the path given, DMLCONFORM_DIRECTML, the version given, the installed package (Windows), the
# cache's DEFAULT_VERSION, the newest cached release.

def test_choose_prefers_the_path_given_then_the_environment(cache: Cache, tmp_path: Path) -> None:
    cache.fetch()
    given = tmp_path / "given" / "DirectML.dll"
    given.parent.mkdir()
    given.write_bytes(directml_dll())
    from_env = tmp_path / "env.dll"
    from_env.write_bytes(directml_dll())
    environ = {**cache.environ, "DMLCONFORM_DIRECTML": str(from_env)}
    choice = choose_directml(str(given), VERSION, environ)
    assert (choice.dll, choice.origin, choice.release) == (given, "--directml", None)
    assert choice.facts.file_version == "1.15.4.0"
    choice = choose_directml(None, VERSION, environ)
    assert (choice.dll, choice.origin, choice.release) == (from_env, "DMLCONFORM_DIRECTML", None)


def test_choose_checks_the_dll_it_is_given(cache: Cache, tmp_path: Path) -> None:
    wrong = tmp_path / "DirectML.dll"
    wrong.write_bytes(directml_dll(machine=X86, pe32_plus=False))
    with pytest.raises(DirectMLNotFound, match=rf"^--directml: {re.escape(str(wrong))}: a 32-bit \(x86\) DLL"):
        choose_directml(str(wrong), None, cache.environ)
    environ = {**cache.environ, "DMLCONFORM_DIRECTML": str(tmp_path / "absent.dll")}
    with pytest.raises(DirectMLNotFound, match=r"^DMLCONFORM_DIRECTML: .*absent.dll: no such file: check the path$"):
        choose_directml(None, None, environ)


def test_choose_a_cached_version_or_say_how_to_fetch_it(cache: Cache) -> None:
    cache.fetch("1.98.0")
    cache.fetch()
    choice = choose_directml(None, "1.98.0", cache.environ)
    assert choice.origin == "cache: onnxruntime-directml 1.98.0" and choice.release is not None
    assert choice.dll == cache.root / "directml" / "1.98.0" / "DirectML.dll"
    with pytest.raises(DirectMLNotFound, match=r"^onnxruntime-directml 1\.97\.0: not in the cache \(.*\): dmlconform "
                                               r"fetch directml 1\.97\.0$"):
        choose_directml(None, "1.97.0", cache.environ)
    with pytest.raises(DirectMLNotFound, match="not in the cache"):
        choose_directml(None, "../1.98.0", cache.environ)


def test_choose_prefers_the_default_version_then_the_newest(cache: Cache, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(library, "ON_WINDOWS", False)
    cache.fetch("1.98.0")
    cache.fetch("1.99.0")
    assert choose_directml(None, None, cache.environ).origin == "cache: onnxruntime-directml 1.99.0"
    monkeypatch.setattr(library, "DEFAULT_VERSION", "1.98.0")
    choice = choose_directml(None, None, cache.environ)
    assert choice.origin == "cache: onnxruntime-directml 1.98.0" and choice.release.package_version == "1.98.0"


def test_choose_checks_only_the_release_it_takes_and_passes_over_a_broken_one(cache: Cache,
                                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """Each start of a program chooses DirectML.dll: checking every cached release's digests (dozens after a matrix)
    cost most of a second there. The default is checked first; a broken one is passed over for the newest valid."""
    monkeypatch.setattr(library, "ON_WINDOWS", False)
    for version in ("1.97.0", "1.98.0", "1.99.0"):
        cache.fetch(version)
    monkeypatch.setattr(library, "DEFAULT_VERSION", "1.98.0")
    hashed: list[Path] = []
    original = library._sha256_of
    monkeypatch.setattr(library, "_sha256_of", lambda path: (hashed.append(path), original(path))[1])
    assert choose_directml(None, None, cache.environ).origin == "cache: onnxruntime-directml 1.98.0"
    assert {path.parent.name for path in hashed} == {"1.98.0"}
    (cache.root / "directml" / "1.98.0" / "DirectML.dll").write_bytes(b"damaged")
    hashed.clear()
    assert choose_directml(None, None, cache.environ).origin == "cache: onnxruntime-directml 1.99.0"
    assert {path.parent.name for path in hashed} == {"1.98.0", "1.99.0"}  # 1.97.0 never read


def test_choose_with_nothing_anywhere_says_how_to_get_directml(cache: Cache, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(library, "ON_WINDOWS", False)
    with pytest.raises(DirectMLNotFound) as caught:
        choose_directml(None, None, cache.environ)
    assert str(caught.value) == "no DirectML.dll: run `dmlconform fetch directml` (or give --directml PATH)"


def installed_package(site: Path, dll: bytes | None, version: str = "1.23.0") -> None:
    """An onnxruntime package as onnxruntime-directml installs it, on sys.path: importing it would fail loudly."""
    package = site / "onnxruntime"
    (package / "capi").mkdir(parents=True)
    (package / "__init__.py").write_text("raise ImportError('onnxruntime must not be imported to find its DLL')\n")
    if dll is not None:
        (package / "capi" / "DirectML.dll").write_bytes(dll)
    metadata = site / f"onnxruntime_directml-{version}.dist-info"
    metadata.mkdir()
    (metadata / "METADATA").write_text(f"Metadata-Version: 2.1\nName: onnxruntime-directml\nVersion: {version}\n")


def test_choose_on_windows_takes_the_installed_package_before_the_cache(cache: Cache, tmp_path: Path,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    cache.fetch()
    installed_package(tmp_path / "site", directml_dll())
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    monkeypatch.delitem(sys.modules, "onnxruntime", raising=False)
    monkeypatch.setattr(library, "ON_WINDOWS", True)
    choice = choose_directml(None, None, cache.environ)
    assert choice.origin == "onnxruntime-directml 1.23.0 (installed)" and choice.release is None
    assert choice.dll == tmp_path / "site" / "onnxruntime" / "capi" / "DirectML.dll"
    assert "onnxruntime" not in sys.modules
    # The version asked for still comes first; elsewhere than Windows the installed package is not used.
    assert choose_directml(None, VERSION, cache.environ).origin == f"cache: onnxruntime-directml {VERSION}"
    monkeypatch.setattr(library, "ON_WINDOWS", False)
    assert choose_directml(None, None, cache.environ).origin == f"cache: onnxruntime-directml {VERSION}"


def test_choose_on_windows_refuses_a_broken_installed_dll(cache: Cache, tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    installed_package(tmp_path / "site", directml_dll(version=None))
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    monkeypatch.delitem(sys.modules, "onnxruntime", raising=False)
    monkeypatch.setattr(library, "ON_WINDOWS", True)
    with pytest.raises(DirectMLNotFound, match=r"^onnxruntime-directml 1\.23\.0 \(installed\): .*no file version"):
        choose_directml(None, None, cache.environ)


def test_choose_on_windows_skips_an_onnxruntime_without_directml(cache: Cache, tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    installed_package(tmp_path / "site", None)
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    monkeypatch.delitem(sys.modules, "onnxruntime", raising=False)
    monkeypatch.setattr(library, "ON_WINDOWS", True)
    with pytest.raises(DirectMLNotFound, match=r"^no DirectML\.dll: run"):
        choose_directml(None, None, cache.environ)
    cache.fetch()
    assert choose_directml(None, None, cache.environ).origin == f"cache: onnxruntime-directml {VERSION}"


def test_the_default_version_is_the_one_with_known_digests() -> None:
    assert DEFAULT_VERSION in library.KNOWN_DIGESTS
    assert set(library.KNOWN_DIGESTS[DEFAULT_VERSION]) == set(library.RELEASE_FILES)
