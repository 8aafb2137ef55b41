"""The bounded PE reader: a synthetic DirectML-like DLL reads back what it was built with; every damaged, hostile
or wrong file is a one-line DllError naming the file, never another exception, and never a hang."""

from __future__ import annotations

import hashlib
import struct
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from dmlconform.directml.pe import (
    DllError,
    DllFacts,
    check_directml,
    check_onnxruntime,
    parse_dll,
    read_dll,
)
from tests.directml.pe_files import (
    ARM64,
    DIRECTML_STRINGS,
    X86,
    VersionResource,
    build_pe,
    directml_dll,
    onnxruntime_dll,
)
from tests.properties import PROPERTIES


def _real_directml() -> list[Path]:
    """The DirectML.dll of `dmlconform fetch directml` (the default release), if the cache holds it."""
    from dmlconform.directml.library import DEFAULT_VERSION, cache_root

    return [cache_root() / "directml" / DEFAULT_VERSION / "DirectML.dll"]


REAL_DIRECTML = _real_directml()
FETCH_HINT = "as in the win_amd64 onnxruntime-directml wheel: dmlconform fetch directml"


def write(tmp_path: Path, data: bytes, name: str = "DirectML.dll") -> Path:
    path = tmp_path / name
    path.write_bytes(data)
    return path


def refusal(path: Path, check=read_dll, **keywords) -> str:
    """The message of the DllError that reading `path` gives: one line that starts with the file's name."""
    with pytest.raises(DllError) as caught:
        check(path, **keywords)
    message = str(caught.value)
    assert message.startswith(f"{path}: ") and "\n" not in message, message
    return message


def patched(data: bytes, offset: int, fmt: str, *values: int) -> bytes:
    damaged = bytearray(data)
    struct.pack_into(fmt, damaged, offset, *values)
    return bytes(damaged)


def test_a_directml_like_dll_reads_back_its_machine_exports_version_and_strings(tmp_path: Path) -> None:
    data = directml_dll()
    path = write(tmp_path, data)
    facts = read_dll(path)
    assert facts == DllFacts(path=str(path), size=len(data), sha256=hashlib.sha256(data).hexdigest(), machine="x64",
                             is_dll=True, exports=frozenset({"DMLCreateDevice", "DMLCreateDevice1"}),
                             file_version="1.15.4.0", strings=DIRECTML_STRINGS)
    assert check_directml(path) == facts


def test_pe32_and_other_machines_read_back(tmp_path: Path) -> None:
    assert read_dll(write(tmp_path, directml_dll(pe32_plus=False, machine=X86))).machine == "x86"
    assert read_dll(write(tmp_path, directml_dll(machine=ARM64))).machine == "arm64"
    assert read_dll(write(tmp_path, directml_dll(machine=0x1234))).machine == "unknown 0x1234"
    assert read_dll(write(tmp_path, directml_dll(dll=False))).is_dll is False


def test_onnxruntime_dll_passes_its_own_check(tmp_path: Path) -> None:
    facts = check_onnxruntime(write(tmp_path, onnxruntime_dll(), "onnxruntime.dll"))
    assert "OrtGetApiBase" in facts.exports and facts.file_version == "1.24.4.0"
    assert "not ONNX Runtime: it does not export OrtGetApiBase (it says it is DirectML.dll)" in refusal(
        write(tmp_path, directml_dll()), check_onnxruntime)


def test_no_version_resource_reads_as_none_and_directml_refuses_it(tmp_path: Path) -> None:
    path = write(tmp_path, directml_dll(version=None))
    assert read_dll(path).file_version is None and read_dll(path).strings == {}
    assert "no file version (no VS_VERSIONINFO resource" in refusal(path, check_directml)
    # Strings but no VS_FIXEDFILEINFO: still no file version.
    path = write(tmp_path, directml_dll(version=VersionResource(None)))
    assert read_dll(path).strings["OriginalFilename"] == "DirectML.dll"
    assert "no file version" in refusal(path, check_directml)


@pytest.mark.parametrize(("changes", "expected"), [
    ({"pe32_plus": False, "machine": X86},
     f"a 32-bit (x86) DLL; DirectML needs the 64-bit (x64) DirectML.dll, {FETCH_HINT}"),
    ({"machine": ARM64}, "an ARM64 (arm64) DLL; DirectML needs the 64-bit (x64) DirectML.dll"),
    ({"machine": 0x1234}, "a DLL for machine 0x1234; DirectML needs the 64-bit (x64) DirectML.dll"),
    ({"dll": False}, "a program, not a DLL (IMAGE_FILE_DLL is not set)"),
    ({"exports": ("OrtGetApiBase",), "version": VersionResource((1, 24, 4, 0), {"OriginalFilename": "onnxruntime.dll"})},
     "not DirectML: it exports neither DMLCreateDevice nor DMLCreateDevice1 (it says it is onnxruntime.dll)"),
    ({"exports": ("Other",), "version": VersionResource((1, 0, 0, 0), {"FileDescription": "Some Library"})},
     "not DirectML: it exports neither DMLCreateDevice nor DMLCreateDevice1 (it says it is Some Library)"),
    ({"exports": (), "version": None},
     "not DirectML: it exports neither DMLCreateDevice nor DMLCreateDevice1 (it says it is an unnamed DLL)"),
])
def test_check_directml_refuses_the_wrong_dll_saying_why(tmp_path: Path, changes: dict, expected: str) -> None:
    assert expected in refusal(write(tmp_path, directml_dll(**changes)), check_directml)


def test_either_directml_entry_point_will_do(tmp_path: Path) -> None:
    assert check_directml(write(tmp_path, directml_dll(exports=("DMLCreateDevice",)))).file_version == "1.15.4.0"
    assert check_directml(write(tmp_path, directml_dll(exports=("DMLCreateDevice1",)))).file_version == "1.15.4.0"


BUILT = build_pe()


@pytest.mark.parametrize(("cut", "expected"), [
    (0, "an empty file (0 bytes), not a DLL"),
    (40, "truncated: the DOS header ends at byte 64 of 40"),
    (66, "truncated: the PE signature ends at byte 68 of 66"),
    (80, "truncated: the COFF header ends at byte 88 of 80"),
    (BUILT.optional_header + 50, f"truncated: the optional header ends at byte {BUILT.optional_header + 112}"),
    (BUILT.optional_header + 150, f"truncated: the data directories ends at byte {BUILT.optional_header + 240}"),
    (BUILT.section_table + 50, f"truncated: the section table ends at byte {BUILT.section_table + 80} of "
                               f"{BUILT.section_table + 50}"),
    # A download cut short inside a section is refused whether or not the cut lands on a structure read here.
    (BUILT.export_directory + 20, f"truncated: section '.edata' ends at byte 1024 of {BUILT.export_directory + 20}"),
    (BUILT.export_names + 5, "truncated: section '.edata' ends at byte 1024"),
    (BUILT.resource_root + 8, f"truncated: section '.rsrc' ends at byte 2048 of {BUILT.resource_root + 8}"),
    (BUILT.version_info + 100, "truncated: section '.rsrc' ends at byte 2048"),
    (len(BUILT.data) - 1, f"truncated: section '.rsrc' ends at byte 2048 of {len(BUILT.data) - 1}"),
])
def test_a_file_cut_short_is_refused_naming_what_it_cuts(tmp_path: Path, cut: int, expected: str) -> None:
    assert expected in refusal(write(tmp_path, BUILT.data[:cut]))


@pytest.mark.parametrize(("data", "expected"), [
    (b"\x7fELF" + bytes(200), r"not a Windows DLL: it starts with b'\x7fELF', not the DOS header's 'MZ'"),
    (patched(BUILT.data, 0x3C, "<I", 0x10), "e_lfanew (byte 60) points at byte 16, where no PE header can be"),
    (patched(BUILT.data, 0x3C, "<I", 0x41), "e_lfanew (byte 60) points at byte 65"),
    (patched(BUILT.data, 0x3C, "<I", 0x7FFFFFF0), "truncated: the PE signature ends at byte 2147483636 of 2048"),
    (patched(BUILT.data, 0x3C, "<I", 0x100), "an MS-DOS program, not a DLL: no PE signature at byte 256"),
    (patched(BUILT.data, BUILT.optional_header, "<H", 0x107), "the optional header's magic at byte 88 is 0x107"),
    (patched(BUILT.data, BUILT.pe_header + 20, "<H", 100), "is 100 bytes (SizeOfOptionalHeader), too short"),
    (patched(BUILT.data, BUILT.optional_header + 112, "<I", 0x9000),
     "the export directory (RVA 0x9000) lies in no section of the file"),
    (patched(BUILT.data, BUILT.export_directory + 24, "<I", 1 << 31),
     "the export directory at byte 512 declares 2147483648 names, more than the 65536"),
    (patched(BUILT.data, BUILT.export_directory + 24, "<I", 65536), "truncated: the export name table at byte"),
    (patched(BUILT.data, BUILT.export_names, "<B", 0xE9), "export name 0 at byte 585 is not ASCII"),
    (BUILT.data[:BUILT.export_names] + b"A" * 700 + BUILT.data[BUILT.export_names + 700:],
     "export name 0 at byte 585 is longer than 512 bytes"),
    (patched(BUILT.data, BUILT.resource_root + 72 + 4, "<I", 0x10000),
     f"truncated: the version resource at byte {BUILT.version_info} ends at byte {BUILT.version_info + 0x10000}"),
    (patched(BUILT.data, BUILT.resource_root + 72, "<I", 0x20000), "the version resource (RVA 0x20000) lies in no section"),
    # .edata made 0x1000 bytes long in memory (VirtualSize) but 0x200 in the file, the name table beyond those.
    (patched(patched(BUILT.data, BUILT.section_table + 8, "<I", 0x1000), BUILT.export_directory + 32, "<I", 0x13F0),
     "the export name table (RVA 0x13f0) lies past the data that section '.edata' stores in the file"),
    (patched(BUILT.data, BUILT.fixed_file_info, "<I", 0x12345678),
     "has the signature 0x12345678, not 0xfeef04bd"),
    (patched(BUILT.data, BUILT.version_info + 6, "<H", ord("X")), "starts with the key 'XS_VERSION_INFO'"),
    (patched(BUILT.data, BUILT.version_info, "<H", 0xFFFF), "declares 65535 bytes (wLength)"),
    (patched(BUILT.data, BUILT.resource_root + 14, "<H", 0xFFFF), "declares 65535 entries, more than the 4096"),
])
def test_a_damaged_or_hostile_file_is_refused_saying_what_and_where(tmp_path: Path, data: bytes, expected: str) -> None:
    assert expected in refusal(write(tmp_path, data))


def test_a_resource_directory_that_loops_is_refused_not_followed(tmp_path: Path) -> None:
    # The name directory's entry points back at the root: type -> root -> type -> … without the visited set.
    looping = patched(BUILT.data, BUILT.resource_name_entry + 4, "<I", 0x80000000)
    assert "the resource directory at byte 1024 is reached twice: the resource tree loops" in refusal(
        write(tmp_path, looping))
    itself = patched(BUILT.data, BUILT.resource_name_entry + 4, "<I", 0x80000000 | 24)  # at its own directory
    assert "is reached twice" in refusal(write(tmp_path, itself))


def test_a_file_over_max_bytes_is_refused_before_it_is_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = write(tmp_path, BUILT.data)
    monkeypatch.setattr("builtins.open", lambda *args, **kwargs: pytest.fail("opened a file over the limit"))
    assert "2048 bytes, more than the 1000 a DLL may have here" in refusal(path, max_bytes=1000)


def test_a_missing_file_a_folder_or_an_unreadable_file_is_refused(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    assert "no such file" in refusal(tmp_path / "absent.dll")
    assert "no such file" in refusal(tmp_path / "absent.dll", check_directml)
    assert "a folder, not a DLL" in refusal(tmp_path, check_directml)
    unreadable = write(tmp_path, BUILT.data)

    def denied(*args, **kwargs):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr("builtins.open", denied)  # as root, chmod 0 would not stop the read
    assert "cannot be read (Permission denied): check its permissions" in refusal(unreadable, check_directml)


def test_check_directml_says_a_damaged_file_is_not_usable_and_how_to_get_one(tmp_path: Path) -> None:
    message = refusal(write(tmp_path, BUILT.data[:300]), check_directml)
    assert message.endswith(f"; not a usable DirectML.dll: get it afresh, {FETCH_HINT}")


@pytest.mark.slow
@pytest.mark.parametrize("base", [build_pe().data, build_pe(pe32_plus=False, machine=X86).data],
                         ids=["pe32+", "pe32"])
def test_every_prefix_and_every_overwritten_byte_gives_facts_or_a_dll_error(base: bytes) -> None:
    for cut in range(len(base)):
        with pytest.raises(DllError):
            parse_dll(base[:cut])
    for offset in range(len(base)):
        for value in (0x00, 0x7F, 0x80, 0xFF):
            damaged = bytearray(base)
            damaged[offset] = value
            try:
                parse_dll(bytes(damaged))
            except DllError as error:
                assert "\n" not in str(error)


#: Values that land on bounds when written over a count, an offset or a length.
INTERESTING = st.sampled_from([0, 1, 2, 3, 4, 0x7F, 0x80, 0xFF, 0xFFFF, 0x8000_0000, 0x7FFF_FFFF, 0xFFFF_FFFF,
                               0x1000, 0x2000, 0x200, 0x400, 1024, 2048])


@st.composite
def mutated(draw: st.DrawFn) -> bytes:
    data = bytearray(draw(st.sampled_from([BUILT.data, build_pe(pe32_plus=False).data, onnxruntime_dll()])))
    for _ in range(draw(st.integers(1, 8))):
        offset = draw(st.integers(0, len(data) - 1))
        kind = draw(st.sampled_from(["byte", "u16", "u32", "delete", "insert"]))
        if kind == "byte":
            data[offset] = draw(st.integers(0, 255))
        elif kind in ("u16", "u32"):
            width = 2 if kind == "u16" else 4
            value = draw(INTERESTING) & (0xFFFF if width == 2 else 0xFFFF_FFFF)
            data[offset:offset + width] = value.to_bytes(width, "little")
        elif kind == "delete":
            del data[offset:offset + draw(st.integers(1, 64))]
        else:
            data[offset:offset] = draw(st.binary(min_size=1, max_size=64))
        if not data:
            break
    return bytes(data)


@PROPERTIES
@given(data=mutated())
def test_arbitrary_mutations_give_facts_or_a_dll_error(data: bytes) -> None:
    try:
        facts = parse_dll(data, "mutated.dll")
    except DllError as error:
        assert str(error).startswith("mutated.dll: ") and "\n" not in str(error)
    else:
        assert facts.size == len(data)


@pytest.mark.parametrize("path", [p for p in REAL_DIRECTML if p.is_file()] or
                         [pytest.param(None, marks=pytest.mark.skip(reason="no real DirectML.dll on this machine"))])
def test_the_real_directml_reads_as_x64_directml_1_15_4(path: Path) -> None:
    facts = check_directml(path)
    assert facts.machine == "x64" and facts.is_dll and "DMLCreateDevice1" in facts.exports
    if facts.sha256 == "c07cb8c2f870f0152bfb690f64c4b048e78bbc219efad420a9758fc896cbecb0":  # onnxruntime-directml 1.24.4
        assert facts.file_version == "1.15.4.0" and facts.strings["OriginalFilename"] == "DirectML.dll"
