"""What a Windows DLL says about itself, read from its bytes without loading it: machine, exports, version resource.

The file is untrusted (a download, a path a user typed, a file that another program renamed), so every offset
and count in it is checked against the file before it is followed: counts are capped, the resource tree is
walked to a fixed depth with every directory visited once, and each refusal is a one-line `DllError` naming the
file and the structure at fault. Only the structures needed are parsed (PE/COFF specification, "PE Format" on
Microsoft Learn): the DOS header, the COFF and optional headers, the section table, the export directory and the
RT_VERSION resource (VS_VERSIONINFO: VS_FIXEDFILEINFO and the StringFileInfo of its first language).
"""

from __future__ import annotations

import hashlib
import os
import stat
import struct
from dataclasses import dataclass

#: A DirectML.dll is about 18 MiB and onnxruntime.dll about 20 MiB; a file far larger is not one of them.
MAX_DLL_BYTES = 256 << 20
#: A DLL exports a few hundred names at most; the format allows 2^32, which a hostile file could declare.
MAX_EXPORTS = 65536
MAX_EXPORT_NAME_BYTES = 512
#: Entries read from one resource directory, and resource directories visited in all.
MAX_RESOURCE_ENTRIES = 4096
MAX_RESOURCE_DIRECTORIES = 64
#: Blocks of VS_VERSIONINFO read in all (a real one has about 15), and the longest key (`OriginalFilename` is 16).
MAX_VERSION_BLOCKS = 4096
MAX_VERSION_KEY_CHARS = 256

MACHINES = {0x8664: "x64", 0x014C: "x86", 0xAA64: "arm64", 0x01C0: "arm", 0x01C4: "arm"}
IMAGE_FILE_DLL = 0x2000
PE32_MAGIC = 0x10B
PE32_PLUS_MAGIC = 0x20B
EXPORT_DIRECTORY = 0
RESOURCE_DIRECTORY = 2
RT_VERSION = 16
VS_FIXEDFILEINFO_SIGNATURE = 0xFEEF04BD
FIXED_FILE_INFO_BYTES = 52

DIRECTML_EXPORTS = ("DMLCreateDevice", "DMLCreateDevice1")
ONNXRUNTIME_EXPORT = "OrtGetApiBase"
FETCH_HINT = "as in the win_amd64 onnxruntime-directml wheel: dmlconform fetch directml"


class DllError(ValueError):
    """A file that is not a readable DLL, or not the DLL wanted; one line: `<path>: <problem>`."""

    def __init__(self, path: str, problem: str) -> None:
        super().__init__(f"{path}: {problem}")
        self.path = path
        self.problem = problem


@dataclass(frozen=True)
class DllFacts:
    path: str
    size: int
    sha256: str
    #: 'x64', 'x86', 'arm64', 'arm', or 'unknown 0xNNNN'.
    machine: str
    is_dll: bool
    exports: frozenset[str]
    #: '1.15.4.0', from VS_FIXEDFILEINFO's dwFileVersionMS/LS; None without a version resource.
    file_version: str | None
    #: The StringFileInfo of the first language: ProductName, OriginalFilename, FileDescription, ProductVersion, …
    strings: dict[str, str]

    @property
    def says_it_is(self) -> str:
        """The name the DLL gives itself, for messages about a DLL that is not the one wanted."""
        return self.strings.get("OriginalFilename") or self.strings.get("FileDescription") or "an unnamed DLL"


@dataclass(frozen=True)
class _Section:
    name: str
    virtual_address: int
    virtual_size: int
    raw_offset: int
    raw_size: int


def read_dll(path: str | os.PathLike[str], max_bytes: int = MAX_DLL_BYTES) -> DllFacts:
    """The facts of the DLL at `path`, read once into memory after its size is checked against `max_bytes`."""
    name = str(path)
    try:
        info = os.stat(name)
        if stat.S_ISDIR(info.st_mode):
            raise DllError(name, "a folder, not a DLL: give the path of the .dll file itself")
        if not stat.S_ISREG(info.st_mode):
            raise DllError(name, "not a regular file: give the path of the .dll file itself")
        if info.st_size > max_bytes:
            raise DllError(name, f"{info.st_size} bytes, more than the {max_bytes} a DLL may have here "
                                 "(DirectML.dll is about 18 MiB): give the DLL itself, not an archive or installer")
        with open(name, "rb") as file:
            data = file.read(max_bytes + 1)  # the file may have grown since stat
    except FileNotFoundError:
        raise DllError(name, "no such file: check the path") from None
    except IsADirectoryError:
        raise DllError(name, "a folder, not a DLL: give the path of the .dll file itself") from None
    except OSError as error:
        raise DllError(name, f"cannot be read ({error.strerror or error}): check its permissions") from None
    if len(data) > max_bytes:
        raise DllError(name, f"grew past {max_bytes} bytes while being read: give a DLL that is not being written")
    return parse_dll(data, name)


def parse_dll(data: bytes, path: str = "<memory>") -> DllFacts:
    """The facts of a DLL already in memory (`path` only names it in messages)."""
    return _Reader(data, path).facts()


def check_directml(path: str | os.PathLike[str], max_bytes: int = MAX_DLL_BYTES) -> DllFacts:
    """`read_dll`, refusing anything but a 64-bit DLL that exports DirectML's entry point and carries a version."""
    facts = _read_for_check(path, max_bytes, "DirectML.dll")
    _require_x64_dll(facts, "DirectML needs the 64-bit (x64) DirectML.dll")
    if not facts.exports.intersection(DIRECTML_EXPORTS):
        raise DllError(facts.path, f"not DirectML: it exports neither DMLCreateDevice nor DMLCreateDevice1 "
                                   f"(it says it is {facts.says_it_is}); give DirectML.dll, {FETCH_HINT}")
    if facts.file_version is None:
        raise DllError(facts.path, "no file version (no VS_VERSIONINFO resource with a VS_FIXEDFILEINFO): the real "
                                   f"DirectML.dll carries one; give the real one, {FETCH_HINT}")
    return facts


def check_onnxruntime(path: str | os.PathLike[str], max_bytes: int = MAX_DLL_BYTES) -> DllFacts:
    """`read_dll`, refusing anything but a 64-bit DLL that exports ONNX Runtime's entry point."""
    facts = _read_for_check(path, max_bytes, "onnxruntime.dll")
    _require_x64_dll(facts, "ONNX Runtime's DirectML build needs the 64-bit (x64) onnxruntime.dll")
    if ONNXRUNTIME_EXPORT not in facts.exports:
        raise DllError(facts.path, f"not ONNX Runtime: it does not export {ONNXRUNTIME_EXPORT} "
                                   f"(it says it is {facts.says_it_is}); give onnxruntime.dll, {FETCH_HINT}")
    return facts


def _read_for_check(path: str | os.PathLike[str], max_bytes: int, wanted: str) -> DllFacts:
    try:
        return read_dll(path, max_bytes)
    except DllError as error:
        if error.problem.startswith(("no such file", "a folder", "not a regular", "cannot be read")):
            raise
        raise DllError(error.path, f"{error.problem}; not a usable {wanted}: get it afresh, {FETCH_HINT}") from None


def _require_x64_dll(facts: DllFacts, need: str) -> None:
    if not facts.is_dll:
        raise DllError(facts.path, f"a program, not a DLL (IMAGE_FILE_DLL is not set); {need}, {FETCH_HINT}")
    if facts.machine != "x64":
        described = {"x86": "a 32-bit (x86) DLL", "arm": "a 32-bit ARM (arm) DLL", "arm64": "an ARM64 (arm64) DLL"}
        what = described.get(facts.machine, f"a DLL for machine {facts.machine.removeprefix('unknown ')}")
        raise DllError(facts.path, f"{what}; {need}, {FETCH_HINT}")


class _Reader:
    """One parse of one file's bytes; every read is bounds-checked and names what it reads."""

    def __init__(self, data: bytes, path: str) -> None:
        self.data = data
        self.path = path
        self.sections: list[_Section] = []
        self.size_of_headers = 0

    def fail(self, problem: str) -> DllError:
        return DllError(self.path, problem)

    def need(self, offset: int, length: int, what: str) -> None:
        end = offset + length
        if offset < 0 or end > len(self.data):
            raise self.fail(f"truncated: {what} ends at byte {end} of {len(self.data)}")

    def u16(self, offset: int, what: str) -> int:
        self.need(offset, 2, what)
        return struct.unpack_from("<H", self.data, offset)[0]

    def u32(self, offset: int, what: str) -> int:
        self.need(offset, 4, what)
        return struct.unpack_from("<I", self.data, offset)[0]

    def facts(self) -> DllFacts:
        if len(self.data) < 2 or self.data[:2] != b"MZ":
            if not self.data:
                raise self.fail("an empty file (0 bytes), not a DLL")
            raise self.fail(f"not a Windows DLL: it starts with {self.data[:4]!r}, not the DOS header's 'MZ'")
        self.need(0, 64, "the DOS header")
        pe_offset = self.u32(0x3C, "the DOS header")
        if pe_offset < 64 or pe_offset % 4:
            raise self.fail(f"e_lfanew (byte 60) points at byte {pe_offset}, where no PE header can be "
                            "(it must be a multiple of 4 after the 64-byte DOS header): a damaged file")
        self.need(pe_offset, 4, "the PE signature")
        if self.data[pe_offset:pe_offset + 4] != b"PE\0\0":
            raise self.fail(f"an MS-DOS program, not a DLL: no PE signature at byte {pe_offset} (e_lfanew); "
                            f"found {self.data[pe_offset:pe_offset + 4]!r}")
        coff = pe_offset + 4
        self.need(coff, 20, "the COFF header")
        machine_code, section_count, _, _, _, optional_size, characteristics = struct.unpack_from(
            "<HHIIIHH", self.data, coff)
        optional = coff + 20
        directories = self._optional_header(optional, optional_size)
        self._section_table(optional + optional_size, section_count)
        exports = self._exports(*directories.get(EXPORT_DIRECTORY, (0, 0)))
        version, strings = self._version(*directories.get(RESOURCE_DIRECTORY, (0, 0)))
        return DllFacts(path=self.path, size=len(self.data), sha256=hashlib.sha256(self.data).hexdigest(),
                        machine=MACHINES.get(machine_code, f"unknown 0x{machine_code:04x}"),
                        is_dll=bool(characteristics & IMAGE_FILE_DLL), exports=exports, file_version=version,
                        strings=strings)

    def _optional_header(self, offset: int, size: int) -> dict[int, tuple[int, int]]:
        """Data directory index -> (RVA, size), for the export and resource directories."""
        magic = self.u16(offset, "the optional header")
        if magic == PE32_PLUS_MAGIC:
            count_at, directories_at = 108, 112
        elif magic == PE32_MAGIC:
            count_at, directories_at = 92, 96
        else:
            raise self.fail(f"the optional header's magic at byte {offset} is 0x{magic:x}, neither PE32 (0x10b) "
                            "nor PE32+ (0x20b): a damaged file")
        self.need(offset, directories_at, "the optional header")
        self.size_of_headers = self.u32(offset + 60, "the optional header")
        count = min(self.u32(offset + count_at, "the optional header"), 16)  # the format defines 16
        if directories_at + 8 * count > size:
            raise self.fail(f"the optional header at byte {offset} is {size} bytes (SizeOfOptionalHeader), too "
                            f"short for its {count} data directories ({directories_at + 8 * count} bytes)")
        self.need(offset, directories_at + 8 * count, "the data directories")
        return {index: struct.unpack_from("<II", self.data, offset + directories_at + 8 * index)
                for index in (EXPORT_DIRECTORY, RESOURCE_DIRECTORY) if index < count}

    def _section_table(self, offset: int, count: int) -> None:
        self.need(offset, 40 * count, "the section table")
        for number in range(count):
            at = offset + 40 * number
            raw_name, virtual_size, virtual_address, raw_size, raw_offset = struct.unpack_from(
                "<8sIIII", self.data, at)
            name = raw_name.rstrip(b"\0").decode("latin-1")
            # A download cut short usually ends inside the last section, which may hold nothing read here.
            self.need(raw_offset, raw_size, f"section {name!r}")
            self.sections.append(_Section(name, virtual_address, virtual_size, raw_offset, raw_size))

    def offset_of(self, rva: int, what: str) -> int:
        """The file offset at which the byte with this relative virtual address is stored."""
        for section in self.sections:
            extent = max(section.virtual_size, section.raw_size)
            if section.virtual_address <= rva < section.virtual_address + extent:
                delta = rva - section.virtual_address
                if delta >= section.raw_size:
                    raise self.fail(f"{what} (RVA 0x{rva:x}) lies past the data that section {section.name!r} "
                                    "stores in the file: a damaged file")
                return section.raw_offset + delta
        if rva < self.size_of_headers:
            return rva
        raise self.fail(f"{what} (RVA 0x{rva:x}) lies in no section of the file: a damaged file")

    def _exports(self, rva: int, size: int) -> frozenset[str]:
        if rva == 0 or size == 0:
            return frozenset()
        directory = self.offset_of(rva, "the export directory")
        self.need(directory, 40, f"the export directory at byte {directory}")
        (name_count,) = struct.unpack_from("<I", self.data, directory + 24)  # NumberOfNames
        (names_rva,) = struct.unpack_from("<I", self.data, directory + 32)  # AddressOfNames
        if name_count > MAX_EXPORTS:
            raise self.fail(f"the export directory at byte {directory} declares {name_count} names, more than "
                            f"the {MAX_EXPORTS} a DLL may have here: a damaged file")
        if name_count == 0:
            return frozenset()
        table = self.offset_of(names_rva, "the export name table")
        self.need(table, 4 * name_count, f"the export name table at byte {table}")
        names = set()
        for index, name_rva in enumerate(struct.unpack_from(f"<{name_count}I", self.data, table)):
            names.add(self._export_name(self.offset_of(name_rva, f"export name {index}"), index))
        return frozenset(names)

    def _export_name(self, offset: int, index: int) -> str:
        end = self.data.find(b"\0", offset, offset + MAX_EXPORT_NAME_BYTES + 1)
        if end < 0:
            if offset + MAX_EXPORT_NAME_BYTES + 1 > len(self.data):
                raise self.fail(f"truncated: export name {index} at byte {offset} runs past the end of the file "
                                f"({len(self.data)} bytes)")
            raise self.fail(f"export name {index} at byte {offset} is longer than {MAX_EXPORT_NAME_BYTES} bytes: "
                            "a damaged file")
        raw = self.data[offset:end]
        if not raw.isascii():
            raise self.fail(f"export name {index} at byte {offset} is not ASCII: a damaged file")
        return raw.decode("ascii")

    # The resource tree: type (RT_VERSION) -> name -> language -> data entry, offsets relative to its root.

    def _version(self, rva: int, size: int) -> tuple[str | None, dict[str, str]]:
        if rva == 0 or size == 0:
            return None, {}
        root = self.offset_of(rva, "the resource directory")
        visited: set[int] = set()
        entry = next((e for e in self._resource_entries(root, root, visited) if e[0] == RT_VERSION), None)
        if entry is None:
            return None, {}
        for level in ("RT_VERSION's names", "RT_VERSION's languages"):
            _, is_directory, target = entry
            if not is_directory:
                raise self.fail(f"the resource tree at byte {root} has a data entry where {level} should be: "
                                "a damaged file")
            entries = self._resource_entries(root, root + target, visited)
            if not entries:
                return None, {}
            entry = entries[0]
        _, is_directory, target = entry
        if is_directory:
            raise self.fail(f"the resource tree at byte {root} nests RT_VERSION deeper than type, name and "
                            "language: a damaged file")
        data_entry = root + target
        self.need(data_entry, 16, f"the version resource's data entry at byte {data_entry}")
        data_rva, data_size = struct.unpack_from("<II", self.data, data_entry)
        start = self.offset_of(data_rva, "the version resource")
        self.need(start, data_size, f"the version resource at byte {start}")
        return self._version_info(start, start + data_size)

    def _resource_entries(self, root: int, directory: int, visited: set[int]) -> list[tuple[int | None, bool, int]]:
        """(id or None for a named entry, is a subdirectory, offset from the root) of each entry of a directory."""
        if directory in visited:
            raise self.fail(f"the resource directory at byte {directory} is reached twice: the resource tree loops "
                            "(a damaged or hostile file)")
        if len(visited) >= MAX_RESOURCE_DIRECTORIES:
            raise self.fail(f"the resource tree at byte {root} has more than {MAX_RESOURCE_DIRECTORIES} "
                            "directories on the way to RT_VERSION: a damaged file")
        visited.add(directory)
        self.need(directory, 16, f"the resource directory at byte {directory}")
        named, numbered = struct.unpack_from("<HH", self.data, directory + 12)
        count = named + numbered
        if count > MAX_RESOURCE_ENTRIES:
            raise self.fail(f"the resource directory at byte {directory} declares {count} entries, more than the "
                            f"{MAX_RESOURCE_ENTRIES} read here: a damaged file")
        self.need(directory + 16, 8 * count, f"the resource directory at byte {directory}")
        entries = []
        for index in range(count):
            name, target = struct.unpack_from("<II", self.data, directory + 16 + 8 * index)
            identifier = None if name & 0x80000000 else name
            entries.append((identifier, bool(target & 0x80000000), target & 0x7FFFFFFF))
        return entries

    # VS_VERSIONINFO: nested blocks {wLength, wValueLength, wType, key (UTF-16, NUL-ended), value, children}, each
    # starting on a DWORD boundary of the resource.

    def _version_info(self, start: int, end: int) -> tuple[str | None, dict[str, str]]:
        budget = [MAX_VERSION_BLOCKS]
        key, value_at, value_length, children_at, block_end = self._block(start, start, end, budget)
        if key != "VS_VERSION_INFO":
            raise self.fail(f"the version resource at byte {start} starts with the key {key!r}, not "
                            "'VS_VERSION_INFO': a damaged file")
        version = None
        if value_length:
            if value_length < FIXED_FILE_INFO_BYTES:
                raise self.fail(f"the VS_FIXEDFILEINFO at byte {value_at} is {value_length} bytes, not "
                                f"{FIXED_FILE_INFO_BYTES}: a damaged file")
            self.need(value_at, FIXED_FILE_INFO_BYTES, f"the VS_FIXEDFILEINFO at byte {value_at}")
            signature, _, most, least = struct.unpack_from("<IIII", self.data, value_at)
            if signature != VS_FIXEDFILEINFO_SIGNATURE:
                raise self.fail(f"the VS_FIXEDFILEINFO at byte {value_at} has the signature 0x{signature:08x}, "
                                "not 0xfeef04bd: a damaged file")
            version = f"{most >> 16}.{most & 0xFFFF}.{least >> 16}.{least & 0xFFFF}"
        strings: dict[str, str] = {}
        for child_key, _, _, table_at, child_end in self._children(start, children_at, block_end, budget):
            if child_key != "StringFileInfo":
                continue  # VarFileInfo: the translations, not needed
            tables = self._children(start, table_at, child_end, budget)
            if tables:
                _, _, _, string_at, table_end = tables[0]
                for name, value_at, _, _, string_end in self._children(start, string_at, table_end, budget):
                    strings[name] = self._text(value_at, string_end, f"the value of {name!r}").split("\0")[0]
            break
        return version, strings

    def _children(self, base: int, offset: int, end: int, budget: list[int]) -> list[tuple[str, int, int, int, int]]:
        children = []
        offset = _align(base, offset)
        while offset + 6 <= end:
            child = self._block(base, offset, end, budget)
            children.append(child)
            offset = _align(base, child[4])
        return children

    def _block(self, base: int, offset: int, end: int, budget: list[int]) -> tuple[str, int, int, int, int]:
        """(key, value offset, wValueLength in bytes, children offset, block end) of the block at `offset`."""
        budget[0] -= 1
        if budget[0] < 0:
            raise self.fail(f"the version resource at byte {base} has more than {MAX_VERSION_BLOCKS} blocks: "
                            "a damaged file")
        self.need(offset, 6, f"the version block at byte {offset}")
        length, value_length, value_type = struct.unpack_from("<HHH", self.data, offset)
        block_end = offset + length
        if length < 6 or block_end > end:
            raise self.fail(f"the version block at byte {offset} declares {length} bytes (wLength), which do not "
                            f"fit between 6 and the {end - offset} its parent leaves: a damaged file")
        key_end = offset + 6
        limit = min(block_end, key_end + 2 * MAX_VERSION_KEY_CHARS)
        while key_end + 2 <= limit and self.data[key_end:key_end + 2] != b"\0\0":
            key_end += 2
        if key_end + 2 > limit:
            raise self.fail(f"the key of the version block at byte {offset} has no end within the block: "
                            "a damaged file")
        key = self._text(offset + 6, key_end, f"the key of the version block at byte {offset}")
        value_at = _align(base, key_end + 2)
        value_bytes = value_length * 2 if value_type == 1 else value_length  # text values count UTF-16 units
        children_at = min(_align(base, value_at + value_bytes), block_end)
        return key, value_at, value_bytes, children_at, block_end

    def _text(self, start: int, end: int, what: str) -> str:
        raw = self.data[start:max(start, end)]
        if len(raw) % 2:
            raw = raw[:-1]  # a value's block may end on an odd byte; its text is whole UTF-16 units
        try:
            return raw.decode("utf-16-le")
        except UnicodeDecodeError:
            raise self.fail(f"{what} (byte {start}) is not UTF-16 text: a damaged file") from None


def _align(base: int, offset: int) -> int:
    return base + ((offset - base + 3) & ~3)
