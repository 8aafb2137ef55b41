"""Synthetic Windows PE files for the tests: a DLL or program, PE32+ or PE32, with an export table of the names
given and an optional RT_VERSION resource, laid out as a linker would (two sections, .edata and .rsrc), so that
the tests need no real DLL. `BuiltPe` says where each structure landed, for tests that damage one of them."""

from __future__ import annotations

import io
import struct
import zipfile
from dataclasses import dataclass, field

X64 = 0x8664
X86 = 0x014C
ARM64 = 0xAA64
DIRECTML_EXPORTS = ("DMLCreateDevice", "DMLCreateDevice1")
DIRECTML_STRINGS = {"CompanyName": "Microsoft Corporation", "FileDescription": "DirectML Library",
                    "FileVersion": "1.15.4+241025-1615.1.dml-1.15.fac7597", "InternalName": "DirectML.dll",
                    "OriginalFilename": "DirectML.dll", "ProductName": "DirectML Redistributable Library",
                    "ProductVersion": "1.15.4+241025-1615.1.dml-1.15.fac7597"}
ONNXRUNTIME_STRINGS = {"CompanyName": "Microsoft Corporation", "FileDescription": "ONNX Runtime",
                       "OriginalFilename": "onnxruntime.dll", "ProductName": "Microsoft® Windows® Operating System"}
FILE_ALIGNMENT = 0x200
SECTION_ALIGNMENT = 0x1000


@dataclass(frozen=True)
class VersionResource:
    #: None: a VS_VERSIONINFO without VS_FIXEDFILEINFO (wValueLength 0).
    file_version: tuple[int, int, int, int] | None = (1, 15, 4, 0)
    strings: dict[str, str] = field(default_factory=lambda: dict(DIRECTML_STRINGS))


@dataclass(frozen=True)
class BuiltPe:
    data: bytes
    #: File offsets of the structures, for tests that damage them.
    pe_header: int
    optional_header: int
    section_table: int
    export_directory: int
    export_names: int  # the first name's string
    resource_root: int
    resource_name_entry: int  # the entry of the name directory (RT_VERSION's only child)
    version_info: int  # VS_VERSIONINFO
    fixed_file_info: int


def build_pe(*, machine: int = X64, pe32_plus: bool = True, dll: bool = True,
             exports: tuple[str, ...] = DIRECTML_EXPORTS, dll_name: str = "DirectML.dll",
             version: VersionResource | None = VersionResource()) -> BuiltPe:
    optional_size = 240 if pe32_plus else 224
    pe_header = 64
    optional = pe_header + 24
    section_table = optional + optional_size
    headers_size = _round_up(section_table + 2 * 40, FILE_ALIGNMENT)

    export_rva = SECTION_ALIGNMENT
    edata, first_name = _export_section(export_rva, exports, dll_name)
    resource_rva = export_rva + _round_up(len(edata), SECTION_ALIGNMENT)
    rsrc, name_entry, version_at = _resource_section(resource_rva, version) if version else (b"", 0, 0)
    edata_offset = headers_size
    rsrc_offset = edata_offset + _round_up(len(edata), FILE_ALIGNMENT)

    characteristics = 0x0002 | (0x0020 if pe32_plus else 0x0100) | (0x2000 if dll else 0)
    coff = b"PE\0\0" + struct.pack("<HHIIIHH", machine, 2, 0, 0, 0, optional_size, characteristics)
    header = bytearray(optional_size)
    struct.pack_into("<H", header, 0, 0x20B if pe32_plus else 0x10B)
    struct.pack_into("<II", header, 32, SECTION_ALIGNMENT, FILE_ALIGNMENT)
    struct.pack_into("<I", header, 56, resource_rva + _round_up(max(len(rsrc), 1), SECTION_ALIGNMENT))
    struct.pack_into("<I", header, 60, headers_size)
    count_at, directories_at = (108, 112) if pe32_plus else (92, 96)
    struct.pack_into("<I", header, count_at, 16)
    struct.pack_into("<II", header, directories_at, export_rva, len(edata))
    if rsrc:
        struct.pack_into("<II", header, directories_at + 16, resource_rva, len(rsrc))
    sections = (_section_header(b".edata", export_rva, len(edata), edata_offset)
                + _section_header(b".rsrc", resource_rva, len(rsrc), rsrc_offset))

    dos = bytearray(64)
    dos[:2] = b"MZ"
    struct.pack_into("<I", dos, 0x3C, pe_header)
    image = bytearray(dos + coff + header + sections)
    image += bytes(headers_size - len(image))
    image += edata + bytes(rsrc_offset - edata_offset - len(edata))
    image += rsrc + bytes(_round_up(len(rsrc), FILE_ALIGNMENT) - len(rsrc))
    return BuiltPe(
        data=bytes(image), pe_header=pe_header, optional_header=optional, section_table=section_table,
        export_directory=edata_offset, export_names=edata_offset + first_name, resource_root=rsrc_offset,
        resource_name_entry=rsrc_offset + name_entry, version_info=rsrc_offset + version_at,
        fixed_file_info=rsrc_offset + version_at + 40 if version and version.file_version else 0)


def directml_dll(**changes: object) -> bytes:
    """A DLL that looks like DirectML 1.15.4.0 to everything but a loader."""
    return build_pe(**changes).data  # type: ignore[arg-type]


def onnxruntime_dll() -> bytes:
    return build_pe(exports=("OrtGetApiBase", "OrtSessionOptionsAppendExecutionProvider_DML"),
                    dll_name="onnxruntime.dll",
                    version=VersionResource((1, 24, 4, 0), dict(ONNXRUNTIME_STRINGS))).data


def providers_shared_dll() -> bytes:
    return build_pe(exports=("Provider_GetHost",), dll_name="onnxruntime_providers_shared.dll",
                    version=VersionResource((1, 24, 4, 0), {"OriginalFilename": "onnxruntime_providers_shared.dll"})
                    ).data


def wheel(members: dict[str, bytes] | None = None) -> bytes:
    """A wheel as onnxruntime-directml publishes it, as far as fetch reads one: its DLLs under onnxruntime/capi/."""
    if members is None:
        members = {"onnxruntime/capi/DirectML.dll": directml_dll(), "onnxruntime/capi/onnxruntime.dll": onnxruntime_dll(),
                   "onnxruntime/capi/onnxruntime_providers_shared.dll": providers_shared_dll()}
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("onnxruntime/__init__.py", "")
        for name, data in members.items():
            archive.writestr(name, data)
    return buffer.getvalue()


def _round_up(value: int, alignment: int) -> int:
    return (value + alignment - 1) // alignment * alignment


def _section_header(name: bytes, rva: int, size: int, offset: int) -> bytes:
    return struct.pack("<8sIIIIIIHHI", name, size, rva, _round_up(size, FILE_ALIGNMENT), offset, 0, 0, 0, 0,
                       0x40000040)


def _export_section(rva: int, exports: tuple[str, ...], dll_name: str) -> tuple[bytes, int]:
    """(the section, the offset in it of the first name's string)."""
    names = sorted(exports)
    count = len(names)
    functions_at = 40
    names_at = functions_at + 4 * count
    ordinals_at = names_at + 4 * count
    strings_at = ordinals_at + 2 * count
    strings = bytearray(dll_name.encode() + b"\0")
    name_rvas = []
    for name in names:
        name_rvas.append(rva + strings_at + len(strings))
        strings += name.encode() + b"\0"
    directory = struct.pack("<IIHHIIIIIII", 0, 0, 0, 0, rva + strings_at, 1, count, count,
                            rva + functions_at, rva + names_at, rva + ordinals_at)
    body = (directory + struct.pack(f"<{count}I", *([rva] * count)) + struct.pack(f"<{count}I", *name_rvas)
            + struct.pack(f"<{count}H", *range(count)) + strings)
    return body, strings_at + len(dll_name) + 1


def _resource_section(rva: int, version: VersionResource) -> tuple[bytes, int, int]:
    """(the section, the offset of the name directory's entry, the offset of VS_VERSIONINFO): type -> name ->
    language -> data, one entry each."""
    def directory(identifier: int, target: int) -> bytes:
        return struct.pack("<IIHHHH", 0, 0, 0, 0, 0, 1) + struct.pack("<II", identifier, target)

    info = version_info(version)
    root = directory(16, 0x80000000 | 24)
    names = directory(1, 0x80000000 | 48)
    languages = directory(0x409, 72)
    data_entry = struct.pack("<IIII", rva + 88, len(info), 0, 0)
    return root + names + languages + data_entry + info, 24 + 16, 88


def version_info(version: VersionResource) -> bytes:
    fixed = b""
    if version.file_version is not None:
        major, minor, build, revision = version.file_version
        fixed = struct.pack("<13I", 0xFEEF04BD, 0x10000, major << 16 | minor, build << 16 | revision,
                            major << 16 | minor, build << 16 | revision, 0x3F, 0, 0x40004, 2, 0, 0, 0)
    strings = [_block(key, (value + "\0").encode("utf-16-le"), 1, len(value) + 1, [])
               for key, value in version.strings.items()]
    table = _block("040904b0", b"", 1, 0, strings)
    string_file_info = _block("StringFileInfo", b"", 1, 0, [table])
    translation = _block("Translation", struct.pack("<HH", 0x409, 1200), 0, 4, [])
    var_file_info = _block("VarFileInfo", b"", 1, 0, [translation])
    return _block("VS_VERSION_INFO", fixed, 0, len(fixed), [string_file_info, var_file_info])


def _block(key: str, value: bytes, value_type: int, value_length: int, children: list[bytes]) -> bytes:
    """One VS_VERSIONINFO block: header, key, value and children, each child starting on a DWORD boundary."""
    body = bytearray(struct.pack("<HHH", 0, value_length, value_type) + (key + "\0").encode("utf-16-le"))
    body += bytes(-len(body) % 4) + value
    for child in children:
        body += bytes(-len(body) % 4) + child
    struct.pack_into("<H", body, 0, len(body))
    return bytes(body)
