"""How the runner makes processes (worker processes, the suite loader's helpers): a fork server on POSIX, spawn on
Windows. Light on purpose (the standard library only), so that a command can start the fork server first thing,
before its own imports."""

from __future__ import annotations

import contextlib
import importlib
import multiprocessing
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from multiprocessing.connection import Connection
from multiprocessing.context import BaseContext

#: What the fork server imports once; each worker is then a fork of it (milliseconds, not a new interpreter), and
#: never a fork of the parent, whose threads (progress bar) would be copied mid-step. The backends that start programs
#: are among them, so that a worker starts its harness at once.
PRELOAD = ["dmlconform.runner.pool", "dmlconform.suite.loader", "dmlconform.backends.native",
           "dmlconform.backends.directml"]
#: What the fork server preloads in this process: PRELOAD, or nothing (`start_fork_server(light=True)`).
_preload = PRELOAD


def context() -> BaseContext:
    if sys.platform != "win32" and "forkserver" in multiprocessing.get_all_start_methods():
        forkserver = multiprocessing.get_context("forkserver")
        forkserver.set_forkserver_preload(_preload)
        return forkserver
    return multiprocessing.get_context("spawn")


def start_fork_server(light: bool = False) -> None:
    """Have the fork server start now, in a thread: its interpreter and imports take a few tenths of a second, which
    the command spends on its own imports and on preparing the backend instead of waiting at the first worker's
    start. `light`: a fork server that imports nothing first, ready in a few hundredths, for workers that start a
    program before their imports (`worker_entry` with an EarlyProgram); later workers then import for themselves.
    Nothing where processes are spawned."""
    global _preload
    if light:
        _preload = []
    if context().get_start_method() != "forkserver":
        return
    from multiprocessing import forkserver

    threading.Thread(target=forkserver.ensure_running, name="dmlconform-fork-server", daemon=True).start()


# -- worker processes ------------------------------------------------------------------------------
#: What a worker process serves with once started (runner/pool.py), named here rather than imported: the worker
#: imports it only after it has started its early program.
WORKER_MAIN = "dmlconform.runner.pool:serve_worker"


@dataclass(frozen=True)
class EarlyProgram:
    """A program a worker process starts first thing, before it imports the runner or has its setup (`worker_entry`):
    the command line and the whole environment. The worker's backend takes it over only if it is exactly the program
    the backend would start (backends/native.py), else stops it and starts its own."""

    argv: tuple[str, ...]
    environment: tuple[tuple[str, str], ...]

    @classmethod
    def of(cls, argv: Sequence[str], environment: Mapping[str, str]) -> EarlyProgram:
        return cls(tuple(argv), tuple(sorted(environment.items())))

    def matches(self, argv: Sequence[str], environment: Mapping[str, str]) -> bool:
        return list(self.argv) == list(argv) and dict(self.environment) == dict(environment)


def start_program(argv: Sequence[str], environment: Mapping[str, str] | None) -> subprocess.Popen[bytes]:
    """A harness (or model host) process with its three pipes: the one way the runner starts one, so that a program
    started early and one started by the backend are started alike. OSError when it cannot be started."""
    return subprocess.Popen(list(argv), stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            bufsize=0, env=dict(environment) if environment is not None else None)


@dataclass
class StartedProgram:
    """A program `worker_entry` started before the worker had its setup, and the program it was meant to be."""

    process: subprocess.Popen[bytes]
    program: EarlyProgram


class WorkerProcess:
    """A worker process and its two pipes: `conn` (its setup first, then cases; its results back) and the lifeline,
    whose end tells it the parent is gone. Started at once; `main` ("module:function", imported by the worker after it
    has started `early`) serves it."""

    def __init__(self, context: BaseContext, slot: int, main: str, early: EarlyProgram | None = None) -> None:
        self.slot = slot
        self.conn, child_conn = context.Pipe()
        lifeline_read, self.lifeline = context.Pipe(duplex=False)
        self.process = context.Process(target=worker_entry, args=(main, child_conn, lifeline_read, early),
                                       name=f"dmlconform-worker-{slot}", daemon=True)
        self.process.start()
        child_conn.close()
        lifeline_read.close()

    def kill(self) -> None:
        pid = self.process.pid
        if pid is not None and self.process.exitcode is None:
            try:
                os.killpg(pid, signal.SIGKILL)  # the worker and the harness it started
            except (AttributeError, OSError):
                with contextlib.suppress(OSError):
                    self.process.kill()
        self.process.join(2.0)
        for conn in (self.conn, self.lifeline):
            with contextlib.suppress(OSError):
                conn.close()


def worker_entry(main: str, conn: Connection, lifeline: Connection, early: EarlyProgram | None) -> None:
    """A worker process's first steps, on the standard library alone: its own process group (so that a terminal's
    Ctrl-C reaches only the parent and `kill` takes the worker's harness too), death with the parent, and `early`
    started, so that the program's device comes up while the worker imports the runner; then `main(conn, started)`."""
    if hasattr(os, "setsid"):
        os.setsid()
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent decides when to stop
    threading.Thread(target=_die_with_parent, args=(lifeline,), daemon=True).start()
    started = None
    if early is not None:
        with contextlib.suppress(OSError):  # the backend then starts its own, and says why it cannot
            started = StartedProgram(start_program(early.argv, dict(early.environment)), early)
    module, function = main.split(":")
    # Imported by name, after the program started: the runner's modules are what the early start runs ahead of.
    getattr(importlib.import_module(module), function)(conn, started)


def _die_with_parent(lifeline: Connection) -> None:
    with contextlib.suppress(EOFError, OSError):
        lifeline.recv_bytes()
    # The parent is gone (or closed the lifeline after a polite stop that this worker outlived).
    if hasattr(os, "killpg"):
        with contextlib.suppress(OSError):
            os.killpg(0, signal.SIGKILL)
    os._exit(1)
