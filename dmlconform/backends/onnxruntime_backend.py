"""The `onnxruntime` backend: each gradient operator as a graph of standard ONNX ops, run on a chosen EP.

`--ep auto` prefers DmlExecutionProvider, then CUDAExecutionProvider, then CPUExecutionProvider. On a GPU
provider the session never falls back to the CPU silently: `session.disable_cpu_ep_fallback` is set and the
CPU provider is not listed, so a node the provider cannot take makes the case NOT_SUPPORTED with ORT's
reason. Provider selection and the feature-level claim are pure functions of plain data so tests can cover
the DirectML and CUDA paths without the hardware.

Where the graphs run is a SessionRunner: onnxruntime in this process (InProcessRunner), or an ONNX model host, a
process with another ONNX Runtime (ort_host.HostRunner). On Linux, where no onnxruntime-directml exists, `--ep dml`
uses the host examples/ort_dml_host (onnxruntime-directml's onnxruntime.dll under Wine); `--harness CMD` names a host
for any --ep. On Windows `--ep dml` runs onnxruntime-directml in this process (that path is not exercised here).

Each operator may have several constructions (onnx_graphs.CONSTRUCTIONS): the provider's preferred one is built.

onnxruntime and onnx are imported lazily (in the factory), never when this module is imported.
"""

from __future__ import annotations

import platform
import re
import sys
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from dmlconform.backends import register
from dmlconform.backends.base import BackendInfo, BackendOptions, Outcome, one_line
from dmlconform.case import Case
from dmlconform.feature_levels import HIGHEST, FeatureLevel
from dmlconform.ops.base import Description, DescriptionError

if TYPE_CHECKING:
    from dmlconform.backends.onnx_graphs import Graph

NAME = "onnxruntime"
PROVIDERS = {"dml": "DmlExecutionProvider", "cuda": "CUDAExecutionProvider", "cpu": "CPUExecutionProvider"}
AUTO_ORDER = ("dml", "cuda", "cpu")
GPU_KEYS = frozenset({"dml", "cuda"})
NO_FALLBACK = "session.disable_cpu_ep_fallback"


# -- provider selection ------------------------------------------------------------------------------
@dataclass(frozen=True)
class ProviderChoice:
    key: str  # dml, cuda or cpu
    provider: str

    @property
    def gpu(self) -> bool:
        return self.key in GPU_KEYS

    @property
    def options(self) -> dict[str, str]:
        """Provider options. CUDA computes float32 MatMul in TF32 (10-bit mantissa) by default on Ampere and
        later; measured on an H100, that put ResampleGrad1's float32 sums thousands of ULP off. The graphs
        mean float32 arithmetic, so TF32 is turned off."""
        return {"use_tf32": "0"} if self.key == "cuda" else {}

    @property
    def providers(self) -> list[str | tuple[str, dict[str, str]]]:
        """What the session is given: the chosen provider alone (never CPU beside a GPU provider)."""
        return [(self.provider, self.options)] if self.options else [self.provider]

    @property
    def config(self) -> dict[str, str]:
        """Session config entries: on a GPU provider, CPU fallback is disabled."""
        return {NO_FALLBACK: "1"} if self.gpu else {}


def choose_provider(requested: str, available: Sequence[str]) -> ProviderChoice:
    """The provider for `--ep requested` given ORT's available providers; RuntimeError (one line) if unusable."""
    listed = ", ".join(available) or "none"
    if requested == "auto":
        for key in AUTO_ORDER:
            if PROVIDERS[key] in available:
                return ProviderChoice(key, PROVIDERS[key])
        raise RuntimeError(f"no usable execution provider (available: {listed})")
    if requested not in PROVIDERS:
        raise RuntimeError(f"--ep {requested}: unknown (use auto, dml, cuda or cpu)")
    provider = PROVIDERS[requested]
    if provider not in available:
        hint = {"dml": " (on Windows: pip install onnxruntime-directml)",
                "cuda": " (pip install onnxruntime-gpu, with a matching CUDA driver)"}.get(requested, "")
        raise RuntimeError(f"--ep {requested}: {provider} is not available in this onnxruntime "
                           f"(available: {listed}){hint}")
    return ProviderChoice(requested, provider)


def session_options(ort: ModuleType, choice: ProviderChoice) -> Any:
    options = ort.SessionOptions()
    options.log_severity_level = 3  # errors come back as exceptions; keep ORT's own log quiet
    if not choice.gpu:
        # Small tensors: one thread keeps session creation cheap and the accumulation order fixed.
        options.intra_op_num_threads = 1
    if choice.key == "dml":
        # The DirectML EP supports neither memory patterns nor parallel execution (its documentation); the ONNX
        # model host sets the same.
        options.enable_mem_pattern = False
        options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    for key, value in choice.config.items():
        options.add_session_config_entry(key, value)
    return options


# -- feature level -----------------------------------------------------------------------------------
#: DirectML release -> the highest DML_FEATURE_LEVEL it exposes (dml-semantics.md §6.1). Keyed by (major, minor);
#: 1.15.0 exposes 6_3 or 6_4 depending on DML_TARGET_VERSION, 1.15.1 and later report 6_4 (handled below).
DIRECTML_LEVELS: dict[tuple[int, int], FeatureLevel] = {
    (1, 0): FeatureLevel.L1_0, (1, 1): FeatureLevel.L2_0, (1, 2): FeatureLevel.L2_1, (1, 3): FeatureLevel.L2_1,
    (1, 4): FeatureLevel.L3_0, (1, 5): FeatureLevel.L3_1, (1, 6): FeatureLevel.L4_0, (1, 7): FeatureLevel.L4_1,
    (1, 8): FeatureLevel.L5_0, (1, 9): FeatureLevel.L5_1, (1, 10): FeatureLevel.L5_2, (1, 11): FeatureLevel.L6_0,
    (1, 12): FeatureLevel.L6_1, (1, 13): FeatureLevel.L6_2, (1, 15): FeatureLevel.L6_4,
}

#: onnxruntime-directml release (major, minor) from which on -> the DirectML redist it ships, with the source.
#: Read from onnxruntime's own pull requests; the releases before 1.18 are not listed (unknown).
ORT_DIRECTML: tuple[tuple[tuple[int, int], str, str], ...] = (
    ((1, 18), "1.14.1", "microsoft/onnxruntime PR #21407: 'ORT 1.18 supports DML 1.14.1'"),
    ((1, 19), "1.15.1", "microsoft/onnxruntime PR #21407: 'ORT 1.19 will support DML 1.15' (1.15.1, then the "
                        "current redist)"),
    ((1, 20), "1.15.2", "microsoft/onnxruntime PR #22247 (merged 2024-09-27): 'Update DML to 1.15.2'"),
    ((1, 21), "1.15.4", "microsoft/onnxruntime PR #22607 'Update DML to 1.15.4' (2024-10-28); "
                        "tools/nuget/generate_nuspec_for_native_nuget.py pins Microsoft.AI.DirectML 1.15.4"),
)


def _version_tuple(text: str) -> tuple[int, ...]:
    return tuple(int(part) for part in re.findall(r"\d+", text)[:3])


def directml_for_ort(ort_version: str) -> tuple[str | None, str]:
    """The DirectML version an onnxruntime-directml release ships, and where that was read; None if unknown."""
    release = _version_tuple(ort_version)[:2]
    found: tuple[str | None, str] = (None, f"onnxruntime {ort_version} is older than the table's first row")
    for since, dml, source in ORT_DIRECTML:
        if release >= since:
            found = (dml, f"onnxruntime {ort_version} ships DirectML {dml} ({source})")
    return found


def directml_level(dml_version: str) -> FeatureLevel | None:
    """The feature level a DirectML release exposes (§6.1); None where the table has no row for it."""
    parts = _version_tuple(dml_version)
    if len(parts) < 2:
        return None
    if parts[:2] == (1, 15) and (parts[2] if len(parts) > 2 else 0) == 0:
        return FeatureLevel.L6_3  # 1.15.0 exposes 6_3 or 6_4 depending on DML_TARGET_VERSION: claim the lower
    if parts[:2] in DIRECTML_LEVELS:
        return DIRECTML_LEVELS[parts[:2]]
    lower = [level for version, level in DIRECTML_LEVELS.items() if version < parts[:2]]
    return max(lower, key=lambda level: level.value) if lower and parts[:2] < (1, 16) else None


def implemented_level() -> FeatureLevel:
    """The highest level whose required cases the graphs implement: every operator -> the highest level."""
    from dmlconform.backends.onnx_graphs import IMPLEMENTED
    from dmlconform.ops import OPERATORS

    missing = [op.introduced for name, op in OPERATORS.items() if name not in IMPLEMENTED]
    if not missing:
        return HIGHEST
    first_gap = min(missing, key=lambda level: level.value)
    below = [level for level in FeatureLevel if level < first_gap]
    return max(below, key=lambda level: level.value) if below else first_gap


def claimed_level(choice: ProviderChoice, ort_version: str, dll_version: str | None = None
                  ) -> tuple[FeatureLevel, str]:
    """The level this backend claims and one line saying how it was found."""
    ceiling = implemented_level()
    if choice.key != "dml":
        return ceiling, f"{choice.provider}: the graphs implement every required case up to {ceiling}"
    if dll_version:
        dml, how = dll_version, f"DirectML.dll file version {dll_version} beside onnxruntime"
    else:
        dml, how = directml_for_ort(ort_version)
    level = directml_level(dml) if dml else None
    if level is None:
        return ceiling, f"DirectML version unknown ({how}); claiming the graphs' highest level {ceiling}"
    claimed = min(level, ceiling, key=lambda lv: lv.value)
    return claimed, f"{how} -> DML_FEATURE_LEVEL_{level} (dml-semantics.md §6.1)"


def directml_dll_version(ort: ModuleType) -> str | None:
    """File version of the DirectML.dll that onnxruntime-directml ships, on Windows; None elsewhere or on error.

    Not exercised here (no Windows); any failure falls back to the table keyed by the ORT version.
    """
    if sys.platform != "win32":
        return None
    try:
        import ctypes

        dll = next((p for p in Path(ort.__file__).parent.rglob("DirectML.dll")), None)
        if dll is None:
            return None
        version = ctypes.windll.version  # type: ignore[attr-defined]
        size = version.GetFileVersionInfoSizeW(str(dll), None)
        buffer = ctypes.create_string_buffer(size)
        version.GetFileVersionInfoW(str(dll), 0, size, buffer)
        info, length = ctypes.c_void_p(), ctypes.c_uint()
        version.VerQueryValueW(buffer, "\\", ctypes.byref(info), ctypes.byref(length))
        words = ctypes.cast(info, ctypes.POINTER(ctypes.c_uint32 * 13)).contents
        ms, ls = words[2], words[3]  # VS_FIXEDFILEINFO.dwFileVersionMS / LS
        return f"{ms >> 16}.{ms & 0xFFFF}.{ls >> 16}"
    except Exception:
        return None


# -- failures ------------------------------------------------------------------------------------------
#: ORT messages that mean "this provider or build cannot run that node", not "something broke".
CAPABILITY_GAPS = ("could not find an implementation", "not implemented", "cpu_ep_fallback", "fallback",
                   "not supported", "unsupported", "pad should be smaller than kernel")
CPU_PROVIDER = "CPUExecutionProvider"


def cpu_placed_nodes(placement: str) -> list[str]:
    """The nodes ONNX Runtime's verbose placement log puts on the CPU EP ('OpType name' each), from lines such as

        Node(s) placed on [CPUExecutionProvider]. Number of nodes: 1
          ScatterElements (scattered_12)
    """
    nodes: list[str] = []
    lines = placement.splitlines()
    for number, line in enumerate(lines):
        if f"placed on [{CPU_PROVIDER}]" not in line:
            continue
        if line.strip().startswith("All nodes"):
            return ["every node"]
        for entry in lines[number + 1:]:
            if not entry.startswith("  ") or "placed on [" in entry:
                break
            op, _, rest = entry.strip().partition(" ")
            name = rest.strip().removeprefix("(").removesuffix(")")
            nodes.append(f"{op} '{name}'" if name else op)
    return nodes


#: Build-machine paths and code addresses in onnxruntime.dll's exception texts, which say nothing to a reader here:
#: 'E:\_work\1\s\onnxruntime\core\...\X.cpp(588)\onnxruntime.dll!000000018011FA2F: (caller: 00000001800F7C07) '.
_BUILD_PATH = re.compile(r"[A-Za-z]:\\_work\\\d+\\s\\")
_CODE_ADDRESS = re.compile(r"\\?onnxruntime\.dll![0-9A-Fa-f]+: \(caller: [0-9A-Fa-f]+\) ?")


def condense_ort_message(text: str) -> str:
    """ONNX Runtime's message without the build machine's paths and code addresses (the file and line stay)."""
    return _CODE_ADDRESS.sub(" ", _BUILD_PATH.sub("", text))


def classify_failure(kind: str, text: str, stage: str, provider: str, graph: str = "", placement: str = ""
                     ) -> Outcome:
    """A capability gap becomes NOT_SUPPORTED with ORT's reason; anything else an ERROR with the message.

    `kind` is the ORT error's name as onnxruntime's Python binding spells its exception classes (Fail, EPFail,
    NotImplemented, ...), whether it was raised in this process or reported by the ONNX model host. `graph` names
    the graph's node types and data type, and `placement` (the host's verbose placement log) the nodes the provider
    left to the CPU: ORT's fallback error names neither, and a driver team wants to know what to look at."""
    message = one_line(f"{kind}: {condense_ort_message(text)}", 500)
    if kind in ("NotImplemented", "EPFail") or any(gap in message.lower() for gap in CAPABILITY_GAPS):
        where = f" [{graph}]" if graph else ""
        nodes = cpu_placed_nodes(placement)
        on_cpu = f"; placed on the CPU EP: {', '.join(nodes)}" if nodes else ""
        return Outcome.not_supported(f"{provider} cannot run the graph{where} ({stage}): {message}{on_cpu}")
    return Outcome.error(f"onnxruntime failed at {stage} on {provider}: {message}")


def classify_exception(exc: BaseException, stage: str, provider: str, graph: str = "") -> Outcome:
    return classify_failure(type(exc).__name__, str(exc), stage, provider, graph)


def graph_summary(graph: Graph, dtype_name: str) -> str:
    """'FLOAT32: ArgMax, Gather, ...': the data type and node types of a graph, for messages."""
    nodes = sorted({node.op_type for node in graph.model.graph.node} - {"Identity"})
    return f"{dtype_name}: {', '.join(nodes)}"


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

    def __init__(self, ort: ModuleType, choice: ProviderChoice) -> None:
        self.ort = ort
        self.choice = choice
        self.sessions_created = 0

    def prepare(self, graph: Graph, dtype_name: str) -> Any | Outcome:
        try:
            session = self.ort.InferenceSession(graph.model.SerializeToString(), session_options(self.ort, self.choice),
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


#: Where `--ep dml` finds the ONNX model host when onnxruntime here has no DirectML EP (Linux): the repository's
#: wrapper that runs examples/ort_dml_host under Wine. DMLCONFORM_ORT_HOST or --harness name another.
HOST_ENV = "DMLCONFORM_ORT_HOST"
BUNDLED_HOST = Path(__file__).resolve().parents[2] / "examples" / "ort_dml_host" / "run_under_wine.sh"


def host_command(options: BackendOptions, environ: Mapping[str, str]) -> str | None:
    """The ONNX model host to run the graphs in, or None for onnxruntime in this process: --harness, else for
    `--ep dml` where this onnxruntime has no DirectML EP (Linux), DMLCONFORM_ORT_HOST or the repository's wrapper."""
    if options.harness:
        return options.harness
    if options.ep != "dml":
        return None
    if environ.get(HOST_ENV):
        return environ[HOST_ENV]
    if BUNDLED_HOST.is_file():
        return str(BUNDLED_HOST)
    raise RuntimeError(f"--ep dml: onnxruntime here has no DmlExecutionProvider and there is no ONNX model host to "
                       f"run it in: give one with --harness (examples/ort_dml_host/run_under_wine.sh in a checkout "
                       f"of dmlconform, set up by examples/ort_dml_host/setup.sh) or {HOST_ENV}")


@register(NAME)
def create(options: BackendOptions) -> OnnxRuntimeBackend:
    import os

    in_process_dml = False
    if options.ep == "dml" and not options.harness:
        try:
            import onnxruntime as probe

            in_process_dml = PROVIDERS["dml"] in probe.get_available_providers()
        except ImportError:
            in_process_dml = False
    command = None if in_process_dml else host_command(options, os.environ)
    if command is not None:
        from dmlconform.backends.ort_host import HostRunner

        return OnnxRuntimeBackend(HostRunner.start(command, options.ep, options.timeout_s), variant=options.variant)
    try:
        import onnxruntime as ort
    except ImportError as exc:
        raise RuntimeError(f"onnxruntime cannot be imported ({exc}); pip install onnxruntime "
                           "(onnxruntime-directml on Windows)") from None
    choice = choose_provider(options.ep, ort.get_available_providers())
    # Session failures come back as exceptions and become NOT_SUPPORTED or ERROR with ORT's message; the
    # process-wide logger would print each of them to stderr a second time, in the middle of the report.
    ort.set_default_logger_severity(4)
    return OnnxRuntimeBackend(InProcessRunner(ort, choice), variant=options.variant)
