"""What the Windows programs' tests need on Linux (the DirectML harness, the ONNX Runtime host): a reason to skip, or
"" when the cross compiler, Wine and an X display are all there; the programs built as the wheel builds them; and the
command line that starts one as the package does; a client that speaks to one frame by frame (Raw)."""

from __future__ import annotations

import importlib.util
import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path
from types import ModuleType

from dmlconform import harness_protocol as protocol

WINE = os.environ.get("WINE", "/usr/lib/wine/wine64")


def missing_wine_tools() -> str:
    if shutil.which("x86_64-w64-mingw32-g++") is None:
        return "x86_64-w64-mingw32-g++ not found (apt-get install mingw-w64)"
    if not os.access(WINE, os.X_OK):
        return f"no Wine loader at {WINE} (apt-get install wine64)"
    if not os.environ.get("DISPLAY") and shutil.which("Xvfb") is None:
        return "neither DISPLAY nor Xvfb (apt-get install xvfb): Wine's DXGI needs an X display"
    return ""


# -- the packaged programs, as the wheel's build makes them ----------------------------------------------------------
ROOT = Path(__file__).resolve().parents[2]


def windows_build() -> ModuleType:
    """windows/build.py, loaded by its path as hatch_build.py loads it (it is no module of the package)."""
    spec = importlib.util.spec_from_file_location("dmlconform_windows_build", ROOT / "windows" / "build.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def built_programs(out_dir: Path) -> Path:
    """Both Windows programs built by windows/build.py, the wheel's own build (its cache makes a second build of the
    same sources a copy), into out_dir with BUILD.json: a folder for DMLCONFORM_WINDOWS_PROGRAMS_DIR."""
    build = windows_build()
    build.build_programs(out_dir)
    return out_dir


def lavapipe_driver() -> str | None:
    """Mesa's CPU Vulkan driver when installed: results then do not depend on the host's GPU."""
    from dmlconform.directml.wine import WineUnavailable, choose_vulkan_driver

    try:
        return str(choose_vulkan_driver("lavapipe").manifest)
    except WineUnavailable:
        return None


def program_command(program: Path, dlls: dict[str, Path], *arguments: str, virtual_heaps: bool = False) -> str:
    """The command line that starts a packaged program under Wine as the directml backend starts it (directml/wine.py:
    the package's prefix and its display, lavapipe, DLLs as Wine paths; `virtual_heaps` as directml/start.py gives
    the harness), written out as `env K=V ... wine64 program ...` for tests that start it themselves."""
    from dmlconform.directml.wine import launch

    return launch(program, list(arguments), dlls, lavapipe_driver(), lambda line: None,
                  virtual_heaps=virtual_heaps).command_line()


def directml_dll() -> Path | None:
    """A real DirectML.dll: $DMLH_DIRECTML_DLL, else the default release in dmlconform's cache (`dmlconform fetch
    directml`), else the one the Debian set-up of earlier sessions left in /opt."""
    from dmlconform.directml.library import DirectMLNotFound, choose_directml

    given = os.environ.get("DMLH_DIRECTML_DLL")
    if given:
        return Path(given) if Path(given).is_file() else None
    try:
        return choose_directml(None, None).dll
    except (DirectMLNotFound, ValueError):
        pass
    legacy = Path("/opt/dmlconform-wine/DirectML.dll")
    return legacy if legacy.is_file() else None


def counting_loader(folder: Path, program: str) -> tuple[Path, Path]:
    """A Wine loader that notes each start of `program` (a line "started" in the second path it returns) and runs the
    real one, beside the real wineserver: set WINE to the first path to count a command's program starts."""
    from dmlconform.directml.wine import find_wine

    real = find_wine()
    folder.mkdir(parents=True, exist_ok=True)
    started = folder / "started"
    loader = folder / real.loader.name
    loader.write_text(f'#!/bin/sh\ncase "$*" in *{program}*) echo started >> {started};; esac\n'
                      f'exec {real.loader} "$@"\n')
    loader.chmod(0o755)
    if real.server is not None:
        (folder / real.server.name).symlink_to(real.server)
    return loader, started



def missing_for_the_harness() -> str:
    """Why the DirectML harness cannot run here ("" when it can): Wine's tools, or a DirectML.dll."""
    tools = missing_wine_tools()
    if tools:
        return tools
    if directml_dll() is None:
        return "no DirectML.dll (dmlconform fetch directml, or set DMLH_DIRECTML_DLL)"
    return ""

class Raw:
    """A harness process spoken to frame by frame (docs/native-harness.md), as the runner's side would."""

    def __init__(self, command: str, stderr: int = subprocess.PIPE) -> None:
        self.greeting: protocol.Frame | None = None  # the reply to hello()
        self.process = subprocess.Popen(shlex.split(command), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                        stderr=stderr)

    def send(self, data: bytes) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(data)
        self.process.stdin.flush()

    def frame(self) -> protocol.Frame:
        assert self.process.stdout is not None
        return protocol.read_frame(self.process.stdout.read)

    def hello(self, client: str = "test_dml_harness") -> dict:
        self.send(protocol.encode_hello_request(client))
        reply = self.greeting = self.frame()
        assert reply.type == "hello", reply.header
        return reply.header

    def exchange(self, header: dict, payload: bytes = b"") -> protocol.Frame:
        """A run request and its result frame."""
        self.send(protocol.encode_frame({"type": "run", **header}, payload))
        reply = self.frame()
        assert reply.type == "result", reply.header
        return reply

    def run(self, header: dict, payload: bytes = b"") -> dict:
        return self.exchange(header, payload).header

    def finish(self) -> tuple[int, str]:
        assert self.process.stdin is not None and self.process.stderr is not None
        self.process.stdin.close()
        code = self.process.wait(timeout=60)
        return code, self.process.stderr.read().decode(errors="replace")
