"""Coverage-guided fuzz harnesses, one per parser of untrusted input (docs/fuzzing.md).

    python -m fuzz.run --budget 120            # every harness, the time shared out; crashes under fuzz/crashes/
    python -m fuzz suite_yaml [libFuzzer args] # one harness under atheris

Each `fuzz/fuzz_<name>.py` defines `one_input(data: bytes)`, which raises on a broken contract (fuzz/contract.py),
and `seeds()`, its seed corpus built from the bundled suites and results. Nothing here is imported by dmlconform.
"""
