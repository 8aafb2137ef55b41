"""Starting the Windows programs under Wine (dmlconform/directml/wine.py): finding Wine, our prefix (made once, checked
each time, remade when broken), Vulkan drivers by name, the display, and the command line. A fake Wine (a shell
script that makes what wineboot makes) shows the logic in milliseconds; one test makes a prefix with the real Wine."""

from __future__ import annotations

import json
import os
import shutil
import stat
import time
from pathlib import Path

import pytest

from dmlconform.directml import wine
from dmlconform.directml.start import Device, StartError

FAKE_WINE = r"""#!/bin/sh
# A stand-in for the Wine loader: --version, and what `wineboot -i` leaves in WINEPREFIX.
case "$1" in
  --version) echo "wine-8.0 (fake)"; exit 0 ;;
  wineboot)
    [ -n "$FAKE_WINEBOOT_FAILS" ] && exit 1
    mkdir -p "$WINEPREFIX/drive_c/windows/system32" "$WINEPREFIX/dosdevices"
    ln -sf / "$WINEPREFIX/dosdevices/z:"
    head -c 200 /dev/zero | tr '\0' x > "$WINEPREFIX/system.reg"
    head -c 200 /dev/zero | tr '\0' x > "$WINEPREFIX/user.reg"
    echo boot >> "$WINEPREFIX/../wineboot.log" ;;
  reg) echo "$@" >> "$WINEPREFIX/../reg.log" ;;
esac
exit 0
"""


def _executable(path: Path, text: str) -> Path:
    path.write_text(text)
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


@pytest.fixture
def fake_wine(tmp_path: Path) -> wine.Wine:
    loader = _executable(tmp_path / "wine64", FAKE_WINE)
    return wine.find_wine({"WINE": str(loader), "PATH": ""})


def test_wine_is_found_by_its_version_and_a_missing_one_is_one_line_with_the_fix(tmp_path: Path) -> None:
    loader = _executable(tmp_path / "wine64", FAKE_WINE)
    found = wine.find_wine({"WINE": str(loader), "PATH": ""})
    assert found.version == "wine-8.0 (fake)" and found.loader == loader
    with pytest.raises(wine.WineUnavailable, match=r"^no Wine \(WINE=/nowhere/wine64 is not an executable file\): "
                                                   r"apt-get install wine64"):
        wine.find_wine({"WINE": "/nowhere/wine64", "PATH": ""})
    not_wine = _executable(tmp_path / "true-wine", "#!/bin/sh\necho hello\n")
    with pytest.raises(wine.WineUnavailable, match=r"is not a Wine loader .*'hello'"):
        wine.find_wine({"WINE": str(not_wine), "PATH": ""})


def test_wine_is_asked_its_version_once_per_loader_and_again_once_the_loader_changes(tmp_path: Path) -> None:
    calls = tmp_path / "calls"
    counting = FAKE_WINE.replace('--version) echo', f'--version) echo x >> {calls}; echo')
    loader = _executable(tmp_path / "wine64", counting)
    env = {"WINE": str(loader), "PATH": ""}
    assert wine.find_wine(env) == wine.find_wine(env)
    assert calls.read_text().split() == ["x"]
    _executable(loader, counting.replace("(fake)", "(fake, rebuilt)"))
    assert wine.find_wine(env).version == "wine-8.0 (fake, rebuilt)"
    assert calls.read_text().split() == ["x", "x"]


def test_the_prefix_wineserver_is_started_to_linger_for_the_next_programs(tmp_path: Path) -> None:
    server = _executable(tmp_path / "wineserver", "#!/bin/sh\necho \"$WINEPREFIX $*\" >> \"$(dirname \"$0\")/server.log\"\n")
    loader = _executable(tmp_path / "wine64", FAKE_WINE)
    found = wine.find_wine({"WINE": str(loader), "PATH": ""})
    assert found.server == server
    wine.keep_wineserver(found, tmp_path / "prefix")
    log = tmp_path / "server.log"
    for _ in range(100):  # started in the background, in a session of its own
        if log.exists():
            break
        time.sleep(0.05)
    assert log.read_text() == f"{tmp_path / 'prefix'} -p{wine.WINESERVER_LINGER_S}\n"
    wine.keep_wineserver(wine.Wine(loader, None, "wine-8.0 (fake)"), tmp_path / "prefix")  # none found: nothing


def test_a_linux_path_is_drive_z_under_wine(tmp_path: Path) -> None:
    assert wine.windows_path(Path("/opt/x/DirectML.dll")) == r"Z:\opt\x\DirectML.dll"


def test_the_prefix_is_made_once_and_each_kind_of_breakage_is_named_and_remade(fake_wine: wine.Wine,
                                                                                tmp_path: Path) -> None:
    prefix = tmp_path / "cache" / "prefix"
    assert wine.prefix_problem(prefix, fake_wine) == "it does not exist yet"
    lines: list[str] = []
    wine.ensure_prefix(fake_wine, prefix, lines.append)
    assert wine.prefix_problem(prefix, fake_wine) == ""
    assert lines == [f"making a Wine prefix at {prefix} (once; about half a minute)"]
    assert "renderer /d vulkan" in (tmp_path / "cache" / "reg.log").read_text()
    wine.ensure_prefix(fake_wine, prefix, lines.append)  # ready: nothing is done
    assert (tmp_path / "cache" / "wineboot.log").read_text().count("boot") == 1

    breakages = {
        "it was never completed (an interrupted set-up)": lambda: (prefix / wine.READY_MARK).unlink(),
        "system.reg is empty": lambda: (prefix / "system.reg").write_text(""),
        "user.reg is missing": lambda: (prefix / "user.reg").unlink(),
        "drive_c/windows/system32 is missing": lambda: shutil.rmtree(prefix / "drive_c"),
        "drive Z: (the root folder) is missing": lambda: (prefix / "dosdevices" / "z:").unlink(),
        f"{wine.READY_MARK} is unreadable": lambda: (prefix / wine.READY_MARK).write_text("{"),
        "it was made by wine-7.0, not wine-8.0 (fake)":
            lambda: (prefix / wine.READY_MARK).write_text(json.dumps({"wine": "wine-7.0"})),
    }
    for problem, breaking in breakages.items():
        breaking()
        assert wine.prefix_problem(prefix, fake_wine).startswith(problem)
        lines.clear()
        wine.ensure_prefix(fake_wine, prefix, lines.append)
        assert lines and lines[0].startswith(f"remaking the Wine prefix {prefix}: {problem}")
        assert wine.prefix_problem(prefix, fake_wine) == ""


def test_a_wineboot_that_makes_nothing_is_one_line_and_leaves_no_ready_mark(fake_wine: wine.Wine, tmp_path: Path,
                                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FAKE_WINEBOOT_FAILS", "1")
    prefix = tmp_path / "prefix"
    with pytest.raises(wine.WineUnavailable, match=f"Wine could not make a prefix at {prefix}: wineboot made no "
                                                   "registry"):
        wine.ensure_prefix(fake_wine, prefix, lambda line: None)
    assert not (prefix / wine.READY_MARK).exists()


def test_our_prefix_is_under_the_cache_one_per_wine_version(fake_wine: wine.Wine, tmp_path: Path) -> None:
    assert wine.wine_prefix(fake_wine, {"DMLCONFORM_CACHE": str(tmp_path)}) == tmp_path / "wine" / "prefix-wine-8.0"
    assert wine.wine_prefix(fake_wine, {wine.PREFIX_ENV: "/p"}) == Path("/p")


def _manifest(folder: Path, name: str, library: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.json"
    path.write_text(json.dumps({"file_format_version": "1.0.0", "ICD": {"library_path": library,
                                                                       "api_version": "1.3.0"}}))
    return path


def test_vulkan_drivers_are_chosen_by_the_names_people_use(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = tmp_path / "icd.d"
    lvp = _manifest(folder, "lvp_icd.x86_64", "/usr/lib/x86_64-linux-gnu/libvulkan_lvp.so")
    _manifest(folder, "lvp_icd.i686", "/usr/lib/i386-linux-gnu/libvulkan_lvp.so")
    nvidia = _manifest(folder, "nvidia_icd", "libGLX_nvidia.so.0")
    (folder / "broken.json").write_text("{not json")
    monkeypatch.setattr(wine, "ICD_FOLDERS", (str(folder),))
    found = wine.vulkan_drivers({})
    assert [d.name for d in found] == ["lvp_icd.x86_64", "nvidia_icd"]  # 32-bit and unreadable manifests left out
    assert wine.choose_vulkan_driver("lavapipe", {}).manifest == lvp
    assert wine.choose_vulkan_driver("nvidia", {}).manifest == nvidia
    assert wine.choose_vulkan_driver(str(nvidia), {}).library == "libGLX_nvidia.so.0"
    with pytest.raises(wine.WineUnavailable, match=r"--adapter radeon: no radeon Vulkan driver here \(installed: "
                                                   r"lavapipe, nvidia\); it comes with apt-get install mesa-vulkan"):
        wine.choose_vulkan_driver("radeon", {})
    with pytest.raises(wine.WineUnavailable, match="not a readable Vulkan driver manifest"):
        wine.choose_vulkan_driver(str(folder / "broken.json"), {})
    monkeypatch.setattr(wine, "ICD_FOLDERS", (str(tmp_path / "none"),))
    with pytest.raises(wine.WineUnavailable, match=r"no Vulkan driver is installed; lavapipe, Mesa's CPU driver, comes "
                                                   "with apt-get install mesa-vulkan-drivers"):
        wine.choose_vulkan_driver("lavapipe", {})


def test_a_mistyped_or_absent_driver_names_the_near_miss_and_the_installed_names(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = tmp_path / "icd.d"
    _manifest(folder, "lvp_icd.x86_64", "/usr/lib/x86_64-linux-gnu/libvulkan_lvp.so")
    _manifest(folder, "intel_icd.x86_64", "/usr/lib/x86_64-linux-gnu/libvulkan_intel.so")
    _manifest(folder, "intel_hasvk_icd.x86_64", "/usr/lib/x86_64-linux-gnu/libvulkan_intel_hasvk.so")
    monkeypatch.setattr(wine, "ICD_FOLDERS", (str(folder),))
    with pytest.raises(wine.WineUnavailable) as typo:
        wine.choose_vulkan_driver("lavapip", {})
    assert str(typo.value) == ("--adapter lavapip: no Vulkan driver of that name (did you mean lavapipe?); installed: "
                               "intel_hasvk, intel, lavapipe (or give an adapter index, or a driver manifest's path)")
    with pytest.raises(wine.WineUnavailable) as absent:
        wine.choose_vulkan_driver("nvidia", {})
    assert str(absent.value) == ("--adapter nvidia: no nvidia Vulkan driver here (installed: intel_hasvk, intel, "
                                 "lavapipe); it comes with NVIDIA's GPU driver (nvidia_icd.json)")
    assert wine.choose_vulkan_driver("intel", {}).name == "intel_icd.x86_64"  # the exact name over intel_hasvk


def test_the_command_line_runs_the_program_under_wine_with_its_dlls_as_wine_paths(
        fake_wine: wine.Wine, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(wine, "needs_wine", lambda: True)
    monkeypatch.setattr(wine, "prefix_display", lambda prefix: ":77")
    lvp = _manifest(tmp_path / "icd.d", "lvp_icd.x86_64", "libvulkan_lvp.so")
    monkeypatch.setattr(wine, "ICD_FOLDERS", (str(tmp_path / "icd.d"),))
    environ = {"WINE": str(fake_wine.loader), "PATH": "", wine.PREFIX_ENV: str(tmp_path / "prefix")}
    started = wine.launch(Path("/opt/p/dml_harness.exe"), ["--adapter", "0"], {"--dml": Path("/c/DirectML.dll")},
                          "lavapipe", lambda line: None, environ)
    assert started.argv == (str(fake_wine.loader), "/opt/p/dml_harness.exe", "--dml", r"Z:\c\DirectML.dll",
                            "--adapter", "0")
    assert started.environment["WINEPREFIX"] == str(tmp_path / "prefix")
    assert started.environment["VK_ICD_FILENAMES"] == started.environment["VK_DRIVER_FILES"] == str(lvp)
    assert started.environment["WINEARCH"] == "win64" and wine.prefix_problem(tmp_path / "prefix", fake_wine) == ""
    assert started.environment["DISPLAY"] == ":77"
    assert started.command_line().startswith("env DISPLAY=:77 VKD3D_DEBUG=err ")


def test_a_machine_that_is_not_x86_64_is_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(wine, "needs_wine", lambda: True)
    monkeypatch.setattr(wine.platform, "machine", lambda: "aarch64")
    with pytest.raises(wine.WineUnavailable, match="the Windows programs are x86-64 and this machine is aarch64"):
        wine.launch(Path("/p/dml_harness.exe"), [], {}, None, lambda line: None, {})


def test_no_display_and_no_xvfb_is_one_line(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(wine.shutil, "which", lambda name, path=None: None)
    monkeypatch.delenv("DISPLAY", raising=False)
    (tmp_path / "prefix").mkdir()
    with pytest.raises(wine.WineUnavailable, match=r"no X display for Wine \(DISPLAY is unset\) and no Xvfb to make "
                                                   "one: apt-get install xvfb"):
        wine.prefix_display(tmp_path / "prefix")


@pytest.mark.skipif(shutil.which("Xvfb") is None, reason="no Xvfb (apt-get install xvfb)")
def test_the_prefix_keeps_one_display_for_every_program_and_makes_another_when_it_is_gone(tmp_path: Path) -> None:
    prefix = tmp_path / "prefix"
    prefix.mkdir()
    try:
        first = wine.prefix_display(prefix)
        assert first.startswith(":") and wine.prefix_display(prefix) == first  # every program: the same display
        assert wine.live_display(prefix / wine.DISPLAY_RECORD) == first
        wine.stop_display(prefix)
        deadline = time.monotonic() + 10
        while wine.live_display(prefix / wine.DISPLAY_RECORD) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert wine.live_display(prefix / wine.DISPLAY_RECORD) == ""
        assert wine.prefix_display(prefix).startswith(":")  # a new one, the record rewritten
    finally:
        wine.stop_display(prefix)


@pytest.mark.parametrize(("adapter", "warp", "expected"), [
    (None, False, Device()), ("1", False, Device(index=1)), ("lavapipe", False, Device(vulkan_driver="lavapipe")),
    ("/x/nvidia_icd.json", False, Device(vulkan_driver="/x/nvidia_icd.json")), (None, True, Device(warp=True)),
])
def test_adapter_is_an_index_or_a_vulkan_driver(adapter: str | None, warp: bool, expected: Device) -> None:
    assert Device.parse(adapter, warp) == expected


def test_warp_is_windows_only_and_not_beside_a_driver(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(StartError, match="--warp with --adapter lavapipe"):
        Device.parse("lavapipe", True)
    monkeypatch.setattr("sys.platform", "linux")
    with pytest.raises(StartError, match="WARP, Windows' software adapter, does not exist under Wine; for a CPU "
                                         "device use --adapter lavapipe"):
        Device(warp=True).arguments()
    assert Device(index=2).arguments() == ["--adapter", "2"]


@pytest.mark.slow
@pytest.mark.skipif(not os.access("/usr/lib/wine/wine64", os.X_OK) and shutil.which("wine64") is None,
                    reason="no Wine (apt-get install wine64)")
def test_the_real_wine_makes_a_usable_prefix_and_remakes_a_broken_one(tmp_path: Path) -> None:
    found = wine.find_wine()
    prefix = tmp_path / "prefix"
    wine.ensure_prefix(found, prefix, lambda line: None)
    assert wine.prefix_problem(prefix, found) == ""
    assert '"renderer"="vulkan"' in (prefix / "user.reg").read_text()
    (prefix / "system.reg").write_text("")
    lines: list[str] = []
    wine.ensure_prefix(found, prefix, lines.append)
    assert lines == [f"remaking the Wine prefix {prefix}: system.reg is empty"]
    assert wine.prefix_problem(prefix, found) == ""


def test_virtual_descriptor_heaps_only_where_asked_on_lavapipe_and_never_over_the_callers(
        fake_wine: wine.Wine, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(wine, "needs_wine", lambda: True)
    monkeypatch.setattr(wine, "prefix_display", lambda prefix: ":77")
    _manifest(tmp_path / "icd.d", "lvp_icd.x86_64", "libvulkan_lvp.so")
    _manifest(tmp_path / "icd.d", "nvidia_icd", "libGLX_nvidia.so.0")
    monkeypatch.setattr(wine, "ICD_FOLDERS", (str(tmp_path / "icd.d"),))
    environ = {"WINE": str(fake_wine.loader), "PATH": "", wine.PREFIX_ENV: str(tmp_path / "prefix")}

    def config(adapter: str | None, virtual_heaps: bool, extra: dict[str, str] | None = None) -> str | None:
        started = wine.launch(Path("/opt/p/dml_harness.exe"), [], {}, adapter, lambda line: None,
                              {**environ, **(extra or {})}, virtual_heaps=virtual_heaps)
        return started.environment.get("VKD3D_CONFIG")

    assert config("lavapipe", True) == "virtual_heaps"
    assert config("lavapipe", False) is None  # the ONNX Runtime host
    assert config("nvidia", True) is None
    assert config(None, True) is None  # no driver chosen, and not every installed one is lavapipe
    assert config("lavapipe", True, {"VKD3D_CONFIG": ""}) is None  # the caller's own setting stands
