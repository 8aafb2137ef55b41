"""The crosscheck report: console and JSON (format `dmlconform-crosscheck/v1`)."""

from __future__ import annotations

import statistics
from typing import Any

from rich.console import Console
from rich.table import Table
from rich.text import Text

from dmlconform import __version__
from dmlconform.results.document import backend_json
from dmlconform.runner.crosscheck import CaseCrosscheck, CrosscheckRun, Verdict

FORMAT = "dmlconform-crosscheck/v1"
SHOWN = 25
VERDICT_STYLE = {Verdict.ALL_AGREE: "green", Verdict.BACKEND_DIFFERS: "yellow", Verdict.GOLDEN_SUSPECT: "bold red",
                 Verdict.UNDECIDED: "magenta"}


def verdict_text(case: CaseCrosscheck) -> str:
    """`backend torch differs`, `golden suspect`, ... as a person reads it."""
    if case.verdict is Verdict.BACKEND_DIFFERS:
        names = ", ".join(case.named)
        label = f"backend {names} differs" if len(case.named) == 1 else f"backends {names} differ"
        return label + (" (explained)" if case.explained else "")
    return case.verdict.value


# -- console -------------------------------------------------------------------------------------------------
def render_crosscheck(run: CrosscheckRun, console: Console, shown: int = SHOWN) -> None:
    console.print(f"[bold]dmlconform crosscheck[/]: {len(run.cases)} cases on {len(run.labels)} backends "
                  f"in {run.duration_s:.2f} s")
    for label, info in zip(run.labels, run.backends, strict=True):
        console.print(f"  {label}: {info.version} on {info.device}", markup=False, highlight=False)
    if not run.cases:
        console.print("[yellow]no cases selected[/]")
        return
    console.print(_status_table(run))
    console.print(_time_table(run))
    _candidate_splits(run, console)
    _disagreements(run, console, shown)
    counts = run.counts()
    line = ", ".join(f"{count} {verdict}" for verdict, count in counts.items() if count)
    explained = sum(1 for c in run.cases if c.explained)
    if explained:
        line += f" ({explained} explained by documented semantic differences)"
    suspect = run.golden_suspect
    if suspect:
        console.print(Text(f"GOLDEN SUSPECT in {len(suspect)} case(s): {line}", style="bold red"))
    else:
        console.print(Text(f"no golden suspect: {line}", style="bold green"))


def _status_table(run: CrosscheckRun) -> Table:
    table = Table(title="statuses against the golden, per operator and backend", title_justify="left")
    table.add_column("operator")
    for label in run.labels:
        table.add_column(label)
    table.add_column("verdicts")
    for op in sorted({c.op for c in run.cases}):
        cases = [c for c in run.cases if c.op == op]
        row = [op]
        for label in run.labels:
            counts: dict[str, int] = {}
            for case in cases:
                status = case.take(label).status.value
                counts[status] = counts.get(status, 0) + 1
            row.append(", ".join(f"{n} {s}" for s, n in sorted(counts.items())))
        verdicts: dict[str, int] = {}
        for case in cases:
            verdicts[case.verdict.value] = verdicts.get(case.verdict.value, 0) + 1
        row.append(", ".join(f"{n} {v}" for v, n in verdicts.items()))
        table.add_row(*row)
    return table


def _time_table(run: CrosscheckRun) -> Table:
    table = Table(title="time per case (backend.run: checks, transfers, compute)", title_justify="left")
    for column in ("backend", "cases run", "median", "mean", "max"):
        table.add_column(column, justify="right" if column != "backend" else "left")
    for label in run.labels:
        times = [c.take(label).duration_s for c in run.cases if c.take(label).ran]
        if not times:
            table.add_row(label, "0", "—", "—", "—")
            continue
        table.add_row(label, str(len(times)), _ms(statistics.median(times)), _ms(statistics.fmean(times)),
                      _ms(max(times)))
    return table


def _ms(seconds: float) -> str:
    return f"{seconds * 1e3:.3f} ms"


def _candidate_splits(run: CrosscheckRun, console: Console) -> None:
    split = [c for c in run.cases if c.verdict is Verdict.ALL_AGREE and "different candidates" in c.note]
    if not split:
        return
    console.print(f"[bold]{len(split)} case(s) where backends follow different candidates[/] (each candidate is a "
                  "right answer; not a disagreement):")
    for case in split:
        followed = ", ".join(f"{t.backend}={t.matched}" for t in case.takes if t.matched)
        console.print(f"  {case.id} [{split_behaviour(case)}]: {followed}", markup=False, highlight=False)


def split_behaviour(case: CaseCrosscheck) -> str:
    """The behaviour whose readings the backends differ in: the case's own, or the one nested in it (a NaN reading of
    a not-pooled-size MaxPoolingGrad case is maxpool-nan-input's, verdicts.NESTED_BEHAVIOURS)."""
    from dmlconform.verdicts import behaviour_readings

    if case.behaviour is None:
        return ""
    readings: dict[str, set[str]] = {}
    for take in case.takes:
        if take.matched:
            for name, reading in behaviour_readings(case.behaviour, take.matched).items():
                readings.setdefault(name, set()).add(reading)
    differing = [name for name, seen in readings.items() if len(seen) > 1]
    return ", ".join(differing) or case.behaviour


def _disagreements(run: CrosscheckRun, console: Console, shown: int) -> None:
    cases = [c for c in run.cases if c.verdict is not Verdict.ALL_AGREE]
    cases.sort(key=lambda c: (c.verdict is not Verdict.GOLDEN_SUSPECT, c.explained))
    for case in cases[:shown]:
        console.print(Text(f"{case.id}: {verdict_text(case)}", style=VERDICT_STYLE[case.verdict]))
        if case.note:
            console.print(f"    {case.note}", markup=False, highlight=False)
        for take in case.takes:
            mark = "=" if take.status.matched else "≠"
            matched = f" ({take.matched})" if take.matched else ""
            console.print(f"    {mark} golden  {take.backend}: {take.status.value}{matched}: {take.message}",
                          markup=False, highlight=False)
        for pair in case.pairs:
            if pair.agree:
                console.print(f"    {pair.first} and {pair.second} agree", markup=False, highlight=False)
            else:
                ulp = "" if pair.max_ulp is None else f", max {pair.max_ulp} ULP"
                where = "" if pair.first_index is None else f", first at {list(pair.first_index)}"
                console.print(f"    {pair.first} and {pair.second} differ in {pair.mismatches} element(s){ulp}{where}",
                              markup=False, highlight=False)
    if len(cases) > shown:
        console.print(f"… and {len(cases) - shown} more (see --json)")


# -- JSON ------------------------------------------------------------------------------------------------------
def crosscheck_document(run: CrosscheckRun) -> dict[str, Any]:
    return {
        "format": FORMAT,
        "tool_version": __version__,
        "started": run.started.isoformat(),
        "duration_s": round(run.duration_s, 6),
        "backends": [{"label": label, **backend_json(info)} for label, info in zip(run.labels, run.backends,
                                                                                 strict=True)],
        "summary": run.counts(),
        "golden_suspect": [c.id for c in run.golden_suspect],
        "explained": [c.id for c in run.cases if c.explained],
        "cases": [_case_json(case) for case in run.cases],
    }


def _case_json(case: CaseCrosscheck) -> dict[str, Any]:
    return {
        "id": case.id, "op": case.op, "dtype": case.dtype, "behaviour": case.behaviour,
        "verdict": case.verdict.value, "verdict_text": verdict_text(case), "named": list(case.named),
        "explained": case.explained, "note": case.note,
        "backends": {t.backend: {"status": t.status.value, "matched": t.matched, "matched_all": list(t.matched_all),
                                 "max_ulp": t.max_ulp, "message": t.message, "duration_s": round(t.duration_s, 6),
                                 "ran": t.ran, "explanation": t.explanation} for t in case.takes},
        "pairs": [{"backends": [p.first, p.second], "agree": p.agree, "mismatches": p.mismatches,
                   "max_ulp": p.max_ulp, "first_index": None if p.first_index is None else list(p.first_index)}
                  for p in case.pairs],
    }
