"""`python -m dmlconform.harness --backend numpy`: serve an in-process backend as a native harness."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from dmlconform import harness_protocol as protocol
from dmlconform.harness.server import CRASH_MODES, GARBAGE_MODES, Faults, HarnessServer, regex_argument


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m dmlconform.harness", description=__doc__)
    parser.add_argument("--backend", default="numpy", help="in-process backend to serve (default: numpy)")
    parser.add_argument("--variant", help="reference behaviour where the docs are silent (numpy backend)")
    parser.add_argument("--ep", default="auto", help="execution provider (onnxruntime backend)")
    parser.add_argument("--api", metavar="TEXT", help="the API the handshake names (default: the in-process backend); "
                        "'DirectML 1.15.4.0' stands in for a harness that drives that DirectML release, whose known "
                        "issues the runner then applies")
    faults = parser.add_argument_group("fault injection (REGEX is searched in '<suite>/<id>')")
    faults.add_argument("--crash-on", type=regex_argument, metavar="REGEX", help="exit abruptly on matching cases")
    faults.add_argument("--crash-mode", choices=CRASH_MODES, default="exit",
                        help="how to crash: os._exit(86) or abort() (default: exit)")
    faults.add_argument("--hang-on", type=regex_argument, metavar="REGEX", help="never answer matching cases")
    faults.add_argument("--garbage-on", type=regex_argument, metavar="REGEX", help="answer matching cases with a "
                        "malformed reply")
    faults.add_argument("--garbage-mode", choices=GARBAGE_MODES, default="size",
                        help="which malformation (default: size, a tensor whose bytes disagree with its Sizes)")
    faults.add_argument("--device-removed-on", type=regex_argument, metavar="REGEX",
                        help="report a removed device (TDR) on matching cases, then exit")
    faults.add_argument("--flaky-on", type=regex_argument, metavar="REGEX",
                        help="answer matching cases wrongly one time in two (the 1st, 3rd, ... request for each)")
    faults.add_argument("--delay", type=float, default=0.0, metavar="S", help="wait S seconds before each answer")
    faults.add_argument("--log-served", type=Path, metavar="FILE",
                        help="append each served case id and this harness's pid to FILE")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    stdin, stdout = sys.stdin.buffer, sys.stdout.buffer
    # stdout carries only frames: anything a backend prints goes to stderr instead.
    sys.stdout = sys.stderr
    from dmlconform.backends import create_backend
    from dmlconform.backends.base import BackendOptions

    try:
        backend = create_backend(args.backend, BackendOptions(ep=args.ep, variant=args.variant))
    except Exception as exc:  # report why in the handshake instead of a traceback the runner cannot read
        message = f"cannot create backend {args.backend!r}: {exc.args[0] if exc.args else exc}"
        print(f"dmlconform.harness: {message}", file=sys.stderr)
        stdout.write(protocol.encode_frame({"type": "error", "message": message}))
        stdout.flush()
        return 2
    faults = Faults(args.crash_on, args.crash_mode, args.hang_on, args.garbage_on, args.garbage_mode,
                    args.device_removed_on, args.flaky_on, args.delay, args.log_served)
    try:
        return HarnessServer(backend, args.backend, stdin, stdout, faults, args.api).serve()
    except BrokenPipeError:  # the runner went away; nothing left to answer
        return 0
    finally:
        backend.close()


if __name__ == "__main__":
    sys.exit(main())
