"""`dmlconform doctor`'s table: one row per finding, each missing or broken piece with the command that fixes it."""

from __future__ import annotations

from typing import TYPE_CHECKING

from dmlconform.doctor import Diagnosis, State

if TYPE_CHECKING:
    from rich.console import Console

STYLES = {State.OK: "green", State.MISSING: "red", State.BROKEN: "red", State.OPTIONAL: "yellow", State.INFO: "dim"}


def render_doctor(diagnosis: Diagnosis, console: Console) -> None:
    from rich.markup import escape
    from rich.table import Table

    table = Table("area", "what", "state", "found", "fix", show_lines=False)
    for finding in diagnosis.findings:
        style = STYLES[finding.state]
        table.add_row(finding.area, escape(finding.item), f"[{style}]{finding.state.value}[/{style}]",
                      escape(finding.found), escape(finding.fix))
    console.print(table)
    if diagnosis.directml_works:
        working = [f.item for f in diagnosis.findings if f.directml_path and f.state is State.OK]
        console.print(f"[green]DirectML works here[/green]: {escape('; '.join(working))}")
    elif not diagnosis.live:
        if diagnosis.problems:
            console.print(f"[red]{len(diagnosis.problems)} row(s) missing or broken[/red]: fix them, in order (the "
                          "handshake was not tried: --no-handshake)")
        else:
            console.print("[green]nothing missing or broken[/green] (the handshake was not tried: --no-handshake; "
                          "`dmlconform doctor` starts the harness on each device)")
    else:
        console.print("[red]no DirectML path works here[/red]: fix the rows marked missing or broken, in order")
