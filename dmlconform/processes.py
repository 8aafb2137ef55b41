"""How the runner makes processes (worker processes, the suite loader's helpers): a fork server on POSIX, spawn on
Windows. Light on purpose (the standard library only), so that a command can start the fork server first thing,
before its own imports."""

from __future__ import annotations

import multiprocessing
import sys
import threading
from multiprocessing.context import BaseContext

#: What the fork server imports once; each worker is then a fork of it (milliseconds, not a new interpreter), and
#: never a fork of the parent, whose threads (progress bar) would be copied mid-step. The backends that start programs
#: are among them, so that a worker starts its harness at once.
PRELOAD = ["dmlconform.runner.pool", "dmlconform.suite.loader", "dmlconform.backends.native",
           "dmlconform.backends.directml"]


def context() -> BaseContext:
    if sys.platform != "win32" and "forkserver" in multiprocessing.get_all_start_methods():
        forkserver = multiprocessing.get_context("forkserver")
        forkserver.set_forkserver_preload(PRELOAD)
        return forkserver
    return multiprocessing.get_context("spawn")


def start_fork_server() -> None:
    """Have the fork server start now, in a thread: its interpreter and imports take a few tenths of a second, which
    the command spends on its own imports and on preparing the backend instead of waiting at the first worker's
    start. Nothing where processes are spawned."""
    if context().get_start_method() != "forkserver":
        return
    from multiprocessing import forkserver

    threading.Thread(target=forkserver.ensure_running, name="dmlconform-fork-server", daemon=True).start()
