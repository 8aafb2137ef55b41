"""Parse suite files on several cores: the command parses some, helper processes parse the others at once.

Loading (YAML, generated and .npz tensors, every description rule) costs a bundled case more than running it
on the reference, and nothing can run before the selection is known, so `dmlconform run` spreads the files
over `helpers` processes forked from the worker pool's fork server, besides parsing files itself. Files are
handed out one at a time, largest first, so that the last to finish are small ones; a thread per helper takes
in its answers as they come, so that a helper never waits for this process to finish a file. The result is
what `load_suites` gives: per file in discovery order, its cases and suite name, or the SuiteError of the
first file (in that order) that has one. A helper that dies costs nothing but time: its files are parsed again here.
The tree's limits are checked as files come in: once they are passed no more files are handed out, and the run
stops with the limit's error (each file was held to the limits on its own while it was parsed).
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading
from collections import deque
from multiprocessing.connection import Connection
from pathlib import Path

from dmlconform.case import Case
from dmlconform.processes import context
from dmlconform.suite import SuiteError
from dmlconform.suite.limits import SuiteLimits, Tally
from dmlconform.suite.loader import SuiteParser, count_into, load_suite, load_suites
from dmlconform.suite.tiers import Tier

#: Below this many bytes of suite files, starting a helper costs more than it saves.
MIN_PARALLEL_BYTES = 256 * 1024
#: Files handed to a helper ahead, so that it never waits for this process to finish a file of its own.
QUEUED_PER_HELPER = 3

Parsed = tuple[list[Case], str]


def parallel_parser(helpers: int) -> SuiteParser:
    """A SuiteParser that uses `helpers` processes besides this one (none: `load_suites`)."""

    def parse(files: list[tuple[Path, Path]], tier: Tier | None, limits: SuiteLimits) -> list[Parsed]:
        size = sum(_size(file) for file, _ in files)
        if helpers < 1 or len(files) < 2 or size < MIN_PARALLEL_BYTES:
            return load_suites(files, tier, limits)
        return _parse_in_parallel(files, tier, limits, min(helpers, len(files) - 1))

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
        position, file, root, tier, limits = job
        try:
            conn.send((position, "parsed", load_suite(file, root, tier, limits)))
        except SuiteError as exc:
            conn.send((position, "error", exc))
        except Exception:  # an unexpected failure: the command parses the file itself and shows what happens
            conn.send((position, "again", None))


class _Helper:
    def __init__(self) -> None:
        made_by = context()
        self.conn, child = made_by.Pipe()
        self.process = made_by.Process(target=_helper_main, args=(child,), name="dmlconform-loader", daemon=True)
        self.process.start()
        child.close()
        self.positions: list[int] = []  # handed out, not answered yet, in order

    def give(self, position: int, file: Path, root: Path, tier: Tier | None, limits: SuiteLimits) -> bool:
        try:
            self.conn.send((position, file, root, tier, limits))
        except (OSError, ValueError):
            return False
        self.positions.append(position)
        return True

    def stop(self, politely: bool) -> None:
        """Ends the helper: asked to (its thread is done with the pipe), or killed (its thread may still use it)."""
        if politely:
            with contextlib.suppress(OSError, ValueError):
                self.conn.send(None)
            self.process.join(1.0)
        if self.process.exitcode is None:
            self.process.kill()
            self.process.join(1.0)
        if politely:
            self.conn.close()


def _parse_in_parallel(files: list[tuple[Path, Path]], tier: Tier | None, limits: SuiteLimits,
                       helpers: int) -> list[Parsed]:
    results: dict[int, Parsed] = {}
    errors: dict[int, SuiteError] = {}
    tree = Tally(limits)
    passed: list[SuiteError] = []  # the tree's limit, once passed: nothing more is handed out
    again: list[int] = []  # files a helper could not parse: parsed here at the end
    # Largest first, whoever is free next: the last files to finish are small ones, so no one waits long.
    todo = deque(sorted(range(len(files)), key=lambda position: -_size(files[position][0])))
    lock = threading.Lock()

    def take() -> int | None:
        with lock:
            return todo.popleft() if todo and not passed else None

    def keep(position: int, parsed: Parsed) -> None:
        with lock:
            try:
                count_into(tree, *files[position], parsed[0])
            except SuiteError as exc:
                passed.append(exc)
                return
            results[position] = parsed

    def parse_here(position: int) -> None:
        try:
            keep(position, load_suite(*files[position], tier, limits))
        except SuiteError as exc:
            errors[position] = exc

    def serve(helper: _Helper) -> None:
        # A thread per helper reads its answers as soon as they come: a helper whose last answer (often
        # megabytes) is still in the pipe cannot send the next one, and would wait while this process parses.
        while True:
            while len(helper.positions) < QUEUED_PER_HELPER and (position := take()) is not None:
                if not helper.give(position, *files[position], tier, limits):
                    again.append(position)
                    break
            if not helper.positions:
                return
            try:
                position, kind, payload = helper.conn.recv()
            except (EOFError, OSError):  # the helper is gone: its files are parsed here
                again.extend(helper.positions)
                helper.positions.clear()
                return
            helper.positions.remove(position)
            if kind == "parsed":
                keep(position, payload)
            elif kind == "error":
                errors[position] = payload
            else:
                again.append(position)

    workers: list[_Helper] = []

    def start_and_serve() -> None:
        # Started from the thread that serves it: the first start may wait for the fork server to come up (the
        # worker pool starts it at the same time), and this process parses files meanwhile.
        try:
            helper = _Helper()
        except Exception:  # no helper: this process parses its files
            return
        with lock:
            workers.append(helper)
        serve(helper)

    threads = [threading.Thread(target=start_and_serve, name="dmlconform-loader", daemon=True)
               for _ in range(helpers)]
    finished = False
    try:
        for thread in threads:
            thread.start()
        while (position := take()) is not None:
            parse_here(position)
        for thread in threads:
            thread.join()
        finished = True
    finally:
        for worker in workers:
            worker.stop(finished)
    for position in again:
        if not passed:
            parse_here(position)
    if passed:
        raise passed[0]
    if errors:
        raise errors[min(errors)]
    return [results[position] for position in range(len(files))]
