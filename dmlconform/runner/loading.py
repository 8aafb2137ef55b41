"""Parse suite files on several cores: the command parses some, helper processes parse the others at once.

Loading (YAML, generated and .npz tensors, every description rule) costs a bundled case more than running it
on the reference, and nothing can run before the selection is known, so `dmlconform run` spreads the files
over `helpers` processes forked from the worker pool's fork server, besides parsing files itself. Files are
handed out one at a time, so a large file does not hold up the others. The result is what `load_suites`
gives: per file in discovery order, its cases and suite name, or the SuiteError of the first file (in that
order) that has one. A helper that dies costs nothing but time: its file is parsed again here.
"""

from __future__ import annotations

import contextlib
import os
import signal
from multiprocessing.connection import Connection, wait
from pathlib import Path

from dmlconform.case import Case
from dmlconform.runner.pool import _context
from dmlconform.suite import SuiteError
from dmlconform.suite.loader import SuiteParser, load_suite, load_suites
from dmlconform.suite.tiers import Tier

#: Below this many bytes of suite files, starting a helper costs more than it saves.
MIN_PARALLEL_BYTES = 256 * 1024
#: Files handed to a helper ahead, so that it never waits for this process to finish a file of its own.
QUEUED_PER_HELPER = 3

Parsed = tuple[list[Case], str]


def parallel_parser(helpers: int) -> SuiteParser:
    """A SuiteParser that uses `helpers` processes besides this one (none: `load_suites`)."""

    def parse(files: list[tuple[Path, Path]], tier: Tier | None) -> list[Parsed]:
        size = sum(_size(file) for file, _ in files)
        if helpers < 1 or len(files) < 2 or size < MIN_PARALLEL_BYTES:
            return load_suites(files, tier)
        return _parse_in_parallel(files, tier, min(helpers, len(files) - 1))

    return parse


def default_helpers() -> int:
    """One helper per core beyond the first."""
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:
        cores = os.cpu_count() or 1
    return max(cores - 1, 0)


def _size(file: Path) -> int:
    try:
        return file.stat().st_size
    except OSError:
        return 0


def _helper_main(conn: Connection) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the command decides when to stop
    while True:
        try:
            job = conn.recv()
        except (EOFError, OSError):
            return
        if job is None:
            return
        position, file, root, tier = job
        try:
            conn.send((position, "parsed", load_suite(file, root, tier)))
        except SuiteError as exc:
            conn.send((position, "error", exc))
        except Exception:  # an unexpected failure: the command parses the file itself and shows what happens
            conn.send((position, "again", None))


class _Helper:
    def __init__(self) -> None:
        context = _context()
        self.conn, child = context.Pipe()
        self.process = context.Process(target=_helper_main, args=(child,), name="dmlconform-loader", daemon=True)
        self.process.start()
        child.close()
        self.positions: list[int] = []  # handed out, not answered yet, in order

    def give(self, position: int, file: Path, root: Path, tier: Tier | None) -> bool:
        try:
            self.conn.send((position, file, root, tier))
        except (OSError, ValueError):
            return False
        self.positions.append(position)
        return True

    def stop(self) -> None:
        with contextlib.suppress(OSError, ValueError):
            self.conn.send(None)
            self.conn.close()
        self.process.join(1.0)
        if self.process.exitcode is None:
            self.process.kill()
            self.process.join(1.0)


def _parse_in_parallel(files: list[tuple[Path, Path]], tier: Tier | None, helpers: int) -> list[Parsed]:
    results: dict[int, Parsed] = {}
    errors: dict[int, SuiteError] = {}
    todo = list(range(len(files)))
    again: list[int] = []

    def parse_here(position: int) -> None:
        try:
            results[position] = load_suite(*files[position], tier)
        except SuiteError as exc:
            errors[position] = exc

    workers = [_Helper() for _ in range(helpers)]

    def hand_out(worker: _Helper) -> None:
        while todo and len(worker.positions) < QUEUED_PER_HELPER and worker.give(todo[0], *files[todo[0]], tier):
            todo.pop(0)

    try:
        for worker in workers:
            hand_out(worker)
        while todo or any(w.positions for w in workers):
            if todo:  # this process takes files from the end, the helpers from the front
                parse_here(todo.pop())
            busy = [w for w in workers if w.positions]
            if not busy:
                continue
            ready = wait([w.conn for w in busy] + [w.process.sentinel for w in busy], timeout=0 if todo else None)
            for worker in busy:
                if worker.conn not in ready and worker.process.sentinel not in ready:
                    continue
                try:
                    position, kind, payload = worker.conn.recv() if worker.conn.poll() else (None, "died", None)
                except (EOFError, OSError):
                    position, kind, payload = None, "died", None
                if kind == "died":  # the helper is gone: its files are parsed here
                    again.extend(worker.positions)
                    worker.positions.clear()
                    continue
                worker.positions.remove(position)
                if kind == "parsed":
                    results[position] = payload
                elif kind == "error":
                    errors[position] = payload
                else:
                    again.append(position)
                hand_out(worker)
    finally:
        for worker in workers:
            worker.stop()
    for position in again:
        parse_here(position)
    if errors:
        raise errors[min(errors)]
    return [results[position] for position in range(len(files))]
