"""The device options every probe here takes, and the packaged DirectML harness they name: the probes run as scripts
(`python examples/dml_harness/investigate/X.py`), so this sits beside them and is imported by name."""

from __future__ import annotations

import argparse

from dmlconform.backends import create_backend
from dmlconform.backends.base import Backend, BackendOptions


def add_device_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--adapter", default="lavapipe", metavar="N|DRIVER",
                        help="the device, as `dmlconform run --adapter` takes it (default: lavapipe)")
    parser.add_argument("--directml", metavar="PATH", help="DirectML.dll (default: as `dmlconform run` chooses)")
    parser.add_argument("--directml-version", metavar="V", help="a fetched onnxruntime-directml release's DLL")


def directml_backend(args: argparse.Namespace) -> Backend:
    """The packaged DirectML harness on the device and DirectML.dll the options name (the `directml` backend)."""
    try:
        return create_backend("directml", BackendOptions(adapter=args.adapter, directml=args.directml,
                                                         directml_version=args.directml_version, timeout_s=120))
    except RuntimeError as exc:  # one line naming what is missing and its fix (`dmlconform doctor` lists them all)
        raise SystemExit(f"the DirectML harness cannot start: {exc}") from None
