"""Limits on what a suite tree may bring into memory: its suite files, its cases, and its bytes.

Every tensor a case declares is bounded on its own (`tensors.MAX_ELEMENTS`), and nothing is read or inflated
beyond what a case declares; these limits bound the sum. A tree's bytes are what loading it costs in memory: the
tensor bytes its cases declare (inputs and every answer), plus TEXT_WEIGHT bytes per byte of its suite files (YAML
parsed into Python objects costs up to 27 bytes per byte of text: benchmarks/bench_hostile_memory.py). Each
is counted before it is spent (a suite file's size before it is read, a case's tensors before they are
materialised), so a hostile tree is refused before it costs more than its limit. The defaults admit the largest
bundled tier (`--tier full`: 5,817 cases in 26 suite files, 3 MiB of YAML and 419 MiB of declared tensors, 515
MiB in all) with room to spare; `--suite-limit NAME=N` raises (or lowers) one, `--suite-limit NAME=none` lifts it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field, replace

NAMES = ("files", "cases", "bytes")
#: Bytes of memory a byte of suite text is counted as (the most parsing YAML was measured to cost is 27).
TEXT_WEIGHT = 32
_SIZE = re.compile(r"([0-9]+)\s*(|k|m|g|t|kb|mb|gb|tb|kib|mib|gib|tib)", re.IGNORECASE)
_UNITS = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}


class LimitExceeded(ValueError):
    """A limit would be passed; the message names the limit and how to raise it."""


@dataclass(frozen=True)
class SuiteLimits:
    #: Suite files found under the given paths.
    files: int | None = 10_000
    #: Cases loaded.
    cases: int | None = 100_000
    #: Declared tensor bytes plus TEXT_WEIGHT x suite text bytes.
    bytes: int | None = 2 << 30

    @classmethod
    def parse(cls, settings: Iterable[str], base: SuiteLimits | None = None) -> SuiteLimits:
        """`base` (the defaults) with each NAME=VALUE setting applied; ValueError names a bad one."""
        limits = base or cls()
        for setting in settings:
            name, sep, value = setting.partition("=")
            name, value = name.strip().lower(), value.strip().lower()
            if not sep or name not in NAMES:
                raise ValueError(f"{setting!r}: give NAME=N with NAME one of {', '.join(NAMES)} (e.g. cases=200000, "
                                 "bytes=16GiB, files=none)")
            limits = replace(limits, **{name: _number(setting, name, value)})
        return limits

    def describe(self) -> str:
        return ", ".join(f"{name}={_shown(name, getattr(self, name))}" for name in NAMES)


def _number(setting: str, name: str, value: str) -> int | None:
    if value in ("none", "unlimited"):
        return None
    match = _SIZE.fullmatch(value)
    if match is None or (name != "bytes" and match[2]):
        unit = " with an optional unit (K, M, G, T: powers of 1024)" if name == "bytes" else ""
        raise ValueError(f"{setting!r}: {name} must be a whole number{unit}, or none")
    return int(match[1]) * _UNITS[match[2][:1].lower()]


def _shown(name: str, value: int | None) -> str:
    if value is None:
        return "none"
    if name == "bytes":
        for unit in ("T", "G", "M", "K"):
            if value >= _UNITS[unit.lower()] and value % _UNITS[unit.lower()] == 0:
                return f"{value // _UNITS[unit.lower()]}{unit}iB"
    return str(value)


@dataclass
class Tally:
    """What one suite file (or a whole tree) holds so far, checked against the limits as it grows."""

    limits: SuiteLimits = field(default_factory=SuiteLimits)
    cases: int = 0
    text_bytes: int = 0
    tensor_bytes: int = 0

    @property
    def bytes(self) -> int:
        return TEXT_WEIGHT * self.text_bytes + self.tensor_bytes

    def add_text(self, size: int) -> None:
        self._check_bytes(TEXT_WEIGHT * size, f"a suite file of {size} bytes (counted {TEXT_WEIGHT} times: what "
                          "parsing it may cost)")
        self.text_bytes += size

    def add_case(self, tensor_bytes: int) -> None:
        """One more case declaring `tensor_bytes`, counted before its tensors are read."""
        if self.limits.cases is not None and self.cases + 1 > self.limits.cases:
            raise LimitExceeded(f"more than {self.limits.cases} cases (the limit; --suite-limit cases=N raises it)")
        self._check_bytes(tensor_bytes, f"a case declaring {tensor_bytes} bytes of tensors")
        self.cases += 1
        self.tensor_bytes += tensor_bytes

    def add(self, other: Tally) -> None:
        """A whole file's tally into the tree's."""
        if self.limits.cases is not None and self.cases + other.cases > self.limits.cases:
            raise LimitExceeded(f"more than {self.limits.cases} cases in all (the limit; --suite-limit cases=N "
                                "raises it)")
        self._check_bytes(other.bytes, "these suites")
        self.cases += other.cases
        self.text_bytes += other.text_bytes
        self.tensor_bytes += other.tensor_bytes

    def _check_bytes(self, more: int, what: str) -> None:
        limit = self.limits.bytes
        if limit is not None and self.bytes + more > limit:
            raise LimitExceeded(f"{what} would bring the suites' memory (declared tensors and parsed text) to "
                                f"{self.bytes + more} bytes, more than {_shown('bytes', limit)} (the limit; "
                                "--suite-limit bytes=N raises it)")
