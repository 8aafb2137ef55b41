"""Repro bundles as a driver team receives them, property by property (hypothesis): any file of a bundle with
bytes changed, cut or appended is refused by `dmlconform run DIR/suite.yaml` with one line, or its case runs on the
reference without an ERROR (fuzz/fuzz_repro_bundle.py states the contract and checks it, memory included)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from fuzz import fuzz_repro_bundle
from tests.properties import PROPERTIES


@PROPERTIES
@given(data=st.data())
def test_a_changed_bundle_file_is_refused_in_one_line_or_runs(data) -> None:
    _, files, originals = fuzz_repro_bundle.bundle()
    which = data.draw(st.integers(0, len(files) - 1))
    content = bytearray(originals[files[which]])
    for position, byte in data.draw(st.lists(st.tuples(st.integers(min_value=0), st.integers(0, 255)), max_size=4)):
        content[position % len(content)] = byte
    cut = data.draw(st.none() | st.integers(0, len(content)))
    tail = data.draw(st.binary(max_size=16))
    fuzz_repro_bundle.one_input(bytes([which]) + bytes(content[:cut]) + tail)
