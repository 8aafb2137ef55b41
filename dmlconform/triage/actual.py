"""What the backend returned for a case: the artifacts a run kept, else the case run again on that backend."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from dmlconform.backends import create_backend
from dmlconform.backends.base import BackendOptions, Outcome, OutcomeKind
from dmlconform.case import Case
from dmlconform.case_result import CaseResult
from dmlconform.results import ResultsError
from dmlconform.results.artifacts import load_artifacts
from dmlconform.run_result import RunResult
from dmlconform.triage import TriageError


@dataclass
class Actual:
    """The outputs to look at (None when there are none), where they came from, and what the backend said."""

    outputs: dict[str, np.ndarray] | None
    source: str
    outcome: Outcome | None = None
    notes: list[str] = field(default_factory=list)


def options_of(run: RunResult) -> BackendOptions:
    """The backend options a run recorded in its settings (those that change results)."""
    settings = run.settings
    def text(key: str) -> str | None:
        value = settings.get(key)
        return str(value) if value not in (None, "") else None

    return BackendOptions(ep=str(settings.get("ep") or "auto"), harness=settings.get("harness"),
                          timeout_s=float(settings.get("timeout_s") or 60.0), variant=settings.get("variant"),
                          device=str(settings.get("device") or "cpu"), directml=text("directml"),
                          directml_version=text("directml_version"), adapter=text("adapter"),
                          warp=settings.get("warp") is True, program_options=_texts(settings.get("program_options")),
                          session_config=_texts(settings.get("session_config")))


def _texts(value: object) -> tuple[str, ...]:
    return tuple(str(item) for item in value) if isinstance(value, list) else ()


def rerun(case: Case, backend_name: str, options: BackendOptions) -> Outcome:
    """Run the case once more, in this process, on a fresh backend; TriageError if it cannot be created."""
    try:
        backend = create_backend(backend_name, options)
    except Exception as exc:
        raise TriageError(f"--backend {backend_name}: cannot create it: {exc.args[0] if exc.args else exc}") from None
    try:
        return backend.run(case)
    except Exception as exc:  # a backend bug must not become a traceback here either
        return Outcome.error(f"backend raised {type(exc).__name__}: {exc}")
    finally:
        backend.close()


def actual_outputs(case: Case, run: RunResult | None, result: CaseResult | None, result_file: Path | None,
                   allow_rerun: bool = True) -> Actual:
    """Artifacts when the run kept them; otherwise, if allowed, the case run again on the run's backend."""
    if run is None or result is None:
        return Actual(None, "no result given")
    if result.artifacts and result_file is not None:
        try:
            outputs = {name: case.description.tensors[name] for name in case.op.outputs}
            return Actual(load_artifacts(result, result_file, outputs), f"artifacts recorded in {result_file}")
        except ResultsError as exc:
            note = f"{exc}; running the case again instead"
    else:
        note = "the run kept no artifacts for this case (run --artifacts DIR keeps them)"
    if not allow_rerun:
        return Actual(None, "not available", notes=[note])
    backend = run.backend.name
    options = options_of(run)
    described = backend + (f" (variant {options.variant})" if options.variant else "") + (
        f" (harness {options.harness})" if backend == "native" else "") + (
        f" (ep {options.ep})" if backend == "onnxruntime" else "")
    outcome = rerun(case, backend, options)
    source = f"re-run now on {described}, not the recorded run's own outputs"
    if outcome.kind is not OutcomeKind.OUTPUTS:
        return Actual(None, source, outcome, [note, f"the re-run came to {outcome.kind.value}: {outcome.message}"])
    return Actual(dict(outcome.outputs), source, outcome, [note])
