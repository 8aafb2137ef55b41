"""The onnxruntime backend's graphs run in an ONNX model host: another process, with another ONNX Runtime.

On Linux there is no onnxruntime-directml, so `--ep dml` sends each model the backend builds, with its inputs, to
the ONNX Runtime host this package carries (ort_dml_host.exe, a Windows program that loads onnxruntime.dll from the
onnxruntime-directml wheel, run under Wine: directml/start.py), or to the host `--harness` names, over the
native-harness framing (docs/native-harness.md section 9). The host is started, timed out, restarted
and isolated exactly as a native harness is (native.HarnessClient); its failures are classified as the in-process
backend classifies ONNX Runtime's exceptions, so a graph the DirectML EP does not take whole is NOT_SUPPORTED with
ORT's message and the nodes it left to the CPU.

Memory: a DirectML EP session on lavapipe holds ~3 GB of host-backed memory. The host keeps one session and reports
its working set with every reply; above DMLCONFORM_HOST_MAX_RSS_MIB (default 4096) it is restarted before the next
case.
"""

from __future__ import annotations

import os
import shlex
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from dmlconform import harness_protocol as protocol
from dmlconform.backends.base import BackendInfo, BackendOptions, Outcome
from dmlconform.backends.native import HarnessClient, HarnessStartError, device_removed_outcome
from dmlconform.backends.onnx_graphs import Graph
from dmlconform.backends.onnxruntime_common import (
    NAME,
    PROVIDERS,
    ProviderChoice,
    classify_failure,
    graph_summary,
    implemented_level,
)
from dmlconform.case import Case
from dmlconform.ops.base import TensorDesc

if TYPE_CHECKING:
    from dmlconform.directml.start import ProgramStart

MAX_RSS_ENV = "DMLCONFORM_HOST_MAX_RSS_MIB"
DEFAULT_MAX_RSS_MIB = 4096


@dataclass
class HostMemory:
    """The working set the host reported last, and how often it was restarted for memory."""

    limit_bytes: int
    last_bytes: int = 0
    peak_bytes: int = 0
    restarts: int = 0


def memory_limit(environ: Mapping[str, str]) -> int:
    raw = environ.get(MAX_RSS_ENV, "")
    try:
        mib = int(raw) if raw else DEFAULT_MAX_RSS_MIB
    except ValueError:
        raise RuntimeError(f"{MAX_RSS_ENV}={raw!r}: give a whole number of MiB") from None
    if mib <= 0:
        raise RuntimeError(f"{MAX_RSS_ENV}={raw!r}: give a positive number of MiB")
    return mib << 20


def _host_ep(ep: str) -> str:
    key = "dml" if ep == "auto" else ep
    if key not in ("dml", "cpu"):
        raise RuntimeError(f"--ep {ep}: the ONNX model host runs the DirectML EP (dml) or, as a control, the CPU "
                           "EP (cpu)")
    return key


class HostRunner:
    """Runs the backend's graphs in an ONNX model host (see the module docstring)."""

    caches_prepared = False  # the host keeps one session; the bytes of every model would only fill memory here
    thread_safe = False  # one request at a time on one process

    def __init__(self, client: HarnessClient, choice: ProviderChoice, memory: HostMemory) -> None:
        self.client = client
        self.choice = choice
        self.hello: protocol.ModelHostHello = client.hello
        self.memory = memory
        #: The packaged host's DirectML.dll, onnxruntime.dll, Wine and device (directml/start.py), for the result.
        self.facts: dict[str, str] = {}

    @classmethod
    def start(cls, command: str, ep: str, timeout_s: float, environ: Mapping[str, str] | None = None,
              session_config: tuple[str, ...] = ()) -> HostRunner:
        """Start the host command for --ep `ep` (dml, cpu; auto means dml) and check that it serves that provider."""
        key = _host_ep(ep)
        limit = memory_limit(environ if environ is not None else os.environ)
        config = "".join(f" --session-config {shlex.quote(entry)}" for entry in session_config)
        try:
            client = HarnessClient(f"{command} --ep {key}{config}", timeout_s, protocol.decode_model_host_hello,
                                   what="host")
        except HarnessStartError as exc:
            raise RuntimeError(str(exc)) from None
        except ValueError as exc:  # shlex: unbalanced quotes
            raise RuntimeError(f"--harness {command!r}: {exc}") from None
        return cls._checked(client, key, limit, f"the host {command!r}")

    @classmethod
    def start_packaged(cls, options: BackendOptions, environ: Mapping[str, str] | None = None) -> HostRunner:
        """Start the host this package carries (ort_dml_host.exe; under Wine off Windows) on onnxruntime-directml's
        DLLs: the DirectML.dll and device the options name (directml/start.py)."""
        from dmlconform.directml.start import ProgramStart
        from dmlconform.directml.wine import device_hint, missing_adapter

        key = _host_ep(options.ep)
        limit = memory_limit(environ if environ is not None else os.environ)
        start = options.prepared if isinstance(options.prepared, ProgramStart) else packaged_start(options)
        try:
            client = HarnessClient(start.launch.describe(), options.timeout_s, protocol.decode_model_host_hello,
                                   what="host", argv=start.launch.argv, environment=start.launch.environment,
                                   started=options.started)
        except HarnessStartError as exc:
            missing = missing_adapter(str(exc), start.launch)
            if missing:
                raise RuntimeError(missing) from None
            hint = device_hint(str(exc), start.launch)
            raise RuntimeError(f"{exc}" + (f"; {hint}" if hint else "")) from None
        runner = cls._checked(client, key, limit, "the packaged host")
        runner.facts = dict(start.facts)
        return runner

    @classmethod
    def _checked(cls, client: HarnessClient, key: str, limit: int, what: str) -> HostRunner:
        provider = PROVIDERS[key]
        if client.hello.execution_provider != provider:
            client.close()
            raise RuntimeError(f"{what} serves {client.hello.execution_provider}, not {provider}")
        return cls(client, ProviderChoice(key, provider), HostMemory(limit))

    # -- SessionRunner ----------------------------------------------------------------------------
    def prepare(self, graph: Graph, dtype_name: str) -> bytes:
        return graph.model.SerializeToString()

    def execute(self, prepared: bytes, graph: Graph, feeds: dict[str, np.ndarray], case: Case, dtype_name: str
                ) -> Outcome:
        if self.client.running and self.memory.last_bytes > self.memory.limit_bytes:
            self.client.discard()  # a fresh host for this case: the last one grew past the bound
            self.memory.restarts += 1
        output = case.op.outputs[0]
        expected = {graph.output: TensorDesc(case.description.output.dtype, case.description.output.shape)}
        request = protocol.encode_model_request(case.full_id, prepared, list(feeds.items()), expected)
        reply = self.client.exchange(case.full_id, request, expected)
        if isinstance(reply, Outcome):
            self.memory.last_bytes = 0
            return reply
        used = reply.header.get("working_set_bytes")
        if isinstance(used, int) and not isinstance(used, bool):
            self.memory.last_bytes = used
            self.memory.peak_bytes = max(self.memory.peak_bytes, used)
        if reply.status == "ok":
            return Outcome.ran({output: reply.outputs[graph.output]})
        if reply.status == "device_removed":
            return device_removed_outcome(reply)
        stage = str(reply.header.get("stage", "") or "the host")
        kind = reply.header.get("ort_error")
        if stage in ("session creation", "run") and isinstance(kind, str):
            return classify_failure(kind, reply.message, stage, self.choice.provider,
                                    graph_summary(graph, dtype_name) if stage == "session creation" else "",
                                    str(reply.header.get("placement", "")))
        return Outcome.error(f"ONNX model host error ({stage}): {reply.message or '(no message)'}")

    def describe(self) -> BackendInfo:
        hello = self.hello
        if self.choice.key == "dml" and hello.feature_level is not None:
            ceiling = implemented_level()
            level = min(hello.feature_level, ceiling, key=lambda lv: lv.value)
            source = hello.feature_level_source or "claimed by the host"
        else:
            level = implemented_level()
            source = f"{self.choice.provider}: the graphs implement every required case up to {level}"
        device = f"{self.choice.provider} ({hello.adapter})"
        extra = {"provider": self.choice.provider, "host": self.client.command, "host_version":
                 " ".join(p for p in (hello.name, hello.version) if p), "api": hello.api,
                 "driver_version": hello.driver_version,
                 "cpu_fallback": "disabled" if self.choice.gpu else "n/a (CPU provider)",
                 "graph_format": "ONNX IR 10, opset 21 (17 where a construction says so), standard operators only",
                 "host_memory_limit_mib": str(self.memory.limit_bytes >> 20), **hello.extra}
        if hello.directml:
            extra["directml"] = hello.directml
        extra.update(self.facts)
        return BackendInfo(NAME, f"onnxruntime {hello.runtime_version} (ONNX model host)", device, level, source,
                           {k: v for k, v in extra.items() if v})

    def close(self) -> None:
        self.client.close()
        if self.memory.peak_bytes or self.client.restarts:
            # One line on stderr for the run's log: how the host's memory went (the result records the bound).
            print(f"dmlconform: ONNX model host: peak working set {self.memory.peak_bytes >> 20} MiB, "
                  f"{self.client.restarts} restart(s), {self.memory.restarts} of them above the "
                  f"{self.memory.limit_bytes >> 20} MiB bound", file=sys.stderr)


def packaged_start(options: BackendOptions) -> ProgramStart:
    """How to start the host this package carries for these options (directml/start.py); RuntimeError, one line, when
    it cannot be. `backends.prepare` works it out once per command (options.prepared)."""
    from dmlconform.directml.start import Device, StartError, host_start, log
    from dmlconform.directml.wine import WineUnavailable

    try:
        return host_start(_host_ep(options.ep), options.directml, options.directml_version,
                          Device.parse(options.adapter, options.warp),
                          log, options.session_config,
                          options.program_options)
    except (StartError, WineUnavailable) as exc:
        raise RuntimeError(str(exc)) from None
