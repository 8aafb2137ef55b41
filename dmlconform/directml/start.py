"""Everything needed to start one of the packaged programs on the real DirectML: which DirectML.dll (and, for the
ONNX Runtime host, which onnxruntime.dll), which program, which device, and the command line that starts it
(natively on Windows, under Wine elsewhere). The facts it gathers go into result documents and certification
packages as plain strings (`facts`)."""

from __future__ import annotations

import hashlib
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from dmlconform.directml.library import DirectMLChoice, DirectMLNotFound, choose_directml, releases
from dmlconform.directml.programs import HARNESS, HOST, program_build
from dmlconform.directml.wine import Launch, WineUnavailable, launch

#: The onnxruntime.dll the host was written against; another is run with --any-ort-version (its API table is still
#: checked by the host).
HOST_ORT_SERIES = "1.24."
#: An ONNX model host of the user's own for `--ep dml`, instead of the packaged one (the onnxruntime backend's).
OWN_HOST_ENV = "DMLCONFORM_ORT_HOST"


class StartError(RuntimeError):
    """A program cannot be started here; the message is one line naming what is missing and how to fix it."""


@dataclass(frozen=True)
class Device:
    """--adapter and --warp: a DXGI adapter index, or under Wine a Vulkan driver to run Direct3D 12 on."""

    index: int | None = None
    vulkan_driver: str | None = None
    warp: bool = False

    @classmethod
    def parse(cls, adapter: str | None, warp: bool = False) -> Device:
        if adapter is None or adapter == "":
            return cls(warp=warp)
        if adapter.isdigit():
            return cls(index=int(adapter), warp=warp)
        if warp:
            raise StartError(f"--warp with --adapter {adapter}: WARP is an adapter of its own; give one of them")
        return cls(vulkan_driver=adapter)

    def arguments(self) -> list[str]:
        if self.warp:
            if sys.platform != "win32":
                raise StartError("--warp: WARP, Windows' software adapter, does not exist under Wine; for a CPU device "
                                 "use --adapter lavapipe (Mesa's CPU Vulkan driver)")
            return ["--warp"]
        return ["--adapter", str(self.index)] if self.index is not None else []


@dataclass(frozen=True)
class ProgramStart:
    program: Path
    launch: Launch
    directml: DirectMLChoice
    onnxruntime: Path | None = None
    facts: Mapping[str, str] = field(default_factory=dict)


def log(line: str) -> None:
    """How a program's start reports what it does (fetching, making the Wine prefix): a line on stderr."""
    print(f"dmlconform: {line}", file=sys.stderr)


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while chunk := handle.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


def _facts(program: Path, choice: DirectMLChoice, started: Launch, onnxruntime: Path | None) -> dict[str, str]:
    facts = {"program": f"{program.name} sha256 {_sha256(program)}",
             "directml_dll": str(choice.dll),
             "directml_dll_version": choice.facts.file_version or "unknown",
             "directml_dll_sha256": choice.facts.sha256,
             "directml_origin": choice.origin}
    if onnxruntime is not None:
        facts["onnxruntime_dll"] = f"{onnxruntime} sha256 {_sha256(onnxruntime)}"
    if started.wine is not None:
        facts["wine"] = f"{started.wine.version} ({started.wine.loader})"
        facts["wine_prefix"] = str(started.prefix)
    if started.vulkan_driver is not None:
        facts["vulkan_driver"] = f"{started.vulkan_driver.name} ({started.vulkan_driver.manifest})"
    return facts


def _choose(directml: str | None, version: str | None, environ: Mapping[str, str] | None) -> DirectMLChoice:
    try:
        return choose_directml(directml, version, environ)
    except (DirectMLNotFound, ValueError) as exc:  # ValueError: DllError, a file that is not DirectML
        raise StartError(str(exc)) from None


def harness_start(directml: str | None, version: str | None, device: Device, log: Callable[[str], None],
                  arguments: tuple[str, ...] = (), environ: Mapping[str, str] | None = None) -> ProgramStart:
    """The DirectML harness on the chosen DirectML.dll and device."""
    choice = _choose(directml, version, environ)
    try:
        program = program_build(environ).path(HARNESS)
        started = launch(program, [*device.arguments(), *arguments], {"--dml": choice.dll}, device.vulkan_driver,
                         log, environ, virtual_heaps=True)
    except (WineUnavailable, RuntimeError) as exc:
        raise StartError(str(exc)) from None
    return ProgramStart(program, started, choice, None, _facts(program, choice, started, None))


def program_files(host: bool, directml: str | None, version: str | None,
                  environ: Mapping[str, str] | None = None) -> list[Path]:
    """The files a run on the packaged harness (or, with `host`, the ONNX Runtime host) is made of: the program, the
    DirectML.dll it loads, and the host's onnxruntime.dll; for a certification package's digests."""
    choice = _choose(directml, version, environ)
    try:
        program = program_build(environ).path(HOST if host else HARNESS)
    except RuntimeError as exc:
        raise StartError(str(exc)) from None
    return [program, choice.dll, *([_onnxruntime_for(choice)[0]] if host else [])]


def _onnxruntime_for(choice: DirectMLChoice) -> tuple[Path, str]:
    """The onnxruntime.dll to pair with the chosen DirectML.dll, and its onnxruntime-directml version ("" unknown)."""
    if choice.release is not None and choice.release.onnxruntime_dll is not None:
        return choice.release.onnxruntime_dll, choice.release.package_version
    beside = choice.dll.with_name("onnxruntime.dll")
    if beside.is_file():
        return beside, ""
    for release in releases():
        if release.onnxruntime_dll is not None:
            return release.onnxruntime_dll, release.package_version
    raise StartError(f"no onnxruntime.dll to run the DirectML EP with (none beside {choice.dll}, none in the cache): "
                     "dmlconform fetch directml")


def host_start(ep: str, directml: str | None, version: str | None, device: Device, log: Callable[[str], None],
               session_config: tuple[str, ...] = (), arguments: tuple[str, ...] = (),
               environ: Mapping[str, str] | None = None) -> ProgramStart:
    """The ONNX Runtime host serving `ep` (dml or cpu) with onnxruntime-directml's DLLs."""
    choice = _choose(directml, version, environ)
    onnxruntime, package = _onnxruntime_for(choice)
    options = ["--ep", ep, *device.arguments()]
    if not package.startswith(HOST_ORT_SERIES):
        options.append("--any-ort-version")
    for entry in session_config:
        options += ["--session-config", entry]
    try:
        program = program_build(environ).path(HOST)
        started = launch(program, [*options, *arguments], {"--dml": choice.dll, "--onnxruntime": onnxruntime},
                         device.vulkan_driver, log, environ)
    except (WineUnavailable, RuntimeError) as exc:
        raise StartError(str(exc)) from None
    return ProgramStart(program, started, choice, onnxruntime, _facts(program, choice, started, onnxruntime))
