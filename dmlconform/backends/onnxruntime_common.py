"""What the onnxruntime backend and its ONNX model host share, as plain functions of plain data: the execution
providers and which one `--ep` means, the feature level a provider claims, and how ONNX Runtime's failures are
classified (NOT_SUPPORTED for a capability gap, ERROR for anything else). onnxruntime_backend.py (sessions in this
process) and ort_host.py (sessions in another process) both build on it; neither imports the other here."""

from __future__ import annotations

import re
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any

from dmlconform.backends.base import Outcome, one_line
from dmlconform.feature_levels import HIGHEST, FeatureLevel

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


def session_options(ort: ModuleType, choice: ProviderChoice, config: Mapping[str, str] | None = None) -> Any:
    options = ort.SessionOptions()
    options.log_severity_level = 3  # errors come back as exceptions; keep ORT's own log quiet
    # Small tensors: one intra-op thread on every provider, as the ONNX model host does. On the CPU EP it keeps the
    # accumulation order fixed; on a GPU EP the work is the device's, and ONNX Runtime's default, a pool of a thread
    # per physical core, is made and torn down with every session (measured through the host on lavapipe: ReluGrad
    # sessions 3.5 ms with one thread, 66 ms with sixteen).
    options.intra_op_num_threads = 1
    if choice.key == "dml":
        # The DirectML EP supports neither memory patterns nor parallel execution (its documentation); the ONNX
        # model host sets the same.
        options.enable_mem_pattern = False
        options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    for key, value in {**(config or {}), **choice.config}.items():
        options.add_session_config_entry(key, value)
    return options


# -- feature level -----------------------------------------------------------------------------------
#: DirectML release -> the highest DML_FEATURE_LEVEL it exposes (docs/reference/verdicts.md). Keyed by (major, minor);
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
    """The feature level a DirectML release exposes (DIRECTML_LEVELS); None where the table has no row for it."""
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
    return claimed, f"{how} -> DML_FEATURE_LEVEL_{level} (docs/reference/verdicts.md)"


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

