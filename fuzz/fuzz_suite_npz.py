"""`.npz` archives: a suite tensor's `file: a.npz:x`, through the in-memory reader (archives up to 16 MiB) and
through zipfile (larger ones), chosen by the input's first byte.

The first byte also says what the rest is: the archive itself, or the bytes of member x.npy, which the harness
wraps in a valid archive (deflated or stored), so that the fuzzer works on the member and not only on zip
framing. The case declares what numpy makes of the member's header (when it is a DML tensor of reasonable size).
Contract: a one-line refusal, or the array np.load reads from the same archive, bit for bit; memory within the
bound of the declared tensor (an archive member that inflates past its header is a bomb, refused unspent).
"""

from __future__ import annotations

import io
import math
import zipfile
from collections.abc import Iterator

import numpy as np

from dmlconform.cli.common import bundled_suites
from dmlconform.suite import tensors
from dmlconform.suite.tensors import Archives, TensorError, read_tensor
from fuzz.contract import ContractBroken, check_refusal, memory_bound, scratch
from fuzz.fuzz_suite_npy import npy_bytes
from fuzz.oracle import DEFAULT, declaration, numpy_header
from tests.hostile_files import npy_header, write_zip, zeros_member

RAW, DEFLATED, STORED = 0, 1, 2
#: Set in the first byte: read the archive through zipfile, as archives over 16 MiB are.
THROUGH_ZIPFILE = 0x80


def archive_bytes(mode: int, rest: bytes) -> bytes:
    if mode == RAW:
        return rest
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED if mode == DEFLATED else zipfile.ZIP_STORED) as archive:
        archive.writestr("x.npy", rest)
    return buffer.getvalue()


def member_header(archive: bytes) -> bytes:
    """The first bytes of member x.npy, read through zipfile no further than a header needs (the oracle's way)."""
    try:
        with zipfile.ZipFile(io.BytesIO(archive)) as opened, opened.open("x.npy") as member:
            return member.read(4096)
    except Exception:  # the oracle's refusal, whatever zipfile raises on a broken archive
        return b""


def numpy_reads(archive: bytes) -> np.ndarray | None:
    try:
        with np.load(io.BytesIO(archive), allow_pickle=False) as arrays:
            return arrays["x"]
    except Exception:
        return None


def one_input(data: bytes) -> None:
    if not data:
        return
    mode = data[0] % 3
    archive = archive_bytes(mode, data[1:])
    folder = scratch() / "npz"
    folder.mkdir(exist_ok=True)
    (folder / "a.npz").write_bytes(archive)
    head = data[1:] if mode != RAW else member_header(archive)
    desc = declaration(head) if numpy_header(head) is not None else DEFAULT
    spec = {"dtype": desc.dtype.name, "shape": list(desc.shape), "file": "a.npz:x"}
    whole = tensors._WHOLE_ARCHIVE_BYTES
    tensors._WHOLE_ARCHIVE_BYTES = 0 if data[0] & THROUGH_ZIPFILE else whole
    try:
        with memory_bound(len(data)) as declared:
            declared.bytes = math.prod(desc.shape) * desc.dtype.numpy.itemsize
            archives = Archives(folder)
            try:
                array = read_tensor(spec, desc, folder / "suite.yaml", archives)
            except TensorError as exc:
                check_refusal(exc)
                array = None
            finally:
                archives.close()
    finally:
        tensors._WHOLE_ARCHIVE_BYTES = whole
    if array is not None:
        theirs = numpy_reads(archive)
        if theirs is None:
            raise ContractBroken("the suite loader accepted an archive member that np.load refuses")
        if array.dtype != theirs.dtype or array.shape != theirs.shape or array.tobytes() != theirs.tobytes("C"):
            raise ContractBroken(f"read {array.dtype}{array.shape}, np.load {theirs.dtype}{theirs.shape}, or "
                                 "their bytes differ")


def seeds() -> Iterator[bytes]:
    """Members of the smoke tier's archives, wrapped both ways and read both ways; small whole archives; bombs."""
    count = 0
    for path in sorted((bundled_suites() / "smoke" / "data").glob("*.npz")):
        with np.load(path) as arrays:
            for key in arrays.files[:6]:
                member = npy_bytes(arrays[key])
                yield bytes([(DEFLATED | THROUGH_ZIPFILE) if count % 2 else DEFLATED]) + member
                if count % 4 == 0:
                    yield bytes([STORED]) + member
                count += 1
    for compress in (np.savez, np.savez_compressed):
        buffer = io.BytesIO()
        compress(buffer, x=np.arange(12, dtype=np.float16).reshape(3, 4), y=np.int8([1, -2]))
        yield bytes([RAW]) + buffer.getvalue()
        yield bytes([RAW | THROUGH_ZIPFILE]) + buffer.getvalue()
    # Zip bombs in small: a member declaring 2^20 zeros (4 MiB), and one whose header says [4] over 1 MiB of data.
    bomb = io.BytesIO()
    for members in ({"x.npy": zeros_member("<f4", (1 << 20,))},
                    {"x.npy": zeros_member("<f4", (1 << 18,), declared_header=npy_header("<f4", (4,)))}):
        target = scratch() / "seed.npz"
        write_zip(target, members)
        bomb = target.read_bytes()
        yield bytes([RAW]) + bomb
        yield bytes([RAW | THROUGH_ZIPFILE]) + bomb
