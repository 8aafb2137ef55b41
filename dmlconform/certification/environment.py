"""The environment record of a package: which dmlconform (version and a digest of its source), Python, packages
and OS ran the certification, the backend's handshake, and the digests of the files that make up a harness."""

from __future__ import annotations

import hashlib
import platform
import sys
from functools import cache
from importlib import metadata
from pathlib import Path
from typing import Any

from dmlconform import __version__
from dmlconform.backend_info import BackendInfo
from dmlconform.certification.checksums import file_sha256
from dmlconform.results.document import backend_json

ENVIRONMENT_FORMAT = "dmlconform-environment/v1"
_PACKAGE = Path(__file__).resolve().parents[1]
#: The distributions whose versions are recorded (those installed); importing none of them.
_DISTRIBUTIONS = ("dmlconform", "numpy", "click", "rich", "PyYAML", "onnx", "onnxruntime", "onnxruntime-directml",
                  "onnxruntime-gpu", "torch")


@cache
def tool_source_digest() -> str:
    """SHA-256 over dmlconform's own source (see `source_digest`), once per process."""
    return source_digest(_PACKAGE)


def source_digest(package: Path) -> str:
    """SHA-256 over every .py and .yaml file of a package folder (the generator's descriptions included; the
    suites are the suite manifest's business), by path. Equal for a wheel and a checkout of the same commit; any
    edit to the tool changes it."""
    digest = hashlib.sha256()
    files = sorted(p for p in package.rglob("*") if p.suffix in (".py", ".yaml") and p.is_file()
                   and not {"__pycache__", "test_vectors"} & set(p.relative_to(package).parts))
    for path in files:
        digest.update(path.relative_to(package).as_posix().encode() + b"\0")
        digest.update(hashlib.sha256(path.read_bytes()).digest())
    return digest.hexdigest()


def tool_record() -> dict[str, str]:
    return {"name": "dmlconform", "version": __version__, "source_sha256": tool_source_digest()}


def package_versions() -> dict[str, str]:
    versions = {}
    for name in _DISTRIBUTIONS:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return versions


def file_digests(paths: list[Path]) -> dict[str, str]:
    """Path (as given, resolved) -> SHA-256, or why it could not be read."""
    digests = {}
    for path in paths:
        try:
            digests[str(path.resolve())] = file_sha256(path)
        except OSError as exc:
            digests[str(path)] = f"unreadable ({exc.strerror or exc})"
    return digests


def environment_record(info: BackendInfo, harness_files: dict[str, str], command: list[str]) -> dict[str, Any]:
    uname = platform.uname()
    return {
        "format": ENVIRONMENT_FORMAT,
        "tool": tool_record(),
        "command": command,
        "python": {"version": platform.python_version(), "implementation": platform.python_implementation(),
                   "executable": sys.executable},
        "packages": package_versions(),
        "os": {"system": uname.system, "release": uname.release, "version": uname.version, "machine": uname.machine,
               "platform": platform.platform()},
        "backend": backend_json(info),
        "harness_files": harness_files,
    }
