"""`dmlconform doctor`: what each backend needs, what was found here, and the one command that fixes each missing
piece; then a live handshake with the DirectML harness on every device there is. Plain data (`Finding`s) for the
console table and `--json`.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import os
import platform
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass
from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from dmlconform.directml.wine import Wine


class State(Enum):
    OK = "ok"
    MISSING = "missing"  # not there: `fix` says how to get it
    BROKEN = "broken"  # there, but unusable: `fix` says what to do
    OPTIONAL = "optional"  # not there, and only one backend or check wants it
    INFO = "info"


@dataclass(frozen=True)
class Finding:
    area: str  # python, onnxruntime, cuda, programs, wine, vulkan, directml, handshake
    item: str
    state: State
    found: str
    fix: str = ""
    #: Whether it bears on the real DirectML (the exit status counts only these handshakes).
    directml_path: bool = False

    def to_json(self) -> dict[str, object]:
        document = asdict(self)
        document["state"] = self.state.value
        return document


@dataclass(frozen=True)
class Diagnosis:
    findings: list[Finding]
    #: Whether the harness and host were started (not with --no-handshake).
    live: bool = True

    @property
    def directml_works(self) -> bool:
        """Some DirectML path answered: a harness or host handshake, or onnxruntime-directml in this process."""
        return any(f.directml_path and f.state is State.OK for f in self.findings)

    @property
    def problems(self) -> list[Finding]:
        """The rows marked missing or broken (optional pieces are not among them)."""
        return [f for f in self.findings if f.state in (State.MISSING, State.BROKEN)]

    @property
    def passed(self) -> bool:
        """doctor's exit status 0: some DirectML path answered; without the handshake, nothing is missing or broken
        (whether the device then comes up is what the handshake would have said)."""
        return self.directml_works or (not self.live and not self.problems)

    def to_json(self) -> dict[str, object]:
        return {"format": "dmlconform-doctor/v1", "directml_works": self.directml_works, "handshake": self.live,
                "passed": self.passed, "findings": [f.to_json() for f in self.findings]}


def _version(distribution: str) -> str | None:
    try:
        return importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        return None


def _python() -> Iterator[Finding]:
    from dmlconform import __version__

    yield Finding("python", "dmlconform", State.INFO, f"{__version__} on Python {platform.python_version()} "
                  f"({sys.executable}), {platform.system()} {platform.machine()}")
    for name, why in (("numpy", "every backend"), ("click", "the command line"), ("rich", "reports"),
                      ("pyyaml", "suites"), ("onnx", "the onnxruntime backend")):
        found = _version(name)
        yield Finding("python", name, State.OK if found else State.MISSING, found or f"not installed ({why})",
                      "" if found else f"pip install {name}")
    torch = _version("torch")
    yield Finding("python", "torch", State.OK if torch else State.OPTIONAL, torch or "not installed (the torch "
                  "backend and the reference's cross-checks)", "" if torch else 'pip install "dmlconform[torch]"')


def _onnxruntime() -> Iterator[Finding]:
    distributions = [d for d in ("onnxruntime", "onnxruntime-directml", "onnxruntime-gpu") if _version(d)]
    if not distributions:
        fix = "pip install onnxruntime-directml" if sys.platform == "win32" else "pip install onnxruntime"
        yield Finding("onnxruntime", "onnxruntime", State.MISSING, "not installed", fix)
        return
    try:
        import onnxruntime

        providers = onnxruntime.get_available_providers()
    except Exception as exc:  # a broken install raises anything
        yield Finding("onnxruntime", "onnxruntime", State.BROKEN, f"{', '.join(distributions)}: cannot be imported: "
                      f"{type(exc).__name__}: {exc}", "pip install --force-reinstall " + distributions[0])
        return
    yield Finding("onnxruntime", "onnxruntime", State.OK,
                  f"{', '.join(f'{d} {_version(d)}' for d in distributions)}; providers: {', '.join(providers)}")
    dml = "DmlExecutionProvider" in providers
    if sys.platform == "win32":
        yield Finding("onnxruntime", "DirectML EP in this process", State.OK if dml else State.MISSING,
                      "DmlExecutionProvider" if dml else "no DmlExecutionProvider",
                      "" if dml else "pip install onnxruntime-directml (instead of onnxruntime)", directml_path=dml)
    else:
        yield Finding("onnxruntime", "DirectML EP", State.INFO, "not in this process (no onnxruntime-directml off "
                      "Windows): --ep dml runs the packaged ONNX Runtime host under Wine")


def _cuda() -> Iterator[Finding]:
    smi = shutil.which("nvidia-smi")
    if smi is None:
        yield Finding("cuda", "NVIDIA GPU", State.OPTIONAL, "no nvidia-smi (no NVIDIA driver here)",
                      "install NVIDIA's driver for --ep cuda, --device cuda, or DirectML on an NVIDIA GPU")
        return
    try:
        done = subprocess.run([smi, "--query-gpu=name,driver_version,memory.total", "--format=csv,noheader"],
                              capture_output=True, text=True, timeout=30, check=False)
        gpus = [line.strip() for line in done.stdout.splitlines() if line.strip()]
    except (OSError, subprocess.TimeoutExpired) as exc:
        gpus, done = [], None
        yield Finding("cuda", "NVIDIA GPU", State.BROKEN, f"nvidia-smi failed: {exc}", "check the NVIDIA driver")
        return
    state = State.OK if gpus else State.BROKEN
    yield Finding("cuda", "NVIDIA GPU", state, "; ".join(gpus) or f"nvidia-smi found none: {done.stderr.strip()}",
                  "" if gpus else "check the NVIDIA driver (nvidia-smi)")


def _programs() -> Iterator[Finding]:
    from dmlconform.directml.programs import HARNESS, HOST, ProgramMissing, program_build

    build = program_build()
    for name in (HARNESS, HOST):
        try:
            path = build.path(name)
        except ProgramMissing as exc:
            yield Finding("programs", name, State.MISSING, str(exc).split("; ")[0],
                          "apt-get install g++-mingw-w64-x86-64-win32, then pip install --force-reinstall "
                          "--no-binary dmlconform dmlconform (or pip install . in a checkout)")
            continue
        digest = build.digests.get(name, "")
        yield Finding("programs", name, State.OK, f"{path} ({build.origin}"
                      + (f"; {build.compiler}" if build.compiler else "") + (f"; sha256 {digest}" if digest else "")
                      + ")")


def _wine() -> Iterator[Finding]:
    from dmlconform.directml.wine import (
        DISPLAY_RECORD,
        XVFB_HINT,
        WineUnavailable,
        find_wine,
        live_display,
        wine_prefix,
    )

    try:
        wine = find_wine()
    except WineUnavailable as exc:
        yield Finding("wine", "Wine", State.MISSING, str(exc).split(": ")[0], "apt-get install wine64 "
                      "(Debian/Ubuntu)")
        return
    yield Finding("wine", "Wine", State.OK, f"{wine.version} ({wine.loader})")
    yield _prefix_finding(wine)
    prefix = wine_prefix(wine)
    live = live_display(prefix / DISPLAY_RECORD)
    if live:
        yield Finding("wine", "X display", State.OK, f"the prefix's Xvfb on {live}")
    elif shutil.which("Xvfb"):
        yield Finding("wine", "X display", State.OK, f"Xvfb ({shutil.which('Xvfb')}): the prefix's own is started on "
                      "first use and kept running")
    elif os.environ.get("DISPLAY"):
        yield Finding("wine", "X display", State.OK, f"no Xvfb; DISPLAY={os.environ['DISPLAY']} is used")
    else:
        yield Finding("wine", "X display", State.MISSING, "DISPLAY is unset and there is no Xvfb", XVFB_HINT)


def _prefix_finding(wine: Wine, before: Finding | None = None) -> Finding:
    """The Wine prefix's row; `before`, the row taken before the handshakes, which make (or remake) the prefix: then
    the row says what they did rather than what was true before them."""
    from dmlconform.directml.wine import prefix_problem, wine_prefix

    prefix = wine_prefix(wine)
    problem = prefix_problem(prefix, wine)
    if problem:
        return Finding("wine", "prefix", State.INFO, f"{prefix}: {problem}; made (or remade) on the next run")
    if before is not None and before.state is not State.OK:
        was = before.found.removeprefix(f"{prefix}: ").removesuffix("; made (or remade) on the next run")
        return Finding("wine", "prefix", State.OK, f"{prefix} (made by this check: {was})")
    return Finding("wine", "prefix", State.OK, f"{prefix}")


def _prefix_again(before: Finding) -> Finding:
    from dmlconform.directml.wine import WineUnavailable, find_wine

    try:
        return _prefix_finding(find_wine(), before)
    except WineUnavailable:
        return before


def _vulkan_devices(manifest: str) -> list[str] | None:
    """The devices one Vulkan driver finds (vulkaninfo with that driver alone); None without vulkaninfo."""
    vulkaninfo = shutil.which("vulkaninfo")
    if vulkaninfo is None:
        return None
    try:
        done = subprocess.run([vulkaninfo, "--summary"], capture_output=True, text=True, timeout=60, check=False,
                              env={**os.environ, "VK_ICD_FILENAMES": manifest, "VK_DRIVER_FILES": manifest})
    except (OSError, subprocess.TimeoutExpired):
        return None
    return [line.split("=", 1)[1].strip() for line in done.stdout.splitlines()
            if line.strip().startswith("deviceName")]


def _vulkan(devices: dict[str, list[str] | None]) -> Iterator[Finding]:
    from dmlconform.directml.wine import vulkan_drivers

    drivers = vulkan_drivers()
    if not drivers:
        yield Finding("vulkan", "drivers", State.MISSING, "no Vulkan driver manifest (icd.d/*.json)",
                      "apt-get install mesa-vulkan-drivers (lavapipe, Mesa's CPU driver; Mesa 25 or newer on Debian "
                      "12: -t bookworm-backports), or your GPU vendor's Vulkan driver")
        return
    for driver in drivers:
        found = devices.setdefault(str(driver.manifest), _vulkan_devices(str(driver.manifest)))
        listed = "devices not listed (apt-get install vulkan-tools for vulkaninfo)" if found is None else \
            "; ".join(found) if found else "no device (no hardware for this driver here)"
        item = f"{driver.typed} ({driver.name})" if driver.typed != driver.name else driver.name
        yield Finding("vulkan", item, State.OK if found or found is None else State.INFO,
                      f"{listed} ({driver.manifest})")


def _directml() -> Iterator[Finding]:
    from dmlconform.directml.library import DirectMLNotFound, cache_root, choose_directml, release_problem, releases

    folder = cache_root() / "directml"
    valid = releases()
    for release in valid:
        yield Finding("directml", f"onnxruntime-directml {release.package_version}", State.OK,
                      f"DirectML.dll {release.directml_version}, sha256 {release.files.get('DirectML.dll', '?')} "
                      f"({release.folder})")
    kept = {release.folder for release in valid}
    for candidate in sorted(folder.iterdir()) if folder.is_dir() else []:
        if candidate.is_dir() and not candidate.name.startswith(".") and candidate not in kept:
            yield Finding("directml", f"onnxruntime-directml {candidate.name}", State.BROKEN,
                          release_problem(candidate) or "not a valid release",
                          f"dmlconform fetch directml {candidate.name} --force")
    try:
        choice = choose_directml(None, None)
    except (DirectMLNotFound, ValueError) as exc:
        yield Finding("directml", "DirectML.dll", State.MISSING, str(exc), "dmlconform fetch directml")
        return
    yield Finding("directml", "DirectML.dll", State.OK, f"{choice.dll}: version {choice.facts.file_version}, sha256 "
                  f"{choice.facts.sha256} ({choice.origin})")


def _handshakes(devices: dict[str, list[str] | None]) -> Iterator[Finding]:
    """The harness started on every Vulkan driver that has a device (under Wine), or on the default adapter
    (Windows): what it reports. Then the ONNX Runtime host on the first device the harness ran on."""
    from dmlconform.backends import create_backend
    from dmlconform.backends.base import BackendOptions
    from dmlconform.backends.directml import prepare_wine
    from dmlconform.directml.wine import needs_wine

    drivers: list[str | None] = [m for m, found in devices.items() if found or found is None] if needs_wine() \
        else [None]
    try:
        prepare_wine()
    except RuntimeError as exc:  # no Wine, no display: said above; the handshake cannot be tried
        yield Finding("handshake", "DirectML harness", State.MISSING, str(exc), "see the missing pieces above",
                      directml_path=True)
        return
    working: list[str | None] = []
    for driver in drivers or [None]:
        finding = _handshake("directml", _label(driver), BackendOptions(adapter=driver, timeout_s=120.0),
                             create_backend)
        if finding.state is State.OK:
            working.append(driver)
        yield finding
    host_driver = working[0] if working else (drivers[0] if drivers else None)
    yield _handshake("onnxruntime", _label(host_driver),
                     BackendOptions(ep="dml", adapter=host_driver, timeout_s=120.0), create_backend)


def _label(driver: str | None) -> str:
    """A driver by the name --adapter takes, then its manifest's: `lavapipe (lvp_icd)`."""
    if not driver:
        return "adapter 0"
    from dmlconform.directml.wine import VulkanDriver

    name = os.path.basename(driver).removesuffix(".json")
    typed = VulkanDriver(name, Path(driver), "").typed
    return f"{typed} ({name})" if typed != name else name


def _short(message: str) -> str:
    """A start failure without the command line it repeats (the programs' rows show where they are)."""
    for marker in ("handshake failed: ", "ended before the handshake: ", "did not answer the handshake"):
        if marker in message:
            return (marker.strip() + " " if marker.startswith("did") else "") + message.split(marker, 1)[1]
    return message


def _handshake(backend: str, label: str, options: object, create: Callable[..., object]) -> Finding:
    what = "DirectML harness" if backend == "directml" else "ONNX Runtime host (DirectML EP)"
    try:
        started = create(backend, options)
    except Exception as exc:  # any start failure is a finding, not a crash
        message = " ".join(str(exc).split())
        return Finding("handshake", f"{what} on {label}", State.BROKEN, _short(message)[:400], _fix_for(message),
                       directml_path=True)
    try:
        info = started.info()  # type: ignore[attr-defined]
    finally:
        started.close()  # type: ignore[attr-defined]
    api = info.extra.get("api", "")
    return Finding("handshake", f"{what} on {label}", State.OK,
                   f"{info.device}; driver {info.extra.get('driver_version', '?')}; {api or info.version}; "
                   f"feature level {info.feature_level}", directml_path=True)


def _fix_for(message: str) -> str:
    lowered = message.lower()
    if "this install of dmlconform has no" in lowered or "windows/build.py" in lowered:
        return "see the programs' rows above"
    if "fetch directml" in lowered or "no directml.dll" in lowered:
        return "dmlconform fetch directml"
    if "wine" in lowered and "install" in lowered:
        return "apt-get install wine64"
    if "xvfb" in lowered:
        return "apt-get install xvfb"
    if "vulkan" in lowered or "dxgi_error_unsupported" in lowered or "d3d12createdevice" in lowered:
        return ("a Vulkan driver with VK_EXT_descriptor_indexing: apt-get install mesa-vulkan-drivers (Mesa 25+; on "
                "Debian 12 -t bookworm-backports) or your GPU vendor's driver")
    return "see the message"


def diagnose(live: bool = True) -> Diagnosis:
    """Every finding; with `live`, the harness and host are started (seconds per device)."""
    from dmlconform.directml.wine import needs_wine

    findings = [*_python(), *_onnxruntime(), *_cuda(), *_programs()]
    devices: dict[str, list[str] | None] = {}
    if needs_wine():
        findings += [*_wine(), *_vulkan(devices)]
    findings += list(_directml())
    if live:
        findings += list(_handshakes(devices))
        findings = [_prefix_again(f) if (f.area, f.item) == ("wine", "prefix") else f for f in findings]
    return Diagnosis(findings, live)
