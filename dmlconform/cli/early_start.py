"""`dmlconform run --backend directml` starts its worker processes, and they their harnesses, before the command
imports the runner, the oracle or NumPy: a harness's device takes a few tenths of a second to come up (serialised in
the GPU driver when several start at once), and the command's imports and loading take as long again, so the two
overlap instead of following each other. The standard library and the harness's start (`directml/start.py`) alone.

The start is worked out exactly as `backends.prepare` would (the same function, the same options); the run engine
takes the early workers only when the request's options are the ones the start was worked out from
(`EarlyStart.serves`), and each worker's backend takes its harness over only when it is the very program it would
start (processes.EarlyProgram.matches). Anything that goes wrong here is left to the ordinary path, which says it.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

from dmlconform import processes
from dmlconform.directml.library import DirectMLNotFound
from dmlconform.directml.start import Device, ProgramStart, StartError, harness_start, log
from dmlconform.directml.wine import WineUnavailable, prepare_prefix

BACKEND = "directml"
#: DMLCONFORM_EARLY_START=off: workers start after the command's imports, as other backends' do (the benchmark's
#: peer; a way round should the early start ever be in the way).
SWITCH = "DMLCONFORM_EARLY_START"
#: The options the harness's start is worked out from (BackendOptions' fields of those names).
START_OPTIONS = ("harness", "directml", "directml_version", "adapter", "warp", "program_options")


@dataclass
class EarlyStart:
    """The harness's start worked out from `options`, and the workers already starting it."""

    options: dict[str, Any]
    start: ProgramStart
    workers: list[processes.WorkerProcess] = field(default_factory=list)

    def serves(self, backend_name: str, options: object) -> bool:
        """Whether a run of this backend with these options (a BackendOptions) is the run this start is for."""
        return backend_name == BACKEND and all(getattr(options, name, None) == value
                                               for name, value in self.options.items())

    def take_workers(self) -> list[processes.WorkerProcess]:
        workers, self.workers = self.workers, []
        return workers

    def discard(self) -> None:
        """Stop the workers nobody took (a run that ended before its pool began, or was not this start's)."""
        for worker in self.take_workers():
            worker.kill()


def wanted(backend_name: str) -> bool:
    return backend_name == BACKEND and os.environ.get(SWITCH, "").lower() != "off"


def start_early(backend_name: str, jobs: int, options: dict[str, Any]) -> EarlyStart | None:
    """The early start of `jobs` workers (0: one per CPU), each starting the directml backend's harness; None for
    another backend, with DMLCONFORM_EARLY_START=off, or when the start cannot be worked out here (the ordinary path
    then says why)."""
    if not wanted(backend_name) or options.get("harness"):
        return None
    start_options = {name: options.get(name) for name in START_OPTIONS}
    start_options["program_options"] = tuple(start_options["program_options"] or ())
    start_options["warp"] = bool(start_options["warp"])
    try:
        device = Device.parse(start_options["adapter"], start_options["warp"])
        start = harness_start(start_options["directml"], start_options["directml_version"], device, log,
                              start_options["program_options"])
        prepare_prefix(log)
    except (StartError, WineUnavailable, DirectMLNotFound, ValueError, RuntimeError, OSError):
        return None
    launch = start.launch
    program = processes.EarlyProgram.of(launch.argv, {**os.environ, **launch.environment}
                                        if launch.environment else os.environ)
    context = processes.context()
    count = (os.cpu_count() or 1) if jobs == 0 else jobs
    early = EarlyStart(start_options, start)
    try:
        for slot in range(count):
            early.workers.append(processes.WorkerProcess(context, slot, processes.WORKER_MAIN, program))
    except OSError:
        early.discard()
        return None
    return early
