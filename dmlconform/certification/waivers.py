"""Waivers: agreed exceptions for a certification, granted per device (docs/certification.md#waivers).

```yaml
format: dmlconform-waivers/v1
waivers:
  - id: DMLC-W-0001
    cases: [resample_grad1.edge/fp16-sum-overflows]   # case ids, or regular expressions matching whole ids
    devices:                                          # where it applies: an entry whose every field matches
      - {vendor_id: 0x10005, adapter: "llvmpipe*", driver_version: "25.0.*"}
    reason: lavapipe truncates fp16 sums
    granted_by: dmlconform certification board, ticket 12
    date: 2025-06-01
```

A device entry matches on the backend's handshake: `backend` (its name), `adapter` (a shell-style pattern on the
adapter name, case-insensitive), `vendor_id` and `device_id` (the PCI ids a harness reports as
`adapter_vendor_device: "VVVV:DDDD"`, hex), `driver_version` (a pattern on the driver version), `api` (a pattern
on the API the harness names, e.g. "DirectML 1.15.*"). A waived case
still runs; when it does not match and a waiver covers it on this device, it is WAIVED. A waiver is never a
match: the certification says it holds *with* waivers and lists them.
"""

from __future__ import annotations

import fnmatch
import hashlib
import re
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from dmlconform.backend_info import BackendInfo
from dmlconform.case_result import AppliedWaiver, CaseResult, Status
from dmlconform.certification import CertificationError
from dmlconform.verdicts import effective_status
from dmlconform.yaml_file import YamlFileError, iso_date, load_yaml_bytes

WAIVERS_FORMAT = "dmlconform-waivers/v1"
MAX_WAIVERS_BYTES = 1 << 20
_DEVICE_KEYS = ("backend", "adapter", "vendor_id", "device_id", "driver_version", "api")
_WAIVER_KEYS = ("id", "cases", "devices", "reason", "granted_by", "date")
_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._+\-]{0,99}")


@dataclass(frozen=True)
class DeviceIdentity:
    """Who ran the cases, as the backend's handshake says."""

    backend: str
    adapter: str
    driver_version: str
    vendor_id: int | None = None
    device_id: int | None = None
    api: str = ""

    @classmethod
    def of(cls, info: BackendInfo) -> DeviceIdentity:
        vendor = device = None
        ids = info.extra.get("adapter_vendor_device", "")
        if re.fullmatch(r"[0-9A-Fa-f]{1,8}:[0-9A-Fa-f]{1,8}", ids):
            vendor, device = (int(part, 16) for part in ids.split(":"))
        return cls(info.name, info.device, info.extra.get("driver_version", ""), vendor, device,
                   info.extra.get("api", ""))

    def describe(self) -> str:
        ids = "" if self.vendor_id is None else f", PCI {self.vendor_id:04X}:{self.device_id or 0:04X}"
        driver = f", driver {self.driver_version}" if self.driver_version else ""
        api = f", {self.api}" if self.api else ""
        return f"backend {self.backend}, adapter {self.adapter!r}{ids}{driver}{api}"


@dataclass(frozen=True)
class DevicePattern:
    """One `devices` entry: every field given must match (at least one is given)."""

    backend: str | None = None
    adapter: str | None = None
    vendor_id: int | None = None
    device_id: int | None = None
    driver_version: str | None = None
    api: str | None = None

    def matches(self, device: DeviceIdentity) -> bool:
        return ((self.backend is None or self.backend == device.backend)
                and (self.adapter is None or fnmatch.fnmatchcase(device.adapter.lower(), self.adapter.lower()))
                and (self.vendor_id is None or self.vendor_id == device.vendor_id)
                and (self.device_id is None or self.device_id == device.device_id)
                and (self.driver_version is None or fnmatch.fnmatchcase(device.driver_version, self.driver_version))
                and (self.api is None or fnmatch.fnmatchcase(device.api.lower(), self.api.lower())))

    def to_json(self) -> dict[str, Any]:
        fields = {"backend": self.backend, "adapter": self.adapter, "driver_version": self.driver_version,
                  "api": self.api, "vendor_id": None if self.vendor_id is None else f"0x{self.vendor_id:04X}",
                  "device_id": None if self.device_id is None else f"0x{self.device_id:04X}"}
        return {key: value for key, value in fields.items() if value is not None}

    def describe(self) -> str:
        return ", ".join(f"{key} {value}" for key, value in self.to_json().items())


@dataclass(frozen=True)
class Waiver:
    id: str
    #: Case ids, or regular expressions that must match a whole id (an entry equal to an id is that id).
    cases: tuple[str, ...]
    devices: tuple[DevicePattern, ...]
    reason: str
    granted_by: str
    date: str

    def covers(self, case_id: str) -> bool:
        return any(entry == case_id or re.fullmatch(entry, case_id) for entry in self.cases)

    def applies_to(self, device: DeviceIdentity) -> bool:
        return any(pattern.matches(device) for pattern in self.devices)

    def applied(self) -> AppliedWaiver:
        return AppliedWaiver(self.id, self.reason, self.granted_by, self.date)

    def to_json(self) -> dict[str, Any]:
        """The waiver in a canonical form, for comparing two files' versions of it."""
        return {"id": self.id, "cases": list(self.cases), "devices": [d.to_json() for d in self.devices],
                "reason": self.reason, "granted_by": self.granted_by, "date": self.date}


@dataclass(frozen=True)
class WaiverFile:
    path: str
    sha256: str
    waivers: tuple[Waiver, ...]

    def by_id(self, waiver_id: str) -> Waiver | None:
        return next((w for w in self.waivers if w.id == waiver_id), None)

    def for_case(self, case_id: str, device: DeviceIdentity) -> Waiver | None:
        """The first waiver that covers the case on this device."""
        return next((w for w in self.waivers if w.covers(case_id) and w.applies_to(device)), None)


# -- reading ------------------------------------------------------------------------------------------------
def load_waivers(path: Path) -> WaiverFile:
    return parse_waivers(read_waiver_bytes(path), str(path))


def read_waiver_bytes(path: Path) -> bytes:
    """A waiver file's bytes, bounded; CertificationError if it cannot be read."""
    try:
        if path.stat().st_size > MAX_WAIVERS_BYTES:
            raise CertificationError(path, f"is larger than {MAX_WAIVERS_BYTES >> 10} KiB; not read")
        return path.read_bytes()
    except OSError as exc:
        raise CertificationError(path, f"cannot be read ({exc.strerror or exc})") from None


def parse_waivers(raw: bytes, name: str) -> WaiverFile:
    try:
        document = load_yaml_bytes(raw)
    except YamlFileError as exc:
        raise CertificationError(name, exc.message, exc.where) from None
    if not isinstance(document, dict):
        raise CertificationError(name, f"is not a mapping with format: {WAIVERS_FORMAT} and waivers: [...]")
    if document.get("format") != WAIVERS_FORMAT:
        raise CertificationError(name, f"is {document.get('format')!r}, not {WAIVERS_FORMAT!r}", field="format")
    entries = document.get("waivers")
    if not isinstance(entries, list):
        raise CertificationError(name, "must be a list of waivers", field="waivers")
    waivers: list[Waiver] = []
    for position, entry in enumerate(entries):
        waiver = _waiver(name, entry, position)
        if any(w.id == waiver.id for w in waivers):
            raise CertificationError(name, f"{waiver.id!r} is used by two waivers", f"waivers[{position}]", "id")
        waivers.append(waiver)
    return WaiverFile(name, hashlib.sha256(raw).hexdigest(), tuple(waivers))


def _waiver(name: str, entry: object, position: int) -> Waiver:
    label = entry.get("id") if isinstance(entry, dict) and isinstance(entry.get("id"), str) else f"#{position + 1}"
    where = f"waiver {label}"

    def fail(field: str, message: str) -> CertificationError:
        return CertificationError(name, message, where, field)

    if not isinstance(entry, dict):
        raise CertificationError(name, "is not a mapping", where)
    unknown = sorted(str(k) for k in entry if k not in _WAIVER_KEYS)
    if unknown:
        raise fail(unknown[0], f"is not a waiver field ({', '.join(_WAIVER_KEYS)})")
    text: dict[str, str] = {}
    for key in ("id", "reason", "granted_by"):
        value = entry.get(key)
        if not isinstance(value, str) or not value.strip():
            raise fail(key, "missing: a waiver names its id, the reason and who granted it")
        text[key] = " ".join(value.split())
    if not _ID.fullmatch(text["id"]):
        raise fail("id", f"{text['id']!r}: an id is letters, digits and . _ + - (at most 100)")
    date = iso_date(entry.get("date"))
    if date is None:
        raise fail("date", "missing or not a date (YYYY-MM-DD): the day the waiver was granted")
    cases = entry.get("cases")
    if not isinstance(cases, list) or not cases or not all(isinstance(c, str) and c for c in cases):
        raise fail("cases", "must be a non-empty list of case ids or regular expressions")
    for number, case in enumerate(cases):
        try:
            re.compile(case)
        except re.error as exc:
            raise fail(f"cases[{number}]", f"{case!r} is not a regular expression ({exc})") from None
    devices = entry.get("devices")
    if not isinstance(devices, list) or not devices:
        raise fail("devices", "must be a non-empty list: a waiver is granted for devices, never for all")
    patterns = tuple(_device(fail, device, number) for number, device in enumerate(devices))
    return Waiver(text["id"], tuple(cases), patterns, text["reason"], text["granted_by"], date)


def _device(fail: Any, device: object, number: int) -> DevicePattern:
    field = f"devices[{number}]"
    if not isinstance(device, dict) or not device:
        raise fail(field, f"must be a mapping of {', '.join(_DEVICE_KEYS)} (at least one)")
    unknown = sorted(str(k) for k in device if k not in _DEVICE_KEYS)
    if unknown:
        raise fail(f"{field}.{unknown[0]}", f"is not a device field ({', '.join(_DEVICE_KEYS)})")
    values: dict[str, Any] = {}
    for key, value in device.items():
        if key in ("vendor_id", "device_id"):
            values[key] = _pci_id(fail, f"{field}.{key}", value)
        elif isinstance(value, str | int | float) and not isinstance(value, bool) and str(value).strip():
            values[key] = str(value).strip()
        else:
            raise fail(f"{field}.{key}", "must be a non-empty text")
    return DevicePattern(**values)


def _pci_id(fail: Any, field: str, value: object) -> int:
    if isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= 0xFFFFFFFF:
        return value
    if isinstance(value, str) and re.fullmatch(r"(0[xX])?[0-9A-Fa-f]{1,8}", value.strip()):
        return int(value.strip(), 16)
    raise fail(field, f"{value!r} is not a PCI id (hex, e.g. 0x10DE)")


# -- applying -----------------------------------------------------------------------------------------------
@dataclass
class WaiverUse:
    """What a waiver file did to a run: the cases each waiver covered, and the waivers that covered none."""

    applied: dict[str, list[str]]
    #: Waivers for this device whose cases all matched (not needed), and waivers for other devices.
    unneeded: list[str]
    other_devices: list[str]

    def to_json(self) -> dict[str, object]:
        return {"applied": self.applied, "unneeded": self.unneeded, "other_devices": self.other_devices}


def waivable(result: CaseResult) -> bool:
    """A required case that ran and did not match (a FLAKE too: its failing run counts)."""
    return result.required and effective_status(result).failure


def apply_waivers(results: list[CaseResult], waivers: WaiverFile, device: DeviceIdentity) -> WaiverUse:
    """Every waivable case covered by a waiver for this device becomes WAIVED (in place, in `results`)."""
    for position, result in enumerate(results):
        if not waivable(result):
            continue
        waiver = waivers.for_case(result.id, device)
        if waiver is None:
            continue
        raw = effective_status(result)
        results[position] = replace(result, status=Status.WAIVED, outcome=raw, waiver=waiver.applied(),
                                    message=f"waived ({waiver.id}): {raw.value}: {result.message}")
    return waiver_use(results, waivers, device)


def waiver_use(results: list[CaseResult], waivers: WaiverFile | None, device: DeviceIdentity) -> WaiverUse:
    """What the waivers came to in results that carry them."""
    applied: dict[str, list[str]] = {}
    for result in results:
        if result.waiver is not None and result.known_issue is None:  # DirectML's own: certification/known_issues.py
            applied.setdefault(result.waiver.id, []).append(result.id)
    listed = waivers.waivers if waivers is not None else ()
    mine = [w.id for w in listed if w.applies_to(device)]
    return WaiverUse(applied, [w for w in mine if w not in applied], [w.id for w in listed if w.id not in mine])
