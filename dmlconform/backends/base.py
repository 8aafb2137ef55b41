"""The backend protocol: what the runner hands a backend and what it gets back."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from typing import Protocol

from dmlconform.backend_info import BackendInfo
from dmlconform.case import Case, Tensors

# BackendInfo lives low so that result readers need not import backends; it is re-exported here.
__all__ = ["Backend", "BackendInfo", "BackendOptions", "Outcome", "OutcomeKind", "unexpressed"]


class OutcomeKind(Enum):
    OUTPUTS = "outputs"  # the backend ran the case
    REFUSED = "refused"  # the backend's description checks rejected the case
    NOT_SUPPORTED = "not_supported"  # valid, but this backend cannot run it
    #: The case's layout or path (contract §9) is one this kind of backend cannot express by design (ONNX Runtime's
    #: graphs, PyTorch): SKIPPED with the reason, never run as something else; not a failure of the device.
    UNEXPRESSIBLE = "unexpressible"
    ERROR = "error"  # the backend failed or returned something unusable
    CRASH = "crash"
    TIMEOUT = "timeout"


@dataclass
class Outcome:
    kind: OutcomeKind
    outputs: Tensors = field(default_factory=dict)
    message: str = ""
    #: Every buffer the case bound, as it was after the dispatch (`Case.uses_buffers`: layouts, graphs, in place),
    #: by name (dmlconform.surface.buffers.Binding); the judge reads the outputs from them and checks every byte
    #: outside the elements. None: the backend returned the logical outputs (`outputs`) only.
    images: dict[str, bytes] | None = None

    @classmethod
    def ran(cls, outputs: Tensors) -> Outcome:
        return cls(OutcomeKind.OUTPUTS, outputs)

    @classmethod
    def ran_buffers(cls, images: dict[str, bytes]) -> Outcome:
        return cls(OutcomeKind.OUTPUTS, images=images)

    @classmethod
    def refused(cls, message: str) -> Outcome:
        return cls(OutcomeKind.REFUSED, message=message)

    @classmethod
    def not_supported(cls, reason: str) -> Outcome:
        return cls(OutcomeKind.NOT_SUPPORTED, message=reason)

    @classmethod
    def error(cls, message: str) -> Outcome:
        return cls(OutcomeKind.ERROR, message=message)


def unexpressed(case: Case, who: str) -> Outcome | None:
    """UNEXPRESSIBLE (SKIPPED, with the reason) for a case whose layout or path (contract §9) a backend that runs
    logical tensors cannot express, naming what: such a backend never runs the packed operator and reports it as this
    case. None: the case is a packed one on the operator path."""
    if not case.uses_buffers:
        return None
    what = [f"{name}'s " + ", ".join(f"{key} {value}" for key, value in layout.to_dict().items())
            for name, layout in case.description.layouts.items() if not layout.is_default]
    if case.path.value != "operator":
        what.append(f"the {case.path.value} path")
    return Outcome(OutcomeKind.UNEXPRESSIBLE,
                   message=f"{who} cannot express {' / '.join(what)}: it runs packed tensors on one operator")


@dataclass
class BackendOptions:
    """Everything the command line may pass to a backend; each backend reads what it needs."""

    ep: str = "auto"
    harness: str | None = None
    timeout_s: float = 60.0
    variant: str | None = None
    #: PyTorch device (torch backend): cpu, cuda or cuda:N.
    device: str = "cpu"
    #: The real DirectML (directml backend, and onnxruntime's --ep dml through the packaged host): a DirectML.dll,
    #: or a fetched onnxruntime-directml release's; None: DMLCONFORM_DIRECTML, else the default (directml/library.py).
    directml: str | None = None
    directml_version: str | None = None
    #: The device: a DXGI adapter's index, or under Wine a Vulkan driver (lavapipe, nvidia, a manifest path).
    adapter: str | None = None
    warp: bool = False
    #: ONNX Runtime session config entries (KEY=VALUE), for every session.
    session_config: tuple[str, ...] = ()
    #: Options of the packaged harness or host themselves (--disable-metacommands, --debug-layer, --timings FILE).
    program_options: tuple[str, ...] = ()
    #: Not an option: what `backends.prepare` worked out once for the command from the options above (the directml
    #: backend: its harness's start, with the DLL's and program's digests), so that each worker process does not
    #: work it out again. Plain data; None: the backend works it out itself.
    prepared: object | None = None
    #: Not an option either: a program this worker process started before it had its setup
    #: (processes.StartedProgram; the run command's early start), which a backend that starts programs takes over
    #: when it is the very program it would start, and otherwise stops.
    started: object | None = None


class Backend(Protocol):
    name: str

    def info(self) -> BackendInfo: ...

    def run(self, case: Case) -> Outcome:
        """Run one case. Must not raise for anything a case or device can cause; return an Outcome."""
        ...

    def close(self) -> None: ...


def one_line(text: str, limit: int = 300) -> str:
    """A backend's message on one line of at most `limit` characters."""
    line = " ".join(str(text).split())
    return line if len(line) <= limit else line[: limit - 3] + "..."
