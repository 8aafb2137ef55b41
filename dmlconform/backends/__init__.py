"""Backends: each runs one case's description and inputs and hands back outputs or a reason why not."""

from __future__ import annotations

from collections.abc import Callable

from dmlconform.backends.base import Backend, BackendOptions

_FACTORIES: dict[str, Callable[[BackendOptions], Backend]] = {}


def register(name: str) -> Callable[[Callable[[BackendOptions], Backend]], Callable[[BackendOptions], Backend]]:
    def wrap(factory: Callable[[BackendOptions], Backend]) -> Callable[[BackendOptions], Backend]:
        _FACTORIES[name] = factory
        return factory
    return wrap


def backend_names() -> list[str]:
    _load_builtin()
    return sorted(_FACTORIES)


def create_backend(name: str, options: BackendOptions) -> Backend:
    _load_builtin()
    try:
        factory = _FACTORIES[name]
    except KeyError:
        raise KeyError(f"unknown backend {name!r} (known: {', '.join(sorted(_FACTORIES))})") from None
    return factory(options)


def _load_builtin() -> None:
    # Each module registers itself; heavy imports (onnxruntime, torch) stay inside the backend's factory.
    import importlib

    for module in ("numpy_backend", "onnxruntime_backend", "native", "torch_backend"):
        try:
            importlib.import_module(f"dmlconform.backends.{module}")
        except ModuleNotFoundError as exc:
            if exc.name != f"dmlconform.backends.{module}":
                raise
