"""How a Windows program of this package is started: directly on Windows, under Wine elsewhere.

Under Wine the programs need four things, each found or made here and each missing one named in one line with its
fix: the Wine loader; a 64-bit prefix of our own under the cache (made once, checked each time, remade when broken);
an X display (Wine's DXGI needs one; without it D3D12CreateDevice fails with DXGI_ERROR_UNSUPPORTED), an Xvfb
of the prefix's own; and a Vulkan driver for Wine's Direct3D 12 (vkd3d), the one the user names or the
loader's default. Every program started on one prefix uses the prefix's own display (prefix_display): they share the
prefix's wineserver and its desktop, and a program on another display than the desktop's gets DXGI_ERROR_UNSUPPORTED.
"""

from __future__ import annotations

import contextlib
import difflib
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path, PureWindowsPath

from dmlconform.directml.library import cache_root

WINE_ENV = "WINE"
PREFIX_ENV = "DMLCONFORM_WINE_PREFIX"
READY_MARK = ".dmlconform-prefix.json"
WINE_HINT = "apt-get install wine64 (Debian/Ubuntu; Wine 8 or newer), or set WINE to the wine64 loader"
XVFB_HINT = "apt-get install xvfb, or set DISPLAY to a running X server"
#: Standard Vulkan driver manifest folders (the Vulkan loader's own search list on Linux).
ICD_FOLDERS = ("/usr/share/vulkan/icd.d", "/usr/local/share/vulkan/icd.d", "/etc/vulkan/icd.d",
               "/usr/local/nvidia/share/vulkan/icd.d")
#: Short names for the drivers people mean, matched against a manifest's file name.
DRIVER_ALIASES = {"lavapipe": "lvp", "llvmpipe": "lvp", "radv": "radeon", "amd": "radeon", "anv": "intel"}
WINEBOOT_TIMEOUT_S = 300.0
XVFB_START_S = 15.0
#: How long the prefix's wineserver stays up after its last program exits (`wineserver -p`). A program started on a
#: running server begins in 0.05-0.3 s; one that must first bring the server and Wine's own services up, about a
#: second (measured here, 2026-11-26): each command would pay that per harness start otherwise.
WINESERVER_LINGER_S = 300


class WineUnavailable(RuntimeError):
    """Wine, its prefix, a display or a Vulkan driver is missing or broken; the message is one line with the fix."""


# -- Wine itself ---------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Wine:
    loader: Path
    server: Path | None
    version: str  # "wine-8.0 (Debian 8.0~repack-4)"


#: The Wine found for each (WINE, PATH, loader's size and mtime) in this process: `--version` is a process start, and a
#: command looks for Wine more than once (the harness's start, the prefix).
_FOUND: dict[tuple[str, str, str, int, int], Wine] = {}


def find_wine(environ: Mapping[str, str] | None = None) -> Wine:
    env = os.environ if environ is None else environ
    named = env.get(WINE_ENV, "")
    candidates = [named] if named else [shutil.which("wine64", path=env.get("PATH")) or "", "/usr/lib/wine/wine64",
                                        shutil.which("wine", path=env.get("PATH")) or ""]
    loader = next((Path(c) for c in candidates if c and os.access(c, os.X_OK) and Path(c).is_file()), None)
    if loader is None:
        where = f"{WINE_ENV}={named} is not an executable file" if named else "no wine64 or wine on PATH"
        raise WineUnavailable(f"no Wine ({where}): {WINE_HINT}")
    facts = loader.stat()
    key = (named, env.get("PATH", ""), str(loader), facts.st_size, facts.st_mtime_ns)
    if key in _FOUND:
        return _FOUND[key]
    try:
        done = subprocess.run([str(loader), "--version"], capture_output=True, text=True, timeout=30,
                              env={**env, "WINEDEBUG": "-all"}, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise WineUnavailable(f"{loader} --version failed: {exc}; {WINE_HINT}") from None
    version = done.stdout.strip().splitlines()[0] if done.returncode == 0 and done.stdout.strip() else ""
    if not version.startswith("wine-"):
        raise WineUnavailable(f"{loader} is not a Wine loader ({loader} --version said "
                              f"{(done.stdout or done.stderr).strip()[:80]!r}); {WINE_HINT}")
    server = next((p for p in (loader.with_name("wineserver"), loader.with_name("wineserver64"))
                   if p.is_file()), None)
    if server is None and (found := shutil.which("wineserver", path=env.get("PATH"))):
        server = Path(found)
    _FOUND[key] = Wine(loader, server, version)
    return _FOUND[key]


def windows_path(path: Path) -> str:
    """A Linux path as the programs see it under Wine: drive Z: is the root in every prefix Wine makes."""
    return str(PureWindowsPath("Z:\\") / PureWindowsPath(*Path(path).resolve().parts[1:]))


# -- the prefix ----------------------------------------------------------------------------------------------------
def wine_prefix(wine: Wine, environ: Mapping[str, str] | None = None) -> Path:
    """Ours, under the cache, one per Wine version: DMLCONFORM_WINE_PREFIX names another."""
    env = os.environ if environ is None else environ
    if env.get(PREFIX_ENV):
        return Path(env[PREFIX_ENV])
    slug = "".join(c if c.isalnum() or c in ".-" else "_" for c in wine.version.split(" ")[0])
    return cache_root(env) / "wine" / f"prefix-{slug}"


def prefix_problem(prefix: Path, wine: Wine) -> str:
    """Why the prefix cannot be used as it is ("" when it can)."""
    if not prefix.exists():
        return "it does not exist yet"
    mark = prefix / READY_MARK
    try:
        made = json.loads(mark.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return "it was never completed (an interrupted set-up)"
    except (OSError, ValueError) as exc:
        return f"{mark.name} is unreadable ({exc})"
    if not isinstance(made, dict) or made.get("wine") != wine.version:
        return f"it was made by {made.get('wine') if isinstance(made, dict) else 'an unknown Wine'}, not {wine.version}"
    for name in ("system.reg", "user.reg"):
        try:
            if (prefix / name).stat().st_size < 64:
                return f"{name} is empty"
        except OSError:
            return f"{name} is missing"
    if not (prefix / "drive_c" / "windows" / "system32").is_dir():
        return "drive_c/windows/system32 is missing"
    if not (prefix / "dosdevices" / "z:").exists():
        return "drive Z: (the root folder) is missing"
    return ""


def ensure_prefix(wine: Wine, prefix: Path, log: Callable[[str], None]) -> None:
    """Make the prefix ready, or remake it when broken; one process at a time per prefix."""
    if not prefix_problem(prefix, wine):
        return
    prefix.parent.mkdir(parents=True, exist_ok=True)
    with _locked(prefix.with_name(prefix.name + ".lock")):
        problem = prefix_problem(prefix, wine)
        if not problem:
            return
        if prefix.exists():
            log(f"remaking the Wine prefix {prefix}: {problem}")
            stop_display(prefix)
            shutil.rmtree(prefix, ignore_errors=True)
        else:
            log(f"making a Wine prefix at {prefix} (once; about half a minute)")
        env = {**os.environ, **_wine_environment(prefix, None), "WINEDEBUG": "-all"}
        for argv in ([str(wine.loader), "wineboot", "-i"],
                     # Wine's Direct3D on Vulkan, as its Direct3D 12 (vkd3d) is.
                     [str(wine.loader), "reg", "add", r"HKCU\Software\Wine\Direct3D", "/v", "renderer", "/d",
                      "vulkan", "/f"]):
            try:
                subprocess.run(argv, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL, timeout=WINEBOOT_TIMEOUT_S, check=False)
            except subprocess.TimeoutExpired:
                raise WineUnavailable(f"making the Wine prefix {prefix}: {argv[1]} took over "
                                      f"{WINEBOOT_TIMEOUT_S:g} s; remove the folder and try again") from None
            # The registry reaches the disk when the wineserver exits: wait for it, or the prefix looks incomplete.
            _wait_for_wineserver(wine, env)
        made = {"wine": wine.version, "made": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
        problem = prefix_problem(prefix, wine) if (prefix / "system.reg").exists() else "wineboot made no registry"
        if problem and problem != "it was never completed (an interrupted set-up)":
            raise WineUnavailable(f"Wine could not make a prefix at {prefix}: {problem} ({wine.version}; "
                                  f"try WINEDEBUG=+all {wine.loader} wineboot -i with WINEPREFIX={prefix})")
        (prefix / READY_MARK).write_text(json.dumps(made) + "\n", encoding="utf-8")


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    import fcntl  # Wine runs on POSIX systems only

    with open(path, "a+b") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def keep_wineserver(wine: Wine, prefix: Path) -> None:
    """Start the prefix's wineserver, to stay up WINESERVER_LINGER_S after its last program (as the prefix's Xvfb
    stays up): the programs of this command and of the next ones then start on a running server. Where one already
    runs it stays as it is (the new one sees it and exits at once), so this costs a few milliseconds."""
    if wine.server is None:
        return
    with contextlib.suppress(OSError):
        subprocess.Popen([str(wine.server), f"-p{WINESERVER_LINGER_S}"],
                         env={**os.environ, **_wine_environment(prefix, None)}, stdin=subprocess.DEVNULL,
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)


def _wait_for_wineserver(wine: Wine, env: Mapping[str, str], timeout_s: float = 60.0) -> None:
    if wine.server is None:
        return
    with contextlib.suppress(OSError, subprocess.TimeoutExpired):
        subprocess.run([str(wine.server), "-w"], env={**os.environ, **env}, timeout=timeout_s, check=False,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


# -- Vulkan drivers ------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class VulkanDriver:
    name: str  # the manifest's file name without .json, e.g. "lvp_icd.x86_64", "nvidia_icd"
    manifest: Path
    library: str  # the driver library the manifest names

    @property
    def label(self) -> str:
        return "lavapipe (Mesa, CPU)" if self.name.startswith("lvp") else self.name

    @property
    def typed(self) -> str:
        """The name `--adapter` takes for it: lavapipe for lvp_icd.x86_64, radeon for radeon_icd.x86_64, ..."""
        if self.name.startswith("lvp"):
            return "lavapipe"
        stem = self.name.split(".", 1)[0]
        return stem.removesuffix("_icd") or self.name


def vulkan_drivers(environ: Mapping[str, str] | None = None) -> list[VulkanDriver]:
    """The driver manifests installed in the standard folders (and XDG_DATA_HOME's), each read for its library."""
    env = os.environ if environ is None else environ
    folders = list(ICD_FOLDERS)
    home = env.get("XDG_DATA_HOME") or (str(Path(env["HOME"]) / ".local" / "share") if env.get("HOME") else "")
    if home:
        folders.append(str(Path(home) / "vulkan" / "icd.d"))
    found: dict[str, VulkanDriver] = {}
    for folder in folders:
        for manifest in sorted(Path(folder).glob("*.json")) if Path(folder).is_dir() else []:
            driver = _read_manifest(manifest)
            if driver is not None and driver.name not in found:
                found[driver.name] = driver
    return list(found.values())


def _read_manifest(path: Path) -> VulkanDriver | None:
    try:
        if path.stat().st_size > 1 << 16:
            return None
        document = json.loads(path.read_text(encoding="utf-8"))
        library = document["ICD"]["library_path"]
    except (OSError, ValueError, KeyError, TypeError):
        return None
    if not isinstance(library, str):
        return None
    if "i686" in path.name or "i386" in library:  # 32-bit drivers serve 32-bit programs only
        return None
    return VulkanDriver(path.name.removesuffix(".json"), path, library)


def choose_vulkan_driver(wanted: str, environ: Mapping[str, str] | None = None) -> VulkanDriver:
    """The driver a name (lavapipe, nvidia, radeon, intel, a manifest's name) or a manifest path means."""
    if wanted.endswith(".json") or os.sep in wanted:
        driver = _read_manifest(Path(wanted))
        if driver is None:
            raise WineUnavailable(f"--adapter {wanted}: not a readable Vulkan driver manifest (an ICD .json file)")
        return driver
    drivers = vulkan_drivers(environ)
    key = DRIVER_ALIASES.get(wanted.lower(), wanted.lower())
    matches = [d for d in drivers if d.name.lower().startswith(key) or d.name.lower() == key]
    exact = [d for d in matches if d.typed.lower() in (wanted.lower(), key)]
    if len(matches) == 1 or len(exact) == 1:
        return matches[0] if len(matches) == 1 else exact[0]
    if matches:
        raise WineUnavailable(f"--adapter {wanted}: several Vulkan drivers match ({', '.join(d.name for d in matches)})"
                              "; give a driver manifest's path")
    raise WineUnavailable(_no_driver(wanted, drivers))


#: Where each vendor's Vulkan driver comes from, by the names --adapter takes.
DRIVER_SOURCES = {"lavapipe": "apt-get install mesa-vulkan-drivers (Mesa's CPU driver; Mesa 25 or newer: on Debian 12 "
                              "-t bookworm-backports)",
                  "nvidia": "NVIDIA's GPU driver (nvidia_icd.json)",
                  "radeon": "apt-get install mesa-vulkan-drivers (RADV, Mesa's AMD driver)",
                  "intel": "apt-get install mesa-vulkan-drivers (ANV, Mesa's Intel driver)"}


def _no_driver(wanted: str, drivers: list[VulkanDriver]) -> str:
    """One line for an --adapter name no installed driver answers to: the near miss, the names installed (as
    --adapter takes them), and the install command only for a driver that is not installed."""
    installed = list(dict.fromkeys(d.typed for d in drivers))
    if not installed:
        return (f"--adapter {wanted}: no Vulkan driver is installed; lavapipe, Mesa's CPU driver, comes with apt-get "
                "install mesa-vulkan-drivers (Mesa 25 or newer: on Debian 12 -t bookworm-backports)")
    names = {name.lower(): name for name in [*installed, *DRIVER_ALIASES, *DRIVER_SOURCES]}
    near = difflib.get_close_matches(wanted.lower(), list(names), n=1, cutoff=0.7)
    vendor = DRIVER_ALIASES.get(wanted.lower(), wanted.lower())
    vendor = {"lvp": "lavapipe"}.get(vendor, vendor)
    if vendor in DRIVER_SOURCES:  # a driver people mean, not installed here
        return (f"--adapter {wanted}: no {vendor} Vulkan driver here (installed: {', '.join(installed)}); it comes "
                f"with {DRIVER_SOURCES[vendor]}")
    guess = f" (did you mean {names[near[0]]}?)" if near else ""
    return (f"--adapter {wanted}: no Vulkan driver of that name{guess}; installed: {', '.join(installed)} (or give an "
            "adapter index, or a driver manifest's path)")


# -- the display ---------------------------------------------------------------------------------------------------
DISPLAY_RECORD = ".dmlconform-display.json"


class Xvfb:
    """A virtual X server in a session of its own (it outlives the command that started it, as the prefix's wineserver
    does), its log in `log`."""

    def __init__(self, log: Path) -> None:
        if shutil.which("Xvfb") is None:
            raise WineUnavailable(f"no X display for Wine (DISPLAY is unset) and no Xvfb to make one: {XVFB_HINT}")
        read_end, write_end = os.pipe()
        try:
            with open(log, "ab") as sink:
                # -displayfd: Xvfb picks a free display number and writes it once it accepts connections.
                self.process = subprocess.Popen(["Xvfb", "-displayfd", str(write_end), "-nolisten", "tcp", "-screen",
                                                 "0", "640x480x24"], pass_fds=(write_end,), stdin=subprocess.DEVNULL,
                                                stdout=sink, stderr=sink, start_new_session=True)
        finally:
            os.close(write_end)
        try:
            self.display = ":" + self._display_number(read_end, log)
        except WineUnavailable:
            self.stop()
            raise
        finally:
            os.close(read_end)

    def _display_number(self, read_end: int, log: Path) -> str:
        import select

        deadline, text = time.monotonic() + XVFB_START_S, b""
        while time.monotonic() < deadline and not text.endswith(b"\n"):
            ready, _, _ = select.select([read_end], [], [], 0.1)
            if ready:
                chunk = os.read(read_end, 64)
                if not chunk:
                    break
                text += chunk
            elif self.process.poll() is not None:
                break
        number = text.strip().decode("ascii", "replace")
        if not number.isdigit():
            said = log.read_bytes()[-300:].decode("utf-8", "replace") if log.is_file() else ""
            raise WineUnavailable(f"Xvfb did not start within {XVFB_START_S:g} s"
                                  + (f": {' '.join(said.split())}" if said.strip() else "") + f" (log: {log})")
        return number

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(5)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(5)


def live_display(record: Path) -> str:
    """The display the record names if its Xvfb still runs ("" otherwise)."""
    try:
        made = json.loads(record.read_text(encoding="utf-8"))
        display, pid = str(made["display"]), int(made["pid"])
        command = Path(f"/proc/{pid}/cmdline").read_bytes()
    except (OSError, ValueError, KeyError, TypeError):
        return ""
    number = display.removeprefix(":")
    alive = b"Xvfb" in command and Path(f"/tmp/.X11-unix/X{number}").exists()
    return display if alive and number.isdigit() else ""


def prefix_display(prefix: Path) -> str:
    """The X display of every program on this prefix: they share its wineserver and desktop, and a program on another
    display than the desktop's gets DXGI_ERROR_UNSUPPORTED. An Xvfb of the prefix's own, started on first use and kept
    running for the next command (as the wineserver lingers); $DISPLAY only where there is no Xvfb."""
    record = prefix / DISPLAY_RECORD
    current = live_display(record)
    if current:
        return current
    with _locked(prefix.with_name(prefix.name + ".lock")):
        current = live_display(record)
        if current:
            return current
        if shutil.which("Xvfb") is None and os.environ.get("DISPLAY"):
            return os.environ["DISPLAY"]
        server = Xvfb(prefix.with_name(prefix.name + ".xvfb.log"))
        record.write_text(json.dumps({"display": server.display, "pid": server.process.pid}) + "\n",
                          encoding="utf-8")
        return server.display


def stop_display(prefix: Path) -> None:
    """Stop the prefix's Xvfb, if it runs (tests, and a prefix being remade)."""
    record = prefix / DISPLAY_RECORD
    if not live_display(record):
        return
    try:
        pid = int(json.loads(record.read_text(encoding="utf-8"))["pid"])
        os.kill(pid, 15)
    except (OSError, ValueError, KeyError, TypeError):
        pass


def needs_wine() -> bool:
    return sys.platform != "win32"


def device_hint(message: str, started: Launch) -> str:
    """What to do when a program could not make its Direct3D 12 device under Wine ("" when the message is about
    something else): Wine's DXGI finds no adapter without a Vulkan device that vkd3d can use."""
    if started.wine is None or not any(mark in message for mark in ("DXGI_ERROR_UNSUPPORTED", "D3D12CreateDevice",
                                                                      "EnumAdapters", "DXGI_ERROR_NOT_FOUND")):
        return ""
    through = f"the Vulkan driver {started.vulkan_driver.manifest}" if started.vulkan_driver else \
        "the installed Vulkan drivers"
    return (f"under Wine no Direct3D 12 device came up through {through}: it needs a Vulkan device with "
            "VK_EXT_descriptor_indexing (Mesa 25's lavapipe: --adapter lavapipe, or your GPU's driver: --adapter "
            "nvidia); `dmlconform doctor` lists each driver's devices")


def missing_adapter(message: str, started: Launch) -> str:
    """One short line for a program that found no adapter at the index --adapter gave ("" when the message is about
    something else), leading with that, not with the command line and the Vulkan advice around it: `--adapter 5: no
    adapter 5 (IDXGIFactory1::EnumAdapters1(5): DXGI_ERROR_NOT_FOUND); adapters here: ...`."""
    found = re.search(r"EnumAdapters1\((\d+)\): DXGI_ERROR_NOT_FOUND", message)
    if found is None:
        return ""
    index = found.group(1)
    return (f"--adapter {index}: no adapter {index} (IDXGIFactory1::EnumAdapters1({index}): DXGI_ERROR_NOT_FOUND); "
            f"adapters here: {_adapters_here(started)}")


def _adapters_here(started: Launch) -> str:
    """The adapters a program can be given by index: under Wine, the Vulkan devices the installed drivers find
    (Wine's DXGI enumerates those), as vulkaninfo lists them; on Windows, DXGI's own (not listed from here)."""
    if started.wine is None:
        return "from 0 in DXGI's order (dxdiag lists them); --warp for Windows' software adapter"
    drivers = vulkan_drivers()
    names = ", ".join(dict.fromkeys(d.typed for d in drivers)) or "none"
    devices = _vulkan_device_names()
    if not devices:
        return (f"from 0, one per Vulkan device of the drivers installed ({names}); `dmlconform doctor` lists each "
                "driver's devices")
    listed = "; ".join(f"{number}: {name}" for number, name in enumerate(devices))
    return f"{listed} (the Vulkan devices of {names}); or --adapter DRIVER (e.g. --adapter lavapipe)"


def _vulkan_device_names() -> list[str]:
    """The Vulkan devices every installed driver finds, in the loader's order (vulkaninfo --summary); [] without
    vulkaninfo."""
    vulkaninfo = shutil.which("vulkaninfo")
    if vulkaninfo is None:
        return []
    try:
        done = subprocess.run([vulkaninfo, "--summary"], capture_output=True, text=True, timeout=30, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return []
    return [line.split("=", 1)[1].strip() for line in done.stdout.splitlines()
            if line.strip().startswith("deviceName") and "=" in line]


# -- starting a program --------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Launch:
    """A program's command line and the environment variables it needs besides the caller's."""

    argv: tuple[str, ...]
    environment: Mapping[str, str]
    wine: Wine | None = None
    prefix: Path | None = None
    vulkan_driver: VulkanDriver | None = None

    def describe(self) -> str:
        import shlex

        settings = " ".join(f"{k}={v}" for k, v in sorted(self.environment.items())
                            if k.startswith(("WINEPREFIX", "VK_ICD", "DISPLAY")))
        return (settings + " " if settings else "") + shlex.join(self.argv)

    def command_line(self) -> str:
        """The whole start as one command line for `--backend native --harness` (through env(1)): to run the packaged
        program with options of one's own, as the benchmarks and probes do."""
        import shlex

        settings = [f"{key}={value}" for key, value in sorted(self.environment.items())]
        return shlex.join([*(["env", *settings] if settings else []), *self.argv])


def _wine_environment(prefix: Path, driver: VulkanDriver | None, environ: Mapping[str, str] | None = None,
                      virtual_heaps: bool = False) -> dict[str, str]:
    given = os.environ if environ is None else environ
    env = {"WINEPREFIX": str(prefix), "WINEARCH": "win64",
           "WINEDEBUG": given.get("WINEDEBUG", "-all"),
           # winedbg off: a program that crashes (a DirectML.dll that faults while loading) then ends, instead of
           # waiting in Wine's debugger for the handshake to time out and staying behind.
           "WINEDLLOVERRIDES": given.get("WINEDLLOVERRIDES", "mscoree,mshtml=;winemenubuilder.exe,winedbg.exe=d"),
           # vkd3d's own errors only, so a dropped dispatch still shows on stderr.
           "VKD3D_DEBUG": given.get("VKD3D_DEBUG", "err"),
           "VKD3D_SHADER_DEBUG": given.get("VKD3D_SHADER_DEBUG", "err")}
    if driver is not None:
        env["VK_ICD_FILENAMES"] = env["VK_DRIVER_FILES"] = str(driver.manifest)
    if virtual_heaps and "VKD3D_CONFIG" not in given and on_lavapipe(driver, given):
        env["VKD3D_CONFIG"] = "virtual_heaps"
    return env


def on_lavapipe(driver: VulkanDriver | None, environ: Mapping[str, str] | None = None) -> bool:
    """Whether the program's Vulkan device is lavapipe: the chosen driver, or, with none chosen, every one installed."""
    drivers = [driver] if driver is not None else vulkan_drivers(environ)
    return bool(drivers) and all(d.name.startswith("lvp") for d in drivers)


def launch(program: Path, arguments: list[str], dll_paths: dict[str, Path], vulkan: str | None,
           log: Callable[[str], None], environ: Mapping[str, str] | None = None,
           virtual_heaps: bool = False) -> Launch:
    """How to start `program` with `arguments`; `dll_paths` are options naming DLLs (e.g. {"--dml": path}), given
    in the form the program reads them (a Wine path under Wine). Makes the prefix when needed.

    `virtual_heaps`: on lavapipe, vkd3d's virtual descriptor heaps (VKD3D_CONFIG=virtual_heaps, unless the caller
    sets VKD3D_CONFIG). vkd3d otherwise backs a shader-visible descriptor heap with Vulkan descriptor sets of the
    device's largest size, which lavapipe fills in host memory: 1.2 s for a program's first heap, a third of the
    harness's standard tier. Only for the DirectML harness: its outputs are the same bit for bit on both tiers
    (docs/directml-speed.md); the ONNX Runtime host crashes in vkd3d under virtual heaps (SIGSEGV in most DML EP
    sessions), so it keeps the default and its own heap pool."""
    env = os.environ if environ is None else environ
    if not needs_wine():
        if vulkan is not None:
            raise WineUnavailable(f"--adapter {vulkan}: a Vulkan driver is chosen only under Wine; on Windows give "
                                  "the adapter's index (--adapter N) or --warp")
        dll_args = [a for option, path in dll_paths.items() for a in (option, str(path))]
        return Launch((str(program), *dll_args, *arguments), {})
    machine = platform.machine().lower()
    if machine not in ("x86_64", "amd64"):
        raise WineUnavailable(f"the Windows programs are x86-64 and this machine is {machine or 'unknown'}: Wine runs "
                              "them on x86-64 Linux only (DirectML itself: Windows, or an x86-64 Linux machine)")
    wine = find_wine(env)
    prefix = wine_prefix(wine, env)
    ensure_prefix(wine, prefix, log)
    driver = choose_vulkan_driver(vulkan, env) if vulkan is not None else None
    dll_args = [a for option, path in dll_paths.items() for a in (option, windows_path(path))]
    environment = {**_wine_environment(prefix, driver, env, virtual_heaps), "DISPLAY": prefix_display(prefix)}
    return Launch((str(wine.loader), str(program), *dll_args, *arguments), environment, wine, prefix, driver)


def prepare_prefix(log: Callable[[str], None]) -> None:
    """Once per command, before any program starts under Wine: the prefix made (a minute's work the first time), its
    wineserver started to linger for the next programs, its display up. Nothing where Wine is not needed;
    WineUnavailable (one line) when it is and cannot be had."""
    if not needs_wine():
        return
    wine = find_wine()
    prefix = wine_prefix(wine)
    ensure_prefix(wine, prefix, log)
    keep_wineserver(wine, prefix)
    prefix_display(prefix)
