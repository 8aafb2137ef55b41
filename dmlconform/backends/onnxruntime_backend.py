"""The `onnxruntime` backend: each gradient operator as a graph of standard ONNX ops, run on a chosen EP.

`--ep auto` prefers DmlExecutionProvider, then CUDAExecutionProvider, then CPUExecutionProvider. On a GPU
provider the session never falls back to the CPU silently: `session.disable_cpu_ep_fallback` is set and the
CPU provider is not listed, so a node the provider cannot take makes the case NOT_SUPPORTED with ORT's
reason. Provider selection and the feature-level claim are pure functions of plain data so tests can cover
the DirectML and CUDA paths without the hardware.

Where the graphs run is a SessionRunner: onnxruntime in this process (InProcessRunner), or an ONNX model host, a
process with another ONNX Runtime (ort_host.HostRunner). On Linux, where no onnxruntime-directml exists, `--ep dml`
uses the ONNX Runtime host the wheel carries (onnxruntime-directml's onnxruntime.dll under Wine); `--harness CMD`
names a host of one's own for any --ep. On Windows `--ep dml` runs onnxruntime-directml in this process (that path is
not exercised here).

Each operator may have several constructions (onnx_graphs.CONSTRUCTIONS): the provider's preferred one is built.

onnxruntime and onnx are imported lazily (in the factory), never when this module is imported.
"""

from __future__ import annotations

import platform
import sys
import threading
from collections.abc import Mapping, Sequence
from types import ModuleType
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from dmlconform.backends import register
from dmlconform.backends.base import BackendInfo, BackendOptions, Outcome, unexpressed
from dmlconform.backends.onnxruntime_common import (
    NAME,
    PROVIDERS,
    ProviderChoice,
    choose_provider,
    claimed_level,
    classify_exception,
    directml_dll_version,
    directml_for_ort,
    graph_summary,
    session_options,
)
from dmlconform.case import Case
from dmlconform.directml.start import OWN_HOST_ENV
from dmlconform.ops.base import Description, DescriptionError

if TYPE_CHECKING:
    from dmlconform.backends.onnx_graphs import Graph


# -- the backend ---------------------------------------------------------------------------------------
def signature(desc: Description, provider: str, variant: str | None, path: str = "", construction: str = ""
              ) -> tuple[Any, ...]:
    """Graph identity: operator, parameters, tensor types and sizes, provider (and the variant, path and
    construction)."""
    params = tuple(sorted((name, repr(value)) for name, value in desc.params.items()))
    tensors = tuple(sorted((name, t.dtype.name, t.shape) for name, t in desc.tensors.items()))
    return desc.op.name, params, tensors, provider, variant, path, construction


class SessionRunner(Protocol):
    """Where the graphs run: onnxruntime in this process, or an ONNX model host (ort_host.HostRunner)."""

    choice: ProviderChoice
    #: Whether prepared graphs are worth keeping for every signature (a session each) or only the last one.
    caches_prepared: bool
    thread_safe: bool

    def prepare(self, graph: Graph, dtype_name: str) -> Any | Outcome:
        """What `execute` needs to run `graph` (a session, or the model's bytes); an Outcome if it cannot be had."""
        ...

    def execute(self, prepared: Any, graph: Graph, feeds: dict[str, np.ndarray], case: Case, dtype_name: str
                ) -> Outcome: ...

    def describe(self) -> BackendInfo: ...

    def close(self) -> None: ...


class InProcessRunner:
    """Sessions of the onnxruntime module imported here."""

    caches_prepared = True
    thread_safe = True  # InferenceSession.run is thread-safe

    def __init__(self, ort: ModuleType, choice: ProviderChoice, session_config: Sequence[str] = ()) -> None:
        self.ort = ort
        self.choice = choice
        self.sessions_created = 0
        self.session_config = dict(entry.partition("=")[::2] for entry in session_config)

    def prepare(self, graph: Graph, dtype_name: str) -> Any | Outcome:
        try:
            options = session_options(self.ort, self.choice, self.session_config)
            session = self.ort.InferenceSession(graph.model.SerializeToString(), options,
                                                providers=self.choice.providers)
        except Exception as exc:
            return classify_exception(exc, "session creation", self.choice.provider, graph_summary(graph, dtype_name))
        self.sessions_created += 1
        return session

    def execute(self, prepared: Any, graph: Graph, feeds: dict[str, np.ndarray], case: Case, dtype_name: str
                ) -> Outcome:
        try:
            (result,) = prepared.run([graph.output], feeds)
        except Exception as exc:
            return classify_exception(exc, "run", self.choice.provider)
        return Outcome.ran({case.op.outputs[0]: result})

    def describe(self) -> BackendInfo:
        import onnx

        dll = directml_dll_version(self.ort) if self.choice.key == "dml" else None
        level, source = claimed_level(self.choice, self.ort.__version__, dll)
        extra = {"provider": self.choice.provider,
                 "available_providers": ", ".join(self.ort.get_available_providers()),
                 "cpu_fallback": "disabled" if self.choice.gpu else "n/a (CPU provider)",
                 "graph_format": "ONNX IR 10, opset 21 (17 where a construction says so), standard operators only",
                 "onnx": onnx.__version__}
        if self.choice.key == "dml":
            extra["directml"] = dll or (directml_for_ort(self.ort.__version__)[0] or "unknown")
        return BackendInfo(NAME, f"onnxruntime {self.ort.__version__}", self.device(), level, source, extra)

    def device(self) -> str:
        if self.choice.key == "cpu":
            return f"{self.choice.provider} ({platform.machine() or 'cpu'}, {self.ort.get_device()})"
        return f"{self.choice.provider} (device 0, {self.ort.get_device()})"

    def close(self) -> None:
        pass


class OnnxRuntimeBackend:
    name = NAME

    def __init__(self, runner: SessionRunner | ModuleType, choice: ProviderChoice | None = None,
                 variant: str | None = None, constructions: Mapping[str, str] | None = None) -> None:
        if isinstance(runner, ModuleType) or not hasattr(runner, "prepare"):  # the onnxruntime module itself
            assert choice is not None
            runner = InProcessRunner(runner, choice)
        self.runner: SessionRunner = runner
        self.choice = runner.choice
        #: Reading of undocumented behaviour where the graph depends on one (RESAMPLE_GRAD1 offsets).
        self.variant = variant
        #: Operator -> construction to build instead of the provider's preferred one (tests check each on the CPU).
        self.constructions = dict(constructions or {})
        self._prepared: dict[tuple[Any, ...], tuple[Graph, Any] | Outcome] = {}
        self._lock = threading.Lock()

    @property
    def thread_safe(self) -> bool:
        return self.runner.thread_safe

    @property
    def sessions_created(self) -> int:
        return getattr(self.runner, "sessions_created", 0)

    def info(self) -> BackendInfo:
        from dmlconform.backends.onnx_graphs import CONSTRUCTIONS, construction_for

        info = self.runner.describe()
        chosen = {op: construction_for(op, self.choice.key, self.constructions.get(op)).name for op in CONSTRUCTIONS}
        info.extra["constructions"] = "; ".join(f"{op}: {name}" for op, name in sorted(chosen.items()))
        return info

    def _entry(self, desc: Description, path: str) -> tuple[Graph, Any] | Outcome:
        from dmlconform.backends.onnx_graphs import GraphUnsupported, construction_for

        try:
            construction = construction_for(desc.op.name, self.choice.key, self.constructions.get(desc.op.name))
        except GraphUnsupported as exc:
            return Outcome.not_supported(f"no standard-ONNX graph for this case: {exc}")
        key = signature(desc, self.choice.provider, self.variant, path, construction.name)
        with self._lock:
            cached = self._prepared.get(key)
        if cached is not None:
            return cached
        entry: tuple[Graph, Any] | Outcome
        try:
            graph = construction.build(desc, self.variant, path)
        except GraphUnsupported as exc:
            entry = Outcome.not_supported(f"no standard-ONNX graph for this case: {exc}")
        else:
            prepared = self.runner.prepare(graph, desc.output.dtype.name)
            entry = prepared if isinstance(prepared, Outcome) else (graph, prepared)
        with self._lock:
            if not self.runner.caches_prepared:
                self._prepared.clear()
            self._prepared.setdefault(key, entry)
        return entry

    def run(self, case: Case) -> Outcome:
        surface = unexpressed(case, "ONNX Runtime's graphs")
        if surface is not None:
            return surface
        try:
            case.op.validate(case.description)
        except DescriptionError as exc:
            return Outcome.refused(str(exc))
        from dmlconform.backends.onnx_graphs import data_path

        entry = self._entry(case.description, data_path(case.description, case.inputs))
        if isinstance(entry, Outcome):
            return entry
        graph, prepared = entry
        if graph.check_inputs is not None:
            reason = graph.check_inputs(case.inputs)
            if reason:
                return Outcome.not_supported(reason)
        feeds = {name: np.ascontiguousarray(case.inputs[name]) for name in graph.inputs}
        return self.runner.execute(prepared, graph, feeds, case, case.description.output.dtype.name)

    def close(self) -> None:
        with self._lock:
            self._prepared.clear()
        self.runner.close()


def host_command(options: BackendOptions, environ: Mapping[str, str]) -> str | None:
    """An ONNX model host command of the user's own: --harness, else DMLCONFORM_ORT_HOST for `--ep dml`; None for
    onnxruntime in this process or the packaged host."""
    if options.harness:
        return options.harness
    if options.ep == "dml" and environ.get(OWN_HOST_ENV):
        return environ[OWN_HOST_ENV]
    return None


@register(NAME)
def create(options: BackendOptions) -> OnnxRuntimeBackend:
    import os

    in_process_dml = False
    # onnxruntime-directml, the only build with the DML EP, is Windows-only: elsewhere the host it is, without the
    # import (tenths of a second in every worker before its host can start).
    if options.ep == "dml" and not options.harness and sys.platform == "win32":
        try:
            import onnxruntime as probe

            in_process_dml = PROVIDERS["dml"] in probe.get_available_providers()
        except ImportError:
            in_process_dml = False
    command = None if in_process_dml else host_command(options, os.environ)
    if command is not None or (options.ep == "dml" and not in_process_dml):
        from dmlconform.backends.ort_host import HostRunner

        runner = HostRunner.start(command, options.ep, options.timeout_s, session_config=options.session_config) \
            if command is not None else HostRunner.start_packaged(options)
        return OnnxRuntimeBackend(runner, variant=options.variant)
    try:
        import onnxruntime as ort
    except ImportError as exc:
        raise RuntimeError(f"onnxruntime cannot be imported ({exc}); pip install onnxruntime "
                           "(onnxruntime-directml on Windows)") from None
    choice = choose_provider(options.ep, ort.get_available_providers())
    # Session failures come back as exceptions and become NOT_SUPPORTED or ERROR with ORT's message; the
    # process-wide logger would print each of them to stderr a second time, in the middle of the report.
    ort.set_default_logger_severity(4)
    return OnnxRuntimeBackend(InProcessRunner(ort, choice, options.session_config), variant=options.variant)
