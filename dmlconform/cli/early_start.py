"""`dmlconform run --backend directml`, and `run --backend onnxruntime --ep dml` off Windows, start their worker
processes, and they their programs (the DirectML harness; the ONNX model host), before the command imports the runner,
the oracle or NumPy: a program's device takes a few tenths of a second to come up (serialised in the GPU driver when
several start at once), and the command's imports and loading take as long again, so the two overlap instead of
following each other. The standard library and the programs' start (`directml/start.py`) alone.

The start is worked out exactly as `backends.prepare` would (the same functions, the same options); the run engine
takes the early workers only when the request's backend and options are the ones the start was worked out from
(`EarlyStart.serves`), and each worker's backend takes its program over only when it is the very program it would
start (processes.EarlyProgram.matches). Anything that goes wrong here is left to the ordinary path, which says it.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass, field
from typing import Any

from dmlconform import processes
from dmlconform.directml.library import DirectMLNotFound
from dmlconform.directml.start import OWN_HOST_ENV, Device, ProgramStart, StartError, harness_start, host_start, log
from dmlconform.directml.wine import WineUnavailable, prepare_prefix

#: DMLCONFORM_EARLY_START=off: workers start after the command's imports, as other backends' do (the benchmark's
#: peer; a way round should the early start ever be in the way).
SWITCH = "DMLCONFORM_EARLY_START"
#: The switch's values that turn it off (as DMLCONFORM_SUITE_CACHE's).
OFF = ("off", "0", "no", "false")
#: The backends whose programs start early, and the options each one's start is worked out from (BackendOptions'
#: fields of those names).
START_OPTIONS = {
    "directml": ("harness", "directml", "directml_version", "adapter", "warp", "program_options"),
    "onnxruntime": ("harness", "ep", "directml", "directml_version", "adapter", "warp", "session_config",
                    "program_options"),
}


@dataclass
class EarlyStart:
    """The program's start worked out from `options` for `backend`, and the workers already starting it."""

    backend: str
    options: dict[str, Any]
    start: ProgramStart
    workers: list[processes.WorkerProcess] = field(default_factory=list)

    def serves(self, backend_name: str, options: object) -> bool:
        """Whether a run of this backend with these options (a BackendOptions) is the run this start is for."""
        return backend_name == self.backend and all(getattr(options, name, None) == value
                                                    for name, value in self.options.items())

    def take_workers(self) -> list[processes.WorkerProcess]:
        workers, self.workers = self.workers, []
        return workers

    def discard(self) -> None:
        """Stop the workers nobody took (a run that ended before its pool began, or was not this start's)."""
        for worker in self.take_workers():
            worker.kill()


def wanted(backend_name: str, options: dict[str, Any]) -> bool:
    """Whether this run starts a program of this package's that can start early: the directml backend's harness, or
    the packaged ONNX model host of `onnxruntime --ep dml` off Windows (on Windows onnxruntime-directml runs in the
    command's workers), neither when the user names a program of their own (--harness, DMLCONFORM_ORT_HOST)."""
    if os.environ.get(SWITCH, "").strip().lower() in OFF or options.get("harness"):
        return False
    if backend_name == "directml":
        return True
    return backend_name == "onnxruntime" and options.get("ep") == "dml" and sys.platform != "win32" and \
        not os.environ.get(OWN_HOST_ENV)


def start_early(backend_name: str, jobs: int, options: dict[str, Any]) -> EarlyStart | None:
    """The early start of `jobs` workers (0: one per CPU), each starting the backend's program; None for a backend
    that starts none (`wanted`), with DMLCONFORM_EARLY_START=off, or when the start cannot be worked out here (the
    ordinary path then says why)."""
    if not wanted(backend_name, options):
        return None
    start_options = {name: options.get(name) for name in START_OPTIONS[backend_name]}
    for name in ("program_options", "session_config"):
        if name in start_options:
            start_options[name] = tuple(start_options[name] or ())
    start_options["warp"] = bool(start_options["warp"])
    try:
        device = Device.parse(start_options["adapter"], start_options["warp"])
        if backend_name == "directml":
            start = harness_start(start_options["directml"], start_options["directml_version"], device, log,
                                  start_options["program_options"])
        else:  # as ort_host.packaged_start works it out
            start = host_start("dml", start_options["directml"], start_options["directml_version"], device, log,
                               start_options["session_config"], start_options["program_options"])
        prepare_prefix(log)
    except (StartError, WineUnavailable, DirectMLNotFound, ValueError, RuntimeError, OSError):
        return None
    launch = start.launch
    program = processes.EarlyProgram.of(launch.argv, {**os.environ, **launch.environment}
                                        if launch.environment else os.environ)
    context = processes.context()
    count = (os.cpu_count() or 1) if jobs == 0 else jobs
    early = EarlyStart(backend_name, start_options, start)
    try:
        for slot in range(count):
            early.workers.append(processes.WorkerProcess(context, slot, processes.WORKER_MAIN, program))
    except OSError:
        early.discard()
        return None
    return early
