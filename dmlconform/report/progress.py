"""Progress while cases run: a rich bar with counts by status and an ETA on a terminal; in CI (`CI` set)
or when the output is not a terminal, a plain line every few seconds that a log viewer can show."""

from __future__ import annotations

import os
import sys
import time
from typing import TextIO

from rich.console import Console

from dmlconform.case_result import CaseResult

#: Seconds between plain progress lines.
LINE_INTERVAL_S = 5.0


def wants_plain_lines(console: Console) -> bool:
    return bool(os.environ.get("CI")) or not console.is_terminal


def counts_text(counts: dict[str, int]) -> str:
    return ", ".join(f"{count} {status}" for status, count in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))


def duration_text(seconds: float) -> str:
    minutes, whole = divmod(max(round(seconds), 0), 60)
    hours, minutes = divmod(minutes, 60)
    if hours:
        return f"{hours}h{minutes:02d}m{whole:02d}s"
    return f"{minutes}m{whole:02d}s" if minutes else f"{whole}s"


class ProgressReporter:
    """Counts finished cases by status; subclasses show them."""

    def __init__(self, total: int, label: str) -> None:
        self.total, self.label = total, label
        self.done = 0
        self.counts: dict[str, int] = {}
        self.started = time.monotonic()

    def __enter__(self) -> ProgressReporter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def advance(self, result: CaseResult) -> None:
        self.done += 1
        self.counts[result.status.value] = self.counts.get(result.status.value, 0) + 1
        self.show()

    def skip_done(self, results: list[CaseResult]) -> None:
        """Cases that need not run (taken from a journal, skipped) count as done from the start."""
        for result in results:
            self.done += 1
            self.counts[result.status.value] = self.counts.get(result.status.value, 0) + 1
        self.already = self.done

    already = 0

    def eta_s(self) -> float | None:
        ran = self.done - self.already
        if ran <= 0:
            return None
        return (time.monotonic() - self.started) / ran * (self.total - self.done)

    def show(self) -> None: ...

    def close(self) -> None: ...


class LineProgress(ProgressReporter):
    def __init__(self, total: int, label: str, stream: TextIO | None = None,
                 interval_s: float = LINE_INTERVAL_S) -> None:
        super().__init__(total, label)
        self.stream = stream or sys.stderr
        self.interval_s = interval_s
        self.last = time.monotonic()

    def show(self) -> None:
        now = time.monotonic()
        if now - self.last >= self.interval_s:
            self.last = now
            self.stream.write(self.line() + "\n")
            self.stream.flush()

    def line(self) -> str:
        percent = 100 * self.done // self.total if self.total else 100
        eta = self.eta_s()
        left = f", about {duration_text(eta)} left" if eta is not None else ""
        counts = f": {counts_text(self.counts)}" if self.counts else ""
        return (f"dmlconform {self.label}: {self.done}/{self.total} cases ({percent}%){counts}; "
                f"{duration_text(time.monotonic() - self.started)} elapsed{left}")


class BarProgress(ProgressReporter):
    def __init__(self, total: int, label: str, console: Console) -> None:
        super().__init__(total, label)
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            TextColumn,
            TimeElapsedColumn,
            TimeRemainingColumn,
        )

        columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                   TextColumn("{task.fields[counts]}"), TimeElapsedColumn(), TextColumn("ETA"),
                   TimeRemainingColumn())
        self.progress = Progress(*columns, console=console, transient=True)
        self.task = self.progress.add_task(label, total=total, counts="")
        self.progress.start()

    def show(self) -> None:
        self.progress.update(self.task, completed=self.done, counts=counts_text(self.counts))

    def skip_done(self, results: list[CaseResult]) -> None:
        super().skip_done(results)
        self.show()

    def close(self) -> None:
        self.progress.stop()


def progress_for(console: Console, total: int, label: str) -> ProgressReporter:
    if wants_plain_lines(console):
        return LineProgress(total, label)
    return BarProgress(total, label, console)
