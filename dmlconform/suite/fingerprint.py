"""A fingerprint of a selection of cases: equal exactly when the same cases, with the same content, are selected.

It hashes what the runner and the comparator see (ids, operators, parameters, tolerances, every input and
expected tensor's data type, shape and bytes), so a regenerated data file or an edited expected value
changes it even where the YAML does not; paths do not enter, so checkouts in different places agree.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from dmlconform.case import Case


def case_digest(case: Case) -> bytes:
    digest = hashlib.sha256()
    header = (case.full_id, case.op.name, sorted((k, repr(v)) for k, v in case.description.params.items()),
              sorted((n, d.dtype.name, tuple(d.shape)) for n, d in case.description.tensors.items()),
              str(case.tolerance), case.expect_invalid)
    digest.update(repr(header).encode())
    answers = case.answers()
    for group, tensors in [("inputs", case.inputs), *sorted(answers.items())]:
        for name in sorted(tensors):
            array = np.ascontiguousarray(tensors[name])
            digest.update(f"{group}/{name}/{array.dtype.str}/{array.shape}".encode())
            digest.update(array.tobytes())
    return digest.digest()


def selection_fingerprint(cases: Sequence[Case]) -> str:
    digest = hashlib.sha256()
    for case in cases:
        digest.update(case_digest(case))
    return digest.hexdigest()


def suite_file_hashes(cases: Sequence[Case]) -> dict[str, str]:
    """Suite name -> SHA-256 of its YAML file, for the suites the selection comes from."""
    files: dict[str, Path] = {}
    for case in cases:
        files.setdefault(case.suite, case.file)
    hashes = {}
    for suite, path in sorted(files.items()):
        try:
            hashes[suite] = hashlib.sha256(path.read_bytes()).hexdigest()
        except OSError:
            hashes[suite] = "unreadable"
    return hashes
