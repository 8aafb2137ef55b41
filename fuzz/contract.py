"""What every fuzz harness checks, whatever it parses: the contract of an untrusted input.

1. The parser gives a valid result, or refuses the input with the project's own exception (SuiteError,
   ResultsError, ProtocolError, ...) whose message is one line: what the CLI prints before exiting 2. Any other
   exception is a crash (the fuzzer keeps the input).
2. No hang: libFuzzer's -timeout (fuzz/run.py sets 10 s per input) turns one into a crash.
3. Memory within the stated bound, measured around each input (peak resident size, or tracemalloc, which sees
   numpy's buffers too): peak <= BASE_BYTES + PER_DECLARED_BYTE x the tensor bytes the input declares +
   PER_INPUT_BYTE x its size. libFuzzer's -rss_limit_mb backs it with a hard limit on the whole process.

Harness helpers live here so that fuzz/fuzz_*.py say only what is particular to their parser.
"""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile
import tracemalloc
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

#: What any one input may cost beyond what it declares: the parser's state, caches, one message. Resident memory
#: (the cheap measure) also counts pages a lazily filled cache or a fragmented heap keeps, hence its larger base.
BASE_BYTES = {"tracemalloc": 8 << 20, "rss": 32 << 20}
#: Per declared tensor byte: the tensor, and at most a few transient copies while it is checked or judged.
PER_DECLARED_BYTE = 4
#: Per byte of input: text parsed into Python objects (a YAML or JSON byte can become ~30 bytes of objects).
PER_INPUT_BYTE = 64


def _measure() -> str:
    """FUZZ_MEMORY: `rss` (the default where Linux lets a process reset its peak resident size: ~0.4 ms an
    input), `tracemalloc` (every Python and numpy allocation: exact, but ~6x slower) or `off`."""
    chosen = os.environ.get("FUZZ_MEMORY", "")
    if chosen in ("rss", "tracemalloc", "off"):
        return chosen
    try:
        _reset_peak_rss()
        return "rss"
    except OSError:
        return "tracemalloc"


def _reset_peak_rss() -> None:
    with open("/proc/self/clear_refs", "w") as file:  # "5": reset the high-water mark to the current size
        file.write("5")


def _status_kib(field: str) -> int:
    with open("/proc/self/status") as file:
        for line in file:
            if line.startswith(field):
                return int(line.split()[1])
    return 0


MEASURE = _measure()


class ContractBroken(AssertionError):
    """An input broke the contract: the fuzzer reports it as a crash, with this message."""


def check_refusal(exc: BaseException) -> None:
    """A refusal must be one non-empty line, as the CLI prints it."""
    text = str(exc)
    if not text.strip() or "\n" in text or "Traceback" in text:
        raise ContractBroken(f"{type(exc).__name__} is not one clear line: {text!r}") from exc


@dataclass
class Declared:
    """The tensor bytes an input declares; the harness sets it once it knows (0 until then)."""

    bytes: int = 0


@contextmanager
def memory_bound(input_bytes: int) -> Iterator[Declared]:
    """Measures the peak memory while the block runs (as FUZZ_MEMORY says); ContractBroken past the bound."""
    declared = Declared()
    if MEASURE == "off":
        yield declared
        return
    if MEASURE == "rss":
        _reset_peak_rss()
        start = _status_kib("VmRSS:") << 10
    else:
        if not tracemalloc.is_tracing():
            tracemalloc.start()
        tracemalloc.reset_peak()
        start = tracemalloc.get_traced_memory()[0]
    yield declared
    peak = (_status_kib("VmHWM:") << 10 if MEASURE == "rss" else tracemalloc.get_traced_memory()[1]) - start
    bound = BASE_BYTES[MEASURE] + PER_DECLARED_BYTE * declared.bytes + PER_INPUT_BYTE * input_bytes
    if peak > bound:
        raise ContractBroken(f"peak memory ({MEASURE}) {peak} bytes above the bound {bound} (declared tensors "
                             f"{declared.bytes} bytes, input {input_bytes} bytes)")


_SCRATCH: Path | None = None


def scratch() -> Path:
    """A folder of this process for the files a harness writes (in memory where /dev/shm exists)."""
    global _SCRATCH
    if _SCRATCH is None:
        base = "/dev/shm" if os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK) else None
        _SCRATCH = Path(tempfile.mkdtemp(prefix="dmlconform-fuzz-", dir=base))
        atexit.register(shutil.rmtree, _SCRATCH, True)
    return _SCRATCH
