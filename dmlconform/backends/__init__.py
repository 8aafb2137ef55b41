"""Backends: each runs one case's description and inputs and hands back outputs or a reason why not.

The built-in backends register themselves (`register`). Third-party backends come from other distributions through
the entry-point group `dmlconform.backends` (docs/plugins.md): an entry point's name is the backend's name and its
object a callable taking BackendOptions and returning a Backend. A plugin is loaded when it is asked for (or listed);
one that cannot be loaded is reported in one line and hides nothing else.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from dmlconform.backends.base import Backend, BackendOptions

if TYPE_CHECKING:
    from importlib import metadata

Factory = Callable[[BackendOptions], Backend]

ENTRY_POINT_GROUP = "dmlconform.backends"
BUILT_IN = "built-in"

_FACTORIES: dict[str, Factory] = {}


def register(name: str) -> Callable[[Factory], Factory]:
    def wrap(factory: Factory) -> Factory:
        _FACTORIES[name] = factory
        return factory
    return wrap


@dataclass(frozen=True)
class BackendSource:
    """Where a backend comes from: built in, or a plugin's distribution and entry point; `problem` says why a plugin
    cannot be used (empty when it can)."""

    name: str
    origin: str
    problem: str = ""


class PluginError(RuntimeError):
    """A plugin backend could not be loaded; the message is one line naming the plugin."""


def _plugin_entry_points() -> list[metadata.EntryPoint]:
    from importlib import metadata  # a tenth of a second's import that only plugin lookups need

    return sorted(metadata.entry_points(group=ENTRY_POINT_GROUP), key=lambda ep: (ep.name, ep.value))


def _origin(entry: metadata.EntryPoint) -> str:
    dist = entry.dist
    where = f"{dist.name} {dist.version}" if dist is not None else "an unnamed distribution"
    return f"plugin from {where} ({entry.value})"


def _load_plugin(entry: metadata.EntryPoint) -> Factory:
    try:
        factory = entry.load()
    except Exception as exc:  # anything a third-party import can raise
        raise PluginError(f"backend {entry.name!r}, {_origin(entry)}: cannot be loaded: "
                          f"{type(exc).__name__}: {' '.join(str(exc).split())}") from None
    if not callable(factory):
        raise PluginError(f"backend {entry.name!r}, {_origin(entry)}: {type(factory).__name__} object is not a "
                          "callable taking BackendOptions")
    return factory


def backend_sources() -> list[BackendSource]:
    """Every backend there is, built-ins first, each plugin checked by loading it."""
    _load_builtin()
    sources = [BackendSource(name, BUILT_IN) for name in sorted(_FACTORIES)]
    for entry in _plugin_entry_points():
        if entry.name in _FACTORIES:
            sources.append(BackendSource(entry.name, _origin(entry), f"shadowed by the built-in backend "
                                                                     f"{entry.name!r}; not used"))
            continue
        try:
            _load_plugin(entry)
        except PluginError as exc:
            sources.append(BackendSource(entry.name, _origin(entry), str(exc)))
        else:
            sources.append(BackendSource(entry.name, _origin(entry)))
    return sources


def backend_names() -> list[str]:
    """Names `create_backend` knows: the built-ins and every plugin (a broken one fails when created)."""
    _load_builtin()
    return sorted(set(_FACTORIES) | {entry.name for entry in _plugin_entry_points()})


def create_backend(name: str, options: BackendOptions) -> Backend:
    _load_builtin(name)
    factory = _FACTORIES.get(name)
    if factory is None:
        entries = [entry for entry in _plugin_entry_points() if entry.name == name]
        if not entries:
            raise KeyError(f"unknown backend {name!r} (known: {', '.join(backend_names())})")
        if len(entries) > 1:
            raise PluginError(f"backend {name!r} is offered by several plugins: "
                              f"{'; '.join(_origin(entry) for entry in entries)}")
        factory = _load_plugin(entries[0])
    return factory(options)


def uses_wine_programs(name: str, options: BackendOptions) -> bool:
    """Whether the backend starts this package's Windows programs (under Wine off Windows): `directml`, and
    `onnxruntime --ep dml` without a host of the user's own."""
    return name == "directml" or (name == "onnxruntime" and options.ep == "dml" and not options.harness)


def prepare(name: str, options: BackendOptions) -> BackendOptions:
    """What the backend needs set up once, in the command's own process, before its worker processes start: for the
    Windows programs under Wine, the prefix and its display (backends/directml.py); for the directml backend, its
    harness's start (options.prepared). RuntimeError (one line) when that cannot be had. Returns the options to give
    the workers' `create_backend`."""
    if uses_wine_programs(name, options):
        from dmlconform.backends.directml import prepare_start, prepare_wine

        if name == "directml":  # the start chooses (and checks) the DLL before Wine is touched
            prepared = prepare_start(options)
            prepare_wine()
            return prepared
        prepare_wine(options)
        from dmlconform.backends.onnxruntime_backend import host_command

        if sys.platform != "win32" and host_command(options, os.environ) is None:  # the packaged host, as `create`
            from dmlconform.backends.ort_host import packaged_start  # would start in each worker

            return replace(options, prepared=packaged_start(options))
    return options


#: Each built-in backend's module (it registers the backend when imported).
BUILT_IN_MODULES = {"numpy": "numpy_backend", "onnxruntime": "onnxruntime_backend", "native": "native",
                    "directml": "directml", "torch": "torch_backend"}


def _load_builtin(name: str | None = None) -> None:
    """Import the built-in backends' modules, or only `name`'s: a process that serves one backend (a Python harness, a
    worker) need not import the others' (the directml backend's start, the native one's process handling: a fifth of
    a harness's start-up). Heavy imports (onnxruntime, torch) stay inside each backend's factory."""
    import importlib

    for backend, module in BUILT_IN_MODULES.items():
        if name is not None and backend != name:
            continue
        try:
            importlib.import_module(f"dmlconform.backends.{module}")
        except ModuleNotFoundError as exc:
            if exc.name != f"dmlconform.backends.{module}":
                raise
