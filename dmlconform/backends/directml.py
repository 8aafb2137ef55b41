"""The `directml` backend: every case on the real DirectML.dll, through the DirectML harness this package carries.

On Windows the harness (dml_harness.exe, built into the wheel) is started directly; on Linux it runs under Wine,
in a prefix of our own, on the prefix's own Xvfb and the Vulkan driver `--adapter` names
(directml/wine.py). DirectML.dll is `--directml PATH`, DMLCONFORM_DIRECTML, `--directml-version V` (fetched with
`dmlconform fetch directml V`), onnxruntime-directml's own on Windows, or the default fetched release
(directml/library.py). The process is isolated exactly as a native harness is (native.py): a crash, hang or
garbage costs one case. Result documents name the DLL's version, digest and where it came from.
"""

from __future__ import annotations

from dataclasses import replace

from dmlconform.backends import register
from dmlconform.backends.base import BackendInfo, BackendOptions
from dmlconform.backends.native import HarnessStartError, NativeBackend
from dmlconform.directml.start import Device, ProgramStart, StartError, harness_start, log
from dmlconform.directml.wine import WineUnavailable, device_hint, missing_adapter

NAME = "directml"


class DirectMLBackend(NativeBackend):
    name = NAME

    def __init__(self, start: ProgramStart, timeout_s: float, started: object | None = None) -> None:
        self.start = start
        super().__init__(start.launch.describe(), timeout_s, argv=start.launch.argv,
                         environment=start.launch.environment, started=started)

    def info(self) -> BackendInfo:
        info = super().info()
        info.extra.update(self.start.facts)
        return info


def device_for(options: BackendOptions) -> Device:
    try:
        return Device.parse(options.adapter, options.warp)
    except StartError as exc:
        raise RuntimeError(str(exc)) from None


def _start(options: BackendOptions) -> ProgramStart:
    if options.harness:
        raise RuntimeError("--backend directml starts its own harness; --harness is for --backend native")
    if isinstance(options.prepared, ProgramStart):
        return options.prepared
    try:
        return harness_start(options.directml, options.directml_version, device_for(options), log,
                             options.program_options)
    except (StartError, WineUnavailable) as exc:
        raise RuntimeError(str(exc)) from None


def prepare_start(options: BackendOptions) -> BackendOptions:
    """The options with the harness's start worked out (`backends.prepare`): a tenth of a second of digests and Wine
    probes that each worker would otherwise spend before its harness can start."""
    return replace(options, prepared=_start(replace(options, prepared=None)))


@register(NAME)
def create(options: BackendOptions) -> DirectMLBackend:
    start = _start(options)
    try:
        return DirectMLBackend(start, options.timeout_s, options.started)
    except (HarnessStartError, WineUnavailable) as exc:
        missing = missing_adapter(str(exc), start.launch)
        if missing:  # the cause first and alone: not the command line and the Vulkan advice around it
            raise RuntimeError(missing) from None
        hint = device_hint(str(exc), start.launch)
        raise RuntimeError(f"{exc}" + (f"; {hint}" if hint else "")) from None


def prepare_wine(options: BackendOptions | None = None) -> None:
    """Once per command, before any worker process starts a program: DirectML.dll found and checked (a missing one
    is said at once, before Wine is touched), the Wine prefix made (a minute's work, not for each worker to wait on),
    its wineserver started to linger for the next programs, and a missing Wine said in one line. Only the DLL on
    Windows."""
    from dmlconform.directml.library import DirectMLNotFound, choose_directml
    from dmlconform.directml.wine import prepare_prefix

    if options is not None:
        try:
            choose_directml(options.directml, options.directml_version)
        except (DirectMLNotFound, ValueError) as exc:
            raise RuntimeError(str(exc)) from None
    try:
        prepare_prefix(log)
    except WineUnavailable as exc:
        raise RuntimeError(str(exc)) from None
