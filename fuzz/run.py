"""Run the fuzz harnesses within a time budget: seed corpora built from the bundled suites and results, each
harness under atheris (libFuzzer) in a process of its own, crashes kept, figures summed up.

    python -m fuzz.run --budget 120                 # every harness, 120 s shared out (plus start-up)
    python -m fuzz.run --budget 40 --jobs 2         # CI: the same shares, two harnesses at a time
    python -m fuzz.run --budget 1200 --only suite_yaml,result_document
    python -m fuzz.run --replay                     # every kept crash and every seed once, without atheris

Corpora live in fuzz/corpus/<harness>/ (git-ignored; seeded on first use, grown by every run), crashes in
fuzz/crashes/<harness>/. Exit status 1 when a harness found a crash (its input and message are printed: add the
input to fuzz/regressions/<harness>/ with the fix), 0 otherwise.
"""

from __future__ import annotations

import argparse
import hashlib
import importlib
import os
import re
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
HARNESSES = ("suite_yaml", "suite_npy", "suite_npz", "suite_generate", "harness_replies", "harness_requests",
             "result_document", "journal", "expectations", "repro_bundle", "known_issues")
#: libFuzzer options for every harness: an input that takes 10 s is a hang; the whole process past 2 GiB is an
#: out-of-memory crash (each harness's own bound, fuzz/contract.py, is far tighter); inputs up to 64 KiB.
LIBFUZZER_OPTIONS = ["-timeout=10", "-rss_limit_mb=2048", "-max_len=65536", "-print_final_stats=1"]
_DONE = re.compile(r"#(\d+)\s+DONE\s+cov: (\d+) ft: (\d+) corp: (\d+)/")
_PROGRESS = re.compile(r"#(\d+)\s+\w+\s+cov: (\d+) ft: (\d+) corp: (\d+)/")


@dataclass
class Outcome:
    harness: str
    seconds: float
    executions: int = 0
    coverage: int = 0
    features: int = 0
    corpus: int = 0
    crashes: list[Path] | None = None
    tail: str = ""


def seed_corpus(name: str, corpus: Path) -> int:
    """Write the harness's seeds into its corpus folder (named by content, so rerunning adds nothing)."""
    corpus.mkdir(parents=True, exist_ok=True)
    harness = importlib.import_module(f"fuzz.fuzz_{name}")
    written = 0
    for seed in harness.seeds():
        path = corpus / hashlib.sha1(seed).hexdigest()
        if not path.exists():
            path.write_bytes(seed)
            written += 1
    return written


def fuzz_one(name: str, seconds: int, corpus: Path, crashes: Path, extra: list[str]) -> Outcome:
    crashes.mkdir(parents=True, exist_ok=True)
    before = set(crashes.iterdir())
    dictionary = HERE / "dicts" / f"{name}.dict"
    command = [sys.executable, "-m", "fuzz", name, *LIBFUZZER_OPTIONS, f"-max_total_time={seconds}",
               f"-artifact_prefix={crashes}/", *([f"-dict={dictionary}"] if dictionary.exists() else []), *extra,
               str(corpus)]
    # The project first, then whatever PYTHONPATH already holds (packages installed with --target, say).
    path = os.pathsep.join(filter(None, (str(HERE.parent), os.environ.get("PYTHONPATH"))))
    started = time.monotonic()
    process = subprocess.run(command, cwd=HERE.parent, capture_output=True, text=True, errors="replace",
                             env={**os.environ, "PYTHONPATH": path}, check=False)
    outcome = Outcome(name, time.monotonic() - started, tail=process.stderr[-4000:])
    found = _DONE.findall(process.stderr) or _PROGRESS.findall(process.stderr)
    if found:
        executions, coverage, features, size = (int(x) for x in found[-1])
        outcome.executions, outcome.coverage, outcome.features, outcome.corpus = executions, coverage, features, size
    outcome.crashes = sorted(set(crashes.iterdir()) - before)
    if process.returncode != 0 and not outcome.crashes:
        outcome.crashes = [Path(f"(exit status {process.returncode}, no input kept)")]
    return outcome


def replay(names: list[str]) -> int:
    """Every seed and every kept regression input through its harness once, in this process (no atheris)."""
    failures = 0
    for name in names:
        harness = importlib.import_module(f"fuzz.fuzz_{name}")
        inputs = list(harness.seeds()) + [p.read_bytes() for p in sorted((HERE / "regressions" / name).glob("*"))]
        started = time.monotonic()
        for data in inputs:
            try:
                harness.one_input(data)
            except Exception as exc:
                failures += 1
                print(f"{name}: {type(exc).__name__}: {str(exc)[:300]} (input {hashlib.sha1(data).hexdigest()})")
        print(f"{name}: {len(inputs)} inputs replayed in {time.monotonic() - started:.1f} s")
    return 1 if failures else 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--budget", type=int, default=120,
                        help="seconds of fuzzing in all, shared out equally among the harnesses")
    parser.add_argument("--jobs", type=int, default=1,
                        help="harnesses fuzzed at once, each in its own process (the wall time is about budget/jobs)")
    parser.add_argument("--only", help="comma-separated harness names (default: all)")
    parser.add_argument("--corpus", type=Path, default=HERE / "corpus")
    parser.add_argument("--crashes", type=Path, default=HERE / "crashes")
    parser.add_argument("--replay", action="store_true", help="replay seeds and regressions once, no fuzzing")
    parser.add_argument("libfuzzer", nargs="*", help="more libFuzzer options, after --")
    args = parser.parse_args()
    names = args.only.split(",") if args.only else list(HARNESSES)
    unknown = sorted(set(names) - set(HARNESSES))
    if unknown:
        parser.error(f"unknown harness {', '.join(unknown)} (known: {', '.join(HARNESSES)})")
    sys.path.insert(0, str(HERE.parent))
    if args.replay:
        return replay(names)
    if args.jobs < 1:
        parser.error("--jobs must be 1 or more")
    share = max(args.budget // len(names), 1)

    def fuzz(name: str) -> Outcome:
        seed_corpus(name, args.corpus / name)
        return fuzz_one(name, share, args.corpus / name, args.crashes / name, args.libfuzzer)

    outcomes = []
    with ThreadPoolExecutor(args.jobs) as pool:  # each harness is a process of its own; threads only wait on them
        for outcome in pool.map(fuzz, names):
            outcomes.append(outcome)
            print(f"{outcome.harness:18} {outcome.seconds:6.0f} s {outcome.executions:>10,} runs  "
                  f"cov {outcome.coverage:>5}  ft {outcome.features:>6}  corpus {outcome.corpus:>5}  "
                  f"crashes {len(outcome.crashes or [])}", flush=True)
    total = sum(o.executions for o in outcomes)
    print(f"{'all':18} {sum(o.seconds for o in outcomes):6.0f} s {total:>10,} runs")
    crashed = [o for o in outcomes if o.crashes]
    for outcome in crashed:
        print(f"\n{outcome.harness}: {', '.join(str(p) for p in outcome.crashes or [])}\n{outcome.tail}")
    return 1 if crashed else 0


if __name__ == "__main__":
    sys.exit(main())
