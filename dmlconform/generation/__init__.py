"""The certification suite's generator: reviewed descriptions in, frozen suites out.

`descriptions/*.yaml` (one per operator, plus the real-network shapes) say which families of cases each
tier holds; `families/` turns a family into case specifications; `freeze.py` runs the reference on each,
checks that the case can tell a right answer from a wrong one, and turns it into a suite entry;
`writer.py` writes suite files, `.npz` data and a manifest of SHA-256 hashes, and checks committed files
against what the generators produce (`dmlconform generate --check`).

Everything random comes from `draw.Draw` (the PCG64 bit stream and integer arithmetic), so the same
descriptions give the same bytes on every platform.
"""

from __future__ import annotations


class GenerationError(Exception):
    """A description or a generated case is unusable; the message names the file or family, the case and why."""
