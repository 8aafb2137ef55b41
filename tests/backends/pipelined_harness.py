"""`python -m tests.backends.pipelined_harness [dmlconform.harness options] [--pipeline N] [--exit-after N]
[--close-stdin-after N]`: the reference harness (dmlconform.harness, with its fault injection) declaring `pipeline` in
its hello (default 4; 1 leaves it out), so that the runner sends it requests ahead of its replies. It serves them one
after another from its stdin, as a pipelining harness must. Two more faults: exit (status 0) right after the Nth reply,
requests behind it unread; or close stdin after the Nth reply and stay alive, reading nothing more."""

from __future__ import annotations

import os
import sys
import time

from dmlconform import harness_protocol as protocol
from dmlconform.harness import __main__ as reference
from dmlconform.harness.server import HarnessServer
from dmlconform.harness_protocol import Frame


class PipelinedServer(HarnessServer):
    pipeline = 4
    exit_after = 0
    close_stdin_after = 0
    answered = 0

    def hello(self) -> protocol.Hello:
        hello = super().hello()
        hello.pipeline = self.pipeline
        return hello

    def handle(self, frame: Frame) -> None:
        closing = self.answered + 1 == self.close_stdin_after
        if closing:  # before the reply: the runner sends the next request only once it has the reply
            os.close(0)
        super().handle(frame)
        PipelinedServer.answered += 1
        if self.answered == self.exit_after:
            os._exit(0)
        if closing:
            time.sleep(3600)


def option(argv: list[str], name: str, default: int) -> tuple[int, list[str]]:
    if name not in argv:
        return default, argv
    at = argv.index(name)
    return int(argv[at + 1]), argv[:at] + argv[at + 2:]


def main(argv: list[str]) -> int:
    PipelinedServer.pipeline, argv = option(argv, "--pipeline", 4)
    PipelinedServer.exit_after, argv = option(argv, "--exit-after", 0)
    PipelinedServer.close_stdin_after, argv = option(argv, "--close-stdin-after", 0)
    reference.HarnessServer = PipelinedServer  # type: ignore[misc]  # main() serves with this class
    return reference.main(argv)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
