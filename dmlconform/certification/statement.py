"""The conformance statement: the package's claim in plain words, rendered from certification.json and the
results (verify renders it again and requires the same text)."""

from __future__ import annotations

from typing import Any

from dmlconform.case_result import Status
from dmlconform.run_result import RunResult
from dmlconform.verdicts import by_path, effective_status, level_verdicts, target_verdict

#: Cases listed by name under "not matched"; the rest are counted (results.json has them all).
LISTED = 50


def path_verdict_lines(document: dict[str, Any], run: RunResult) -> list[str]:
    """Where the claim was made on more than one execution path (contract §9): each path's required cases, matched
    and waived, and whether that path alone holds at the claimed level."""
    asked = tuple(document["claim"].get("paths") or ("operator",))
    groups = by_path(run.results, asked)
    if len(groups) < 2:
        return []
    lines = []
    for name, group in groups.items():
        required = [r for r in group if r.required]
        matched = sum(1 for r in required if effective_status(r).matched)
        waived = sum(1 for r in required if r.status is Status.WAIVED)
        holds = "holds" if matched + waived == len(required) else "does not hold"
        lines.append(f"  {'path ' + name + ':':<22}{matched} of {len(required)} required cases matched; {waived} "
                     f"waived; {holds} on this path")
    return lines


def render_statement(document: dict[str, Any], run: RunResult) -> str:
    claim, verdict, device = document["claim"], document["verdict"], document["device"]
    tool, suite, waivers = document["tool"], document["suite"], document["waivers"]
    level = claim["feature_level"]
    lines = ["DirectML conformance statement (a dmlconform certification package)", ""]
    paths = claim.get("paths")
    lines.append(f"Claim:    conformant at DirectML feature level {level}, {suite['tier']} tier"
                 + (f", on the paths {', '.join(paths)}" if paths else ""))
    judged = target_verdict(level_verdicts(run.results, run.target_level), run.target_level)
    if judged is not None:
        covered = ", ".join(name for name in judged.operators if name not in judged.untested) or "no operator"
        lines.append(f"Covers:   {covered}" + (f"; not tested, so not part of the claim: {', '.join(judged.untested)}"
                                               if judged.untested else ""))
    known = document.get("known_issues") or {}
    known_waived = sum(len(cases) for cases in (known.get("applied") or {}).values())
    if verdict["certified"]:
        waived = f", with {verdict['waived']} waived case(s)" if verdict["waived"] else ""
        if known_waived:
            waived += (f" ({known_waived} of them DirectML {known.get('applied_release')}'s own known issues, not "
                       "the device's)")
        lines.append(f"Verdict:  HOLDS{waived}")
    else:
        lines.append("Verdict:  DOES NOT HOLD")
        lines += [f"          - {reason}" for reason in verdict["reasons"]]
    lines += ["", "Device (the backend's handshake)"]
    for label, key in (("adapter", "device"), ("PCI vendor:device", "adapter_vendor_device"),
                       ("driver version", "driver_version"), ("API", "api"), ("backend", "name"),
                       ("backend version", "version")):
        if device.get(key):
            lines.append(f"  {label + ':':<22}{device[key]}")
    source = device.get("feature_level_source") or "as claimed"
    lines.append(f"  {'feature level:':<22}{device['feature_level']} ({source})")
    if device.get("harness"):
        lines.append(f"  {'harness command:':<22}{device['harness']}")
    for path, digest in sorted(document.get("harness_files", {}).items()):
        lines.append(f"  {'harness file:':<22}{path}")
        lines.append(f"  {'':<22}sha256 {digest}")
    lines += ["", "Run"]
    lines.append(f"  {'tool:':<22}dmlconform {tool['version']} (source sha256 {tool['source_sha256']})")
    lines.append(f"  {'suite:':<22}{suite['tier']} tier, {suite['cases']} cases, {suite['files']} files "
                 f"(fingerprint {suite['fingerprint']})")
    lines.append(f"  {'started:':<22}{run.started.isoformat(timespec='seconds')}, {run.duration_s:.1f} s")
    lines.append(f"  {'retries:':<22}{run.settings.get('retries')}")
    shards = document.get("shards") or []
    if document.get("shard"):
        lines.append(f"  {'shard:':<22}{document['shard']['index']} of {document['shard']['count']} (not a "
                     "certification until every shard is merged)")
    elif shards:
        lines.append(f"  {'shards:':<22}{len(shards)} merged")
    lines += ["", f"Results at {level}"]
    required = [r for r in run.results if r.required]
    counts: dict[str, int] = {}
    for result in required:
        if effective_status(result).matched:
            counts[result.status.value] = counts.get(result.status.value, 0) + 1
    by_status = ", ".join(f"{status} {count}" for status, count in sorted(counts.items()))
    lines.append(f"  {verdict['matched']} of {verdict['required']} required cases matched"
                 + (f" ({by_status})" if by_status else "") + f"; {verdict['waived']} waived; "
                 f"{len(verdict['not_matched'])} neither")
    lines += path_verdict_lines(document, run)
    above = len(run.results) - len(required)
    if above:
        lines.append(f"  {above} case(s) above {level} ran and are not required")
    waived = [r for r in run.results if r.status is Status.WAIVED]
    if waived:
        lines += ["", f"Waived ({len(waived)})"]
        for result in waived:
            waiver = result.waiver
            assert waiver is not None
            lines.append(f"  {result.id}: {result.outcome.value if result.outcome else '?'}; waiver {waiver.id}: "
                         f"{waiver.reason} (granted by {waiver.granted_by}, {waiver.date})")
    by_id = {r.id: r for r in run.results}
    if verdict["not_matched"]:
        lines += ["", f"Not matched ({len(verdict['not_matched'])})"]
        for case_id in verdict["not_matched"][:LISTED]:
            result = by_id.get(case_id)
            status = effective_status(result).value if result else "?"
            message = " ".join(result.message.split())[:160] if result else ""
            lines.append(f"  {case_id}: {status}: {message}")
        if len(verdict["not_matched"]) > LISTED:
            lines.append(f"  ... and {len(verdict['not_matched']) - LISTED} more (results.json has them all)")
    if known:
        lines += ["", "DirectML's known issues"]
        lines.append(f"  {known.get('note', '')}")
        if known.get("file"):
            lines.append(f"  {'applied:':<22}{known_waived} case(s), listed under Waived; the issues are in "
                         f"{known['file']} (sha256 {known.get('sha256')})")
        if known.get("unneeded"):
            lines.append(f"  {'not reproduced:':<22}{', '.join(known['unneeded'])}")
    if waivers.get("unneeded") or waivers.get("other_devices"):
        lines += ["", "Waivers given but not applied"]
        if waivers.get("unneeded"):
            lines.append(f"  not needed (their cases matched): {', '.join(waivers['unneeded'])}")
        if waivers.get("other_devices"):
            lines.append(f"  for other devices: {', '.join(waivers['other_devices'])}")
    lines += ["", f"Check this package with `dmlconform verify PACKAGE` (dmlconform {tool['version']}): it re-judges "
              "every case from outputs/", "against the suite, and CHECKSUMS.sha256 pins every file."]
    return "\n".join(lines) + "\n"
