"""The `directml` backend: every case on the real DirectML.dll, through the DirectML harness this package carries.

On Windows the harness (dml_harness.exe, built into the wheel) is started directly; on Linux it runs under Wine,
in a prefix of our own, on an X display (an Xvfb when there is none) and the Vulkan driver `--adapter` names
(directml/wine.py). DirectML.dll is `--directml PATH`, DMLCONFORM_DIRECTML, `--directml-version V` (fetched with
`dmlconform fetch directml V`), onnxruntime-directml's own on Windows, or the default fetched release
(directml/library.py). The process is isolated exactly as a native harness is (native.py): a crash, hang or
garbage costs one case. Result documents name the DLL's version, digest and where it came from.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator

from dmlconform.backends import register
from dmlconform.backends.base import BackendInfo, BackendOptions
from dmlconform.backends.native import HarnessStartError, NativeBackend
from dmlconform.directml.start import Device, ProgramStart, StartError, harness_start
from dmlconform.directml.wine import PrivateDisplay, WineUnavailable

NAME = "directml"


def _log(line: str) -> None:
    print(f"dmlconform: {line}", file=sys.stderr)


class DirectMLBackend(NativeBackend):
    name = NAME

    def __init__(self, start: ProgramStart, timeout_s: float) -> None:
        self.start = start
        self.display = PrivateDisplay(start.launch)
        try:
            super().__init__(start.launch.describe(), timeout_s, argv=start.launch.argv,
                             environment=self.display.environment)
        except BaseException:
            self.display.close()
            raise

    def info(self) -> BackendInfo:
        info = super().info()
        info.extra.update(self.start.facts)
        return info

    def close(self) -> None:
        try:
            super().close()
        finally:
            self.display.close()


def device_for(options: BackendOptions) -> Device:
    try:
        return Device.parse(options.adapter, options.warp)
    except StartError as exc:
        raise RuntimeError(str(exc)) from None


@register(NAME)
def create(options: BackendOptions) -> DirectMLBackend:
    if options.harness:
        raise RuntimeError("--backend directml starts its own harness; --harness is for --backend native")
    try:
        start = harness_start(options.directml, options.directml_version, device_for(options), _log)
        return DirectMLBackend(start, options.timeout_s)
    except (StartError, HarnessStartError, WineUnavailable) as exc:
        raise RuntimeError(str(exc)) from None


@contextlib.contextmanager
def wine_session() -> Iterator[None]:
    """Once per command, before any worker process starts a program: the Wine prefix made (not by several workers at
    once) and one X display for all of them (they share the prefix's desktop). Nothing on Windows."""
    from dmlconform.directml.wine import (
        WineUnavailable,
        ensure_prefix,
        find_wine,
        needs_wine,
        shared_display,
        wine_prefix,
    )

    if not needs_wine():
        yield
        return
    try:
        wine = find_wine()
        prefix = wine_prefix(wine)
        ensure_prefix(wine, prefix, _log)
        display = shared_display(wine, prefix)
        display.__enter__()
    except WineUnavailable as exc:
        raise RuntimeError(str(exc)) from None
    try:
        yield
    finally:
        display.__exit__(None, None, None)
