"""Waivers: the file format (every mistake one line naming the waiver and field), whom a waiver applies to, and
what applying it does to results."""

from __future__ import annotations

from dataclasses import replace

import pytest

from dmlconform.backend_info import BackendInfo
from dmlconform.case_result import CaseResult, Status
from dmlconform.certification import CertificationError
from dmlconform.certification.waivers import DeviceIdentity, apply_waivers, parse_waivers
from dmlconform.feature_levels import FeatureLevel

GOOD = b"""\
format: dmlconform-waivers/v1
waivers:
  - id: DMLC-W-1
    cases: [resample_grad1.edge/fp16-sum-overflows, 'max_pooling_grad\\.standard/.*float16.*']
    devices:
      - {vendor_id: 0x10DE, device_id: "2330", driver_version: "31.0.*"}
      - {adapter: "llvmpipe*", api: "DirectML 1.15.*"}
    reason: the driver rounds fp16 sums its own way
    granted_by: certification board, ticket 12
    date: 2025-06-01
"""
H100 = BackendInfo("native", "dml_harness 1.0", "NVIDIA H100 80GB HBM3", FeatureLevel.parse("6_4"),
                   extra={"adapter_vendor_device": "10DE:2330", "driver_version": "31.0.15.5222"})
LAVAPIPE = BackendInfo("native", "dml_harness 1.0", "LLVMpipe (LLVM 19.1.7, 256 bits)", FeatureLevel.parse("6_4"),
                       extra={"adapter_vendor_device": "10005:0000", "driver_version": "0.0.1",
                              "api": "DirectML 1.15.4"})
OTHER = BackendInfo("native", "dml_harness 1.0", "AMD Radeon", FeatureLevel.parse("6_4"),
                    extra={"adapter_vendor_device": "1002:744C", "driver_version": "31.0.1"})


def test_a_good_file_reads_and_matches_its_devices_only() -> None:
    waivers = parse_waivers(GOOD, "w.yaml")
    waiver = waivers.waivers[0]
    assert waiver.date == "2025-06-01" and waiver.devices[0].vendor_id == 0x10DE
    assert waiver.covers("resample_grad1.edge/fp16-sum-overflows")
    assert waiver.covers("max_pooling_grad.standard/cells-float16-r2-0")
    assert not waiver.covers("max_pooling_grad.standard/cells-float32-r2-0")
    assert not waiver.covers("resample_grad1.edge/fp16-sum-overflows-2")  # a regex matches the whole id
    assert waiver.applies_to(DeviceIdentity.of(H100))
    assert waiver.applies_to(DeviceIdentity.of(LAVAPIPE))  # the adapter pattern, case-insensitive
    older_directml = replace(LAVAPIPE, extra={**LAVAPIPE.extra, "api": "DirectML 1.13.1"})
    assert not waiver.applies_to(DeviceIdentity.of(older_directml))
    assert not waiver.applies_to(DeviceIdentity.of(OTHER))
    older_driver = replace(H100, extra={**H100.extra, "driver_version": "30.0.1"})
    assert not waiver.applies_to(DeviceIdentity.of(older_driver))  # every field of an entry must match
    other_device = replace(H100, extra={**H100.extra, "adapter_vendor_device": "10DE:2331"})
    assert not waiver.applies_to(DeviceIdentity.of(other_device))


@pytest.mark.parametrize(("text", "message"), [
    (b"waivers: []", "w.yaml: field format: is None, not 'dmlconform-waivers/v1'"),
    (b"format: dmlconform-waivers/v1\nwaivers: {}", "w.yaml: field waivers: must be a list of waivers"),
    (b"format: [", "w.yaml: line 1: is not YAML"),
    (b"format: dmlconform-waivers/v1\nwaivers:\n  - date: 2025-13-01", "w.yaml: is not YAML it can read (month must"),
    (GOOD.replace(b"    reason: the driver rounds fp16 sums its own way\n", b""),
     "w.yaml: waiver DMLC-W-1: field reason: missing: a waiver names its id, the reason and who granted it"),
    (GOOD.replace(b"2025-06-01", b"June"), "w.yaml: waiver DMLC-W-1: field date: missing or not a date"),
    (GOOD.replace(b"2025-06-01", b"'2025-13-01'"), "w.yaml: waiver DMLC-W-1: field date: missing or not a date"),
    (GOOD.replace(b"'max_pooling_grad\\.standard/.*float16.*'", b"'('"),
     "w.yaml: waiver DMLC-W-1: field cases[1]: '(' is not a regular expression"),
    (GOOD.replace(b"device_id: \"2330\"", b"device_id: nvidia"),
     "w.yaml: waiver DMLC-W-1: field devices[0].device_id: 'nvidia' is not a PCI id"),
    (GOOD.replace(b"{adapter: \"llvmpipe*\", api: \"DirectML 1.15.*\"}", b"{gpu: yes}"),
     "w.yaml: waiver DMLC-W-1: field devices[1].gpu: is not a device field"),
    (GOOD.replace(b"{adapter: \"llvmpipe*\", api: \"DirectML 1.15.*\"}", b"{}"), "w.yaml: waiver DMLC-W-1: field devices[1]: must be a mapping"),
    (GOOD.replace(b"    devices:\n      - {vendor_id: 0x10DE, device_id: \"2330\", driver_version: \"31.0.*\"}\n"
                  b"      - {adapter: \"llvmpipe*\", api: \"DirectML 1.15.*\"}\n", b"    devices: []\n"),
     "w.yaml: waiver DMLC-W-1: field devices: must be a non-empty list: a waiver is granted for devices, never for all"),
    (GOOD.replace(b"id: DMLC-W-1", b"id: 'a b'"), "w.yaml: waiver a b: field id: 'a b': an id is letters"),
    (GOOD + GOOD[GOOD.index(b"  - id"):], "w.yaml: waivers[1]: field id: 'DMLC-W-1' is used by two waivers"),
    (GOOD.replace(b"    date:", b"    expires: 2026-01-01\n    date:"),
     "w.yaml: waiver DMLC-W-1: field expires: is not a waiver field"),
])
def test_each_mistake_is_one_line_naming_the_waiver_and_field(text: bytes, message: str) -> None:
    with pytest.raises(CertificationError) as caught:
        parse_waivers(text, "w.yaml")
    assert str(caught.value).startswith(message), str(caught.value)
    assert "\n" not in str(caught.value)


def result(case_id: str, status: Status, required: bool = True, outcome: Status | None = None) -> CaseResult:
    return CaseResult(case_id, "RESAMPLE_GRAD1", "FLOAT16", 2, FeatureLevel.parse("5_1"), status, required=required,
                      outcome=outcome, message="max 3 ULP")


def test_applying_waives_failures_it_covers_on_its_devices_and_nothing_else() -> None:
    waivers = parse_waivers(GOOD, "w.yaml")
    results = [result("resample_grad1.edge/fp16-sum-overflows", Status.FAIL),
               result("max_pooling_grad.standard/cells-float16-r2-0", Status.PASS),
               result("max_pooling_grad.standard/cells-float16-r2-1", Status.NOT_REQUIRED, False, Status.FAIL),
               result("max_pooling_grad.standard/cells-float16-r2-2", Status.FLAKE, outcome=Status.CRASH),
               result("max_pooling_grad.standard/cells-float16-r2-3", Status.NOT_RUN),
               result("relu_grad.edge/other", Status.FAIL)]
    use = apply_waivers(results, waivers, DeviceIdentity.of(H100))
    assert [r.status for r in results] == [Status.WAIVED, Status.PASS, Status.NOT_REQUIRED, Status.WAIVED,
                                           Status.NOT_RUN, Status.FAIL]
    assert results[0].outcome is Status.FAIL and results[3].outcome is Status.CRASH
    assert results[0].waiver is not None and results[0].waiver.granted_by == "certification board, ticket 12"
    assert results[0].message == "waived (DMLC-W-1): FAIL: max 3 ULP"
    assert use.applied == {"DMLC-W-1": ["resample_grad1.edge/fp16-sum-overflows",
                                        "max_pooling_grad.standard/cells-float16-r2-2"]}
    elsewhere = [result("resample_grad1.edge/fp16-sum-overflows", Status.FAIL)]
    use = apply_waivers(elsewhere, waivers, DeviceIdentity.of(OTHER))
    assert elsewhere[0].status is Status.FAIL and use.other_devices == ["DMLC-W-1"] and use.applied == {}
    passing = [result("resample_grad1.edge/fp16-sum-overflows", Status.PASS)]
    assert apply_waivers(passing, waivers, DeviceIdentity.of(H100)).unneeded == ["DMLC-W-1"]
