"""Speed of the real-DirectML paths: cases per second of a tier through `dmlconform run --backend directml` (the
DirectML harness) or, with --ep, `--backend onnxruntime --ep dml` (the DML EP through the ONNX Runtime host), how
that scales with --jobs, how far it is from the physical limit, and where the time goes.

    python benchmarks/bench_directml.py [--adapter lavapipe|nvidia|N] [--directml PATH | --directml-version V] \\
        [--tier standard] [--suites DIR] [-k EXPR] [--jobs 1 2 4 8 16] [--peer=--buffers-per-case] \\
        [--check-outputs] [--report-dir DIR]
    python benchmarks/bench_directml.py --ep [--session-config K=V] [--peer=--fresh-heaps] ...   # the DML EP
    python benchmarks/bench_directml.py --harness "CMD ARGS" ...   # a harness (or, with --ep, host) of one's own

What is measured is the dmlconform this script imports: in a checkout, PYTHONPATH=. (with the Windows programs built
by `python windows/build.py DIR` and DMLCONFORM_WINDOWS_PROGRAMS_DIR=DIR); elsewhere, the installed package.

Each run is `dmlconform run --tier T [-k EXPR] --backend directml --adapter A --program-option=--timings ...` (or
`--backend onnxruntime --ep dml ...`), exactly as a user runs it (one harness or host per job, each case retried once
when it fails on the harness, as by default), timed from this script's side, once per --jobs value (those above this
machine's CPU count are left out unless given explicitly). Before the first, one harness (host) is started and stopped
untimed, as any earlier command leaves Wine's server and services running (directml/wine.py: WINESERVER_LINGER_S):
what a run costs then, not Wine's first start of the day (about a second). Likewise the workload is loaded first,
which leaves its parse in the parsed-suite cache (suite/parsed_cache.py) as any earlier run does; the report gives
loading from the cache and parsing (the first run after dmlconform or the suites change) apart. --suites DIR runs
suites of one's own (a frozen copy of test_vectors/, to compare trees that generate different ones).

The programs' `--timings FILE` option writes one JSON line per request (replies do not change; checked by tests): the
microseconds of each phase from QueryPerformanceCounter, and the GPU's own timestamps: around the harness's
initializer, upload copies, dispatch and readback copy; around the host's session creation and run (command lists
of their own on the EP's queue). From these:

* the physical limit: the GPU's own time summed over every request, plus one device creation (the fastest harness
  start). The report gives each run's wall time as a multiple of it (`x limit`).
* the shares of the run's worker time (jobs x wall): device creation, each per-request phase (the harness: decode,
  operator creation and compilation, initializer, heap, buffers, upload, binding, the one submission with its wait,
  readback, release, reply; the host: decode, session, inputs, run, outputs, reply), the program waiting for the runner
  between requests (the Python side: judging, the pool, encoding, the pipe; near zero once requests are pipelined) and
  the rest (interpreter and Wine start, loading, handshake, reports, workers idle at the end).
* a timeline of the first run, the GPU's share of its submission phase, and per-operator times.

With --warm-up-run the workload runs once before them, timed and reported on its own line: the first run on a
machine compiles every pipeline (CompileOperator ~0.5 ms a request on the H100), which the GPU driver keeps in its
shader cache for every later run there.

Harness mode then times, in this process, harness starts (`--starts`: Wine, device creation, handshake, the first
case) and a sample of cases run one at a time through the native backend as a worker runs them (encoding, the round
trip less the harness's own time, judging).

With --peer=OPTIONS (the = keeps argparse from reading them as its own) the same workload runs once more with those
program options (the harness's `--buffers-per-case` or `--heap-per-case`, the old ways; the host's `--fresh-heaps`,
or `--intra-op-threads 0`, ONNX Runtime's default thread pool in every session), and with --peer-env K=V in that
environment (DMLCONFORM_EARLY_START=off: the workers and their harnesses started after the command's imports, the
old way), at --peer-jobs, and the ratio is printed. Every run's per-case results (status, outcome, matched
candidate, max ULP, max abs error, output digest) must agree; with --check-outputs the peer run keeps every output
(--artifacts-all; its wall time then includes writing them) and so does one more, untimed run without --timings, and
the outputs must be byte-identical. Exit status 1 when results or outputs differ, or when a whole tier misses issue
31's goal (the harness: the standard tier in 3 s on lavapipe, 2 s on a GPU, the full tier in 6 s on a GPU; the EP:
the standard tier in 300 s on lavapipe, 15 s on a GPU; at the best --jobs).
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

PHASES = ("decode", "create", "compile", "initializer", "heap", "resources", "upload", "initialize", "bind", "dispatch",
          "readback", "release", "reply")
HOST_PHASES = ("decode", "session", "inputs", "run", "outputs", "reply")
PHASE_LABELS = {"decode": "request decoding", "create": "CreateOperator", "compile": "CompileOperator",
                "initializer": "CreateOperatorInitializer", "heap": "descriptor heap (once, or per case)",
                "resources": "buffers, binding table",
                "upload": "upload (CPU copy)", "initialize": "initializer dispatch + wait",
                "bind": "binding", "dispatch": "dispatch + copies + wait", "readback": "readback (CPU copy)",
                "release": "the case's objects released", "reply": "reply frame"}
HOST_LABELS = {"decode": "request decoding", "session": "session (created, or the cached one)",
               "inputs": "input tensors", "run": "OrtApi::Run (the EP's work, waited for)",
               "outputs": "outputs copied into the reply", "reply": "reply frame"}
GPU_PHASES = ("gpu_initialize", "gpu_upload", "gpu_dispatch", "gpu_readback")
HOST_GPU_PHASES = ("gpu_session", "gpu_run")
#: What counts as the GPU's own time. The harness's timestamps bracket GPU work recorded back to back; the host's
#: bracket what the EP submits, from outside: around a run that is an upper bound of its GPU work, around session
#: creation mostly the CPU's time (compiling, allocating), so it is shown but not counted.
LIMIT_PHASES = {"harness": GPU_PHASES, "ep": ("gpu_run",)}
COMPARED = ("status", "outcome", "matched", "max_ulp", "max_abs_error", "output_sha256")
#: Issue 31's goals for a whole tier (seconds), by path, the device the program reports, and tier.
GOALS_S = {("harness", "llvmpipe", "standard"): 3.0, ("harness", "gpu", "standard"): 2.0,
           ("harness", "gpu", "full"): 6.0, ("ep", "llvmpipe", "standard"): 300.0, ("ep", "gpu", "standard"): 15.0}


@dataclass
class Run:
    label: str
    jobs: int
    wall_s: float
    folder: Path
    results: dict[str, tuple[object, ...]]
    statuses: Counter[str]
    device: str
    starts: list[dict[str, object]]
    requests: list[dict[str, object]]
    began_unix: float = 0.0
    artifacts: dict[str, dict[str, str]] = field(default_factory=dict)
    #: "harness" (the DirectML harness's timings) or "ep" (the ONNX Runtime host's).
    kind: str = "harness"

    @property
    def phases(self) -> tuple[str, ...]:
        return HOST_PHASES if self.kind == "ep" else PHASES

    @property
    def gpu_phases(self) -> tuple[str, ...]:
        return HOST_GPU_PHASES if self.kind == "ep" else GPU_PHASES

    @property
    def cases(self) -> int:
        return len(self.results)

    @property
    def rate(self) -> float:
        return self.cases / self.wall_s


def harness_command(harness: str, options: str, timings: Path | None, wine: bool = False) -> str:
    """The harness command line with extra options and `--timings FILE` (as a Windows path when it runs under
    Wine)."""
    parts = [harness, options] if options else [harness]
    if timings is not None:
        parts += ["--timings", shlex.quote(timings_path(timings, wine))]
    return " ".join(parts)


def timings_path(timings: Path, wine: bool) -> str:
    if wine:
        from dmlconform.directml.wine import windows_path

        return windows_path(timings)
    return str(timings)


@dataclass(frozen=True)
class Harness:
    """The program every run starts: its command line (for the starts timed in this process), what the report calls
    it, whether it runs under Wine, and whether it is the packaged one (then runs go through `--backend directml`, or
    `onnxruntime --ep dml`, with its options as --program-option) or one of the user's own (`--harness`)."""

    command: str
    label: str
    wine: bool = False
    packaged: bool = False

    def with_options(self, options: str, timings: Path | None) -> str:
        return harness_command(self.command, options, timings, self.wine)


def choose_harness(args: argparse.Namespace) -> Harness:
    """The packaged DirectML harness (or, with --ep, ONNX Runtime host) on the device and DirectML.dll the options
    name, or --harness, a command of one's own (which must see to its own display under Wine). Under Wine the packaged
    program's command line names the prefix's own X display, so every program of every run shares the prefix's
    desktop, as they must."""
    if args.harness:
        return Harness(args.harness, args.harness)
    from dmlconform.backends import prepare
    from dmlconform.backends.base import BackendOptions
    from dmlconform.directml.start import Device, StartError, harness_start, host_start
    from dmlconform.directml.wine import WineUnavailable

    def log(line: str) -> None:
        print(f"bench_directml: {line}", file=sys.stderr)

    try:
        prepare("onnxruntime" if args.ep else "directml",
                BackendOptions(ep="dml", directml=args.directml, directml_version=args.directml_version))
        device = Device.parse(args.adapter)
        start = host_start("dml", args.directml, args.directml_version, device, log, tuple(args.session_config)) \
            if args.ep else harness_start(args.directml, args.directml_version, device, log)
    except (StartError, WineUnavailable, RuntimeError) as exc:  # one line naming what is missing and its fix
        raise SystemExit(f"bench_directml: the {'host' if args.ep else 'harness'} cannot start: {exc}") from None
    facts = start.facts
    label = (f"the packaged {facts['program'].replace(' sha256 ', ' (sha256 ', 1)}), DirectML.dll "
             f"{facts['directml_dll_version']} ({facts['directml_origin']})"
             + (f", {facts['onnxruntime_dll']}" if "onnxruntime_dll" in facts else "")
             + (f", {facts['wine']}" if "wine" in facts else "")
             + (f", Vulkan driver {start.launch.vulkan_driver.name}" if start.launch.vulkan_driver else ""))
    return Harness(start.launch.command_line(), label, start.launch.wine is not None, packaged=True)


def run_command(args: argparse.Namespace, harness: Harness, jobs: int, options: str, timings: Path | None,
                result: Path) -> list[str]:
    """The `dmlconform run` command of one run."""
    command = [*dmlconform_command(), "run", *([str(args.suites.resolve())] if args.suites else []),
               "--tier", args.tier, "--jobs", str(jobs), "--timeout", str(args.timeout), "--json", str(result)]
    if args.path != "operator":
        command += ["--path", args.path]
    if args.k:
        command += ["-k", args.k]
    backend = ["--backend", "onnxruntime", "--ep", "dml"] if args.ep else ["--backend", "native"]
    program = shlex.split(options) + (["--timings", timings_path(timings, harness.wine)] if timings else [])
    if not harness.packaged:
        return command + backend + ["--harness", " ".join([harness.command, *map(shlex.quote, program)])]
    if not args.ep:
        backend = ["--backend", "directml"]
    command += [*backend, "--adapter", args.adapter]
    command += ["--directml", args.directml] if args.directml else []
    command += ["--directml-version", args.directml_version] if args.directml_version else []
    command += [f"--session-config={entry}" for entry in args.session_config] if args.ep else []
    return command + [f"--program-option={option}" for option in program]


def dmlconform_command() -> list[str]:
    """`python -m dmlconform` of the package this script imported (a checkout's, with PYTHONPATH=., or an installed
    wheel's, whose programs are built in), wherever the script runs from: `-m` alone would find a checkout in the
    working folder before it."""
    import dmlconform

    root = str(Path(dmlconform.__file__).resolve().parents[1])
    return [sys.executable, "-c", f"import runpy, sys; sys.path.insert(0, {root!r}); sys.argv[0] = 'dmlconform'; "
            "runpy.run_module('dmlconform', run_name='__main__', alter_sys=True)"]


def dmlconform_run(args: argparse.Namespace, harness: Harness, jobs: int, options: str, timings: Path | None,
                   folder: Path, keep_outputs: bool, env: dict[str, str] | None = None) -> tuple[float, float, Path]:
    """One `dmlconform run`, timed from here; returns when it began (Unix time), its wall time and the JSON
    result's path."""
    folder.mkdir(parents=True)
    result = folder / "result.json"
    command = run_command(args, harness, jobs, options, timings, result)
    if keep_outputs:
        command += ["--artifacts", str(folder / "outputs"), "--artifacts-all"]
    with open(folder / "stderr.txt", "wb") as stderr:
        began, clock = time.time(), time.perf_counter()
        done = subprocess.run(command, stdout=subprocess.DEVNULL, stderr=stderr,
                              env={**os.environ, **env} if env else None)
        wall = time.perf_counter() - clock
    if done.returncode not in (0, 1) or not result.exists():
        tail = (folder / "stderr.txt").read_text(errors="replace")[-1500:]
        raise SystemExit(f"{shlex.join(command)} exited {done.returncode}:\n{tail}")
    return began, wall, result


def read_timings(folder: Path) -> tuple[list[dict[str, object]], list[dict[str, object]]]:
    """The programs' start lines and request lines, each tagged with its file (one file per process)."""
    starts, requests = [], []
    for path in sorted(folder.glob("timings-*.jsonl")):
        for order, line in enumerate(path.read_text().splitlines()):
            try:
                record = json.loads(line)
            except json.JSONDecodeError:
                continue  # a program killed mid-line
            record["process"], record["order"] = path.name, order
            (starts if record.get("event") == "start" else requests).append(record)
    return starts, requests


def measured_run(args: argparse.Namespace, harness: Harness, label: str, jobs: int, options: str, root: Path,
                 keep_outputs: bool = False, timed_harness: bool = True, env: dict[str, str] | None = None) -> Run:
    folder = root / label.replace(" ", "_")
    timings = folder / "timings-%p.jsonl" if timed_harness else None
    began, wall, result_path = dmlconform_run(args, harness, jobs, options, timings, folder, keep_outputs, env)
    document = json.loads(result_path.read_text())
    results = {case["id"]: tuple(case.get(key) for key in COMPARED) for case in document["cases"]}
    artifacts = {case["id"]: case.get("artifacts") or {} for case in document["cases"]}
    starts, requests = read_timings(folder)
    return Run(label, jobs, wall, folder, results, Counter(case["status"] for case in document["cases"]),
               str(document["backend"].get("device", "?")), starts, requests, began, artifacts,
               "ep" if args.ep else "harness")


def warm_up(args: argparse.Namespace, harness: Harness) -> str:
    """One start of the program, untimed, so that every run finds Wine up as a later command does."""
    from dmlconform import harness_protocol as protocol
    from dmlconform.backends.native import HarnessClient, HarnessStartError

    decode = protocol.decode_model_host_hello if args.ep else protocol.decode_hello
    clock = time.perf_counter()
    try:
        HarnessClient(harness.command + (" --ep dml" if args.ep and not harness.packaged else ""), args.timeout,
                      decode).close()
    except HarnessStartError as exc:
        raise SystemExit(f"bench_directml: {exc}") from None
    return (f"warm-up: one {'host' if args.ep else 'harness'} started and stopped first, "
            f"{time.perf_counter() - clock:.2f} s")


# -- where the time goes -------------------------------------------------------------------------------------
def seconds(records: list[dict[str, object]], key: str) -> float:
    return sum(float(r[key]) for r in records if isinstance(r.get(key), int | float)) / 1e6


def between_cases_wait(run: Run) -> float:
    """The programs' waits for the runner, less each process's first (the handshake and loading)."""
    return sum(float(r["wait"]) for r in run.requests if r["order"] != 1 and isinstance(r.get("wait"), int | float)) \
        / 1e6


def program(run: Run) -> str:
    return "host" if run.kind == "ep" else "harness"


def breakdown(run: Run) -> dict[str, float]:
    """Seconds of the run's worker time (jobs x wall) per part; `rest` is what the programs did not see."""
    labels = HOST_LABELS if run.kind == "ep" else PHASE_LABELS
    parts = {f"device creation ({program(run)} starts)": seconds(run.starts, "device_us")}
    parts |= {labels[p]: seconds(run.requests, p) for p in run.phases}
    parts[f"{program(run)} waits for the runner"] = between_cases_wait(run)
    parts["rest: Python and Wine start, loading, handshake, reports, idle"] = run.jobs * run.wall_s - sum(
        parts.values())
    return parts


def share_table(runs: list[Run]) -> list[str]:
    first = runs[0]
    n = max(len(first.requests), 1)
    lines = [f"{'part (share of jobs x wall)':58} {'ms/req':>7} " + " ".join(f"{f'j={r.jobs}':>6}" for r in runs)]
    tables = [breakdown(r) for r in runs]
    for key in tables[0]:
        per_request = "" if key.startswith(("rest", "device")) else f"{tables[0][key] / n * 1000:7.2f}"
        shares = " ".join(f"{t[key] / (r.jobs * r.wall_s) * 100:5.1f}%" for t, r in zip(tables, runs, strict=True))
        lines.append(f"{key:58} {per_request:>7} {shares}")
    return lines


def gpu_seconds(run: Run) -> float:
    """The GPU's own time over the run: its timestamps summed over every request (LIMIT_PHASES)."""
    return sum(seconds(run.requests, p) for p in LIMIT_PHASES[run.kind])


def physical_limit(run: Run) -> float:
    """The least time the run could take on this device: the GPU's own time plus one device creation (the fastest
    start of the run's programs); 0 when the programs gave no timings."""
    devices = [float(s["device_us"]) / 1e6 for s in run.starts if isinstance(s.get("device_us"), int | float)]
    return gpu_seconds(run) + (min(devices) if devices else 0.0)


def limit_lines(runs: list[Run]) -> list[str]:
    lines = ["physical limit (the GPU's own time from timestamps, summed over every request, plus one device "
             "creation) and each run's wall time as a multiple of it"
             + (" (the EP: timestamps around each run, an upper bound of its GPU work, so the multiple is a lower "
                "bound):" if runs and runs[0].kind == "ep" else ":")]
    for run in runs:
        limit = physical_limit(run)
        devices = [float(s["device_us"]) / 1e6 for s in run.starts if isinstance(s.get("device_us"), int | float)]
        lines.append(f"  j={run.jobs}: GPU {gpu_seconds(run):.3f} s + device creation "
                     f"{min(devices) if devices else 0:.3f} s = {limit:.3f} s; wall {run.wall_s:.2f} s = "
                     + (f"{run.wall_s / limit:.1f}x the limit" if limit else "n/a (no timings)"))
    return lines


def timeline(run: Run) -> list[str]:
    """When, after the command began, its first program got going, and when the cases were done."""
    first = min(run.starts, key=lambda s: float(s["main_unix_us"]), default=None)
    if first is None or not run.requests:
        return []
    main = float(first["main_unix_us"]) / 1e6 - run.began_unix
    device = main + float(first["device_us"]) / 1e6
    mine = [r for r in run.requests if r["process"] == first["process"]]
    ordered = sorted(mine, key=lambda r: float(r["t_us"]))
    first_case = main + (float(ordered[0]["t_us"]) if ordered else float("nan")) / 1e6
    last_end = max(float(s["main_unix_us"]) / 1e6 - run.began_unix
                   + (float(r["t_us"]) + sum(float(r.get(p) or 0) for p in run.phases)) / 1e6
                   for s in run.starts for r in run.requests if r["process"] == s["process"])
    return [f"timeline of the j={run.jobs} run (s after the command began): a {program(run)}'s process began "
            f"{main:.2f}, its devices were ready {device:.2f}, its first case arrived {first_case:.2f}; the last case "
            f"was done {last_end:.2f}, the command {run.wall_s:.2f} (results written, "
            f"{'hosts' if run.kind == 'ep' else 'harnesses'} stopped)"]


def gpu_lines(run: Run) -> list[str]:
    submitted = "run" if run.kind == "ep" else "dispatch"
    timed = [r for r in run.requests if r.get(f"gpu_{submitted}") is not None]
    if not timed:
        return ["GPU timestamps: none (the device gave none)"]
    phase = seconds(timed, submitted)
    parts = ", ".join(f"{p.removeprefix('gpu_')} {seconds(timed, p) / len(timed) * 1000:.3f}" for p in run.gpu_phases)
    busy = sum(seconds(timed, p) for p in run.gpu_phases if p != "gpu_session")
    lines = [f"GPU timestamps, ms per request at j={run.jobs} ({len(timed)} requests that ran): {parts}"
             + (" (session: from before to after its creation, mostly CPU work)" if run.kind == "ep" else "")
             + "; the GPU "
             f"is busy {busy / phase * 100 if phase else 0:.0f}% of the {submitted} phase "
             "(the rest: submission, fence wait, Wine/vkd3d" + (", ONNX Runtime" if run.kind == "ep" else "") + ")"]
    if run.kind == "ep":
        created = [r for r in run.requests if r.get("session_created")]
        lines.append(f"sessions created for {len(created)} of {len(run.requests)} requests, "
                     f"{seconds(created, 'session') / max(len(created), 1) * 1000:.1f} ms each"
                     + pool_counts(run.requests, "heaps", "descriptor heaps")
                     + pool_counts(run.requests, "buffers", "committed buffers"))
    return lines


def pool_counts(requests: list[dict[str, object]], key: str, what: str) -> str:
    """What the host's pool of `key` (heaps, buffers) did in the host that asked it the most (the counts are the
    process's, so far); "" when the host reports none."""
    made, again = f"{key}_created", f"{key}_reused"
    counts = [(created, reused) for r in requests
              if isinstance(created := r.get(made), int) and isinstance(reused := r.get(again), int)]
    if not counts:
        return ""
    created, reused = max(counts, key=sum)
    return f"; {what} (one host): {created} made, {reused} handed out again"


def operator_of(record: dict[str, object]) -> str:
    """The harness names the operator; the host's records have the case id, whose suite names it."""
    if record.get("op"):
        return str(record["op"])
    return str(record.get("id", "?")).split(".")[0].split("/")[0] or "(not run)"


def operator_lines(run: Run) -> list[str]:
    by_op: dict[str, list[dict[str, object]]] = {}
    for r in run.requests:
        by_op.setdefault(operator_of(r) if run.kind == "ep" or r.get("op") else "(not run)", []).append(r)
    lines = [f"per operator at j={run.jobs}: requests, {program(run)} ms per request (mean, median), largest phase"]
    for op, records in sorted(by_op.items()):
        busy = [sum(float(r.get(p) or 0) for p in run.phases) / 1000 for r in records]
        totals = {p: seconds(records, p) for p in run.phases}
        top = max(totals, key=totals.__getitem__)
        lines.append(f"  {op:28} {len(records):5d} {statistics.fmean(busy):8.2f} {statistics.median(busy):8.2f}  "
                     f"{top} {totals[top] / max(sum(totals.values()), 1e-9) * 100:.0f}%")
    return lines


# -- in this process: harness starts and the Python side -----------------------------------------------------
def load_workload(args: argparse.Namespace) -> tuple[list[object], tuple[float, float]]:
    """The workload's cases, and the seconds loading them takes parsed (as the first run after a change of dmlconform
    or of the suites does) and from the parsed-suite cache (every later run; the timed runs find it filled)."""
    from dmlconform.cli.common import load_cases
    from dmlconform.runner.loading import default_helpers, parallel_parser
    from dmlconform.surface.paths import parse_paths

    def load() -> tuple[list[object], float]:
        clock = time.perf_counter()
        cases = load_cases((args.suites,) if args.suites else (), args.k, args.tier,
                           parallel_parser(default_helpers()), execution_paths=parse_paths(args.path))
        return cases, time.perf_counter() - clock

    from dmlconform.suite import parsed_cache

    before = _entries(parsed_cache.cache_folder())
    _, first_s = load()  # fills the cache, if it was not
    cases, cached_s = load()
    if _entries(parsed_cache.cache_folder()) != before:
        return cases, (first_s, cached_s)  # the first load parsed (and wrote the cache: a little more than parsing)
    saved = os.environ.get("DMLCONFORM_SUITE_CACHE")
    os.environ["DMLCONFORM_SUITE_CACHE"] = "off"
    try:
        _, parse_s = load()
    finally:
        if saved is None:
            del os.environ["DMLCONFORM_SUITE_CACHE"]
        else:
            os.environ["DMLCONFORM_SUITE_CACHE"] = saved
    return cases, (parse_s, cached_s)


def _entries(folder: Path) -> frozenset[str]:
    return frozenset(path.name for path in folder.iterdir()) if folder.is_dir() else frozenset()


def start_probe(args: argparse.Namespace, harness: Harness, cases: list[object], root: Path) -> list[str]:
    """Harness starts, split into Wine (and the wrapper), device creation and handshake; the first case."""
    from dmlconform.backends.native import NativeBackend

    first_valid = next((c for c in cases if not c.expect_invalid), cases[0])
    rows = []
    for attempt in range(args.starts):
        folder = root / f"start{attempt}"
        folder.mkdir()
        command = harness.with_options("", folder / "timings-%p.jsonl")
        began = time.time()
        backend = NativeBackend(command, args.timeout)
        ready = time.time()
        backend.run(first_valid)
        backend.close()
        starts, requests = read_timings(folder)
        if not starts:
            continue
        wine = float(starts[0]["main_unix_us"]) / 1e6 - began
        device = float(starts[0]["device_us"]) / 1e6
        heap = float(requests[0]["heap"]) / 1e6 if requests else float("nan")
        rows.append((ready - began, wine, device, ready - began - wine - device, heap))
    if not rows:
        return ["harness start: no timings came back"]
    total, wine, device, handshake, heap = (statistics.median(r[i] for r in rows) for i in range(5))
    return [f"harness start (median of {len(rows)}): {total:.2f} s to the handshake = Wine (and env or a wrapper) "
            f"{wine:.2f} s ({wine / total * 100:.0f}%) + D3D12 and DirectML devices {device:.2f} s "
            f"({device / total * 100:.0f}%) + handshake {handshake:.2f} s; then, at the first case, the "
            f"descriptor heap (made once per harness) {heap:.2f} s"]


def python_side(args: argparse.Namespace, harness: Harness, cases: list[object], loading_s: tuple[float, float],
                root: Path) -> list[str]:
    """A sample of cases run one at a time as a worker runs them: encoding, round trip, judging."""
    from dmlconform import harness_protocol as protocol
    from dmlconform.backends.native import NativeBackend
    from dmlconform.runner.judge import judge_outcome

    step = max(len(cases) // args.sample, 1)
    sample = cases[::step][: args.sample]
    folder = root / "python-side"
    folder.mkdir()
    backend = NativeBackend(harness.with_options("", folder / "timings-%p.jsonl"), args.timeout)
    target = backend.info().feature_level
    encode = judging = 0.0
    round_trips: dict[str, float] = {}
    try:
        backend.run(next((c for c in cases if not c.expect_invalid), sample[0]))  # warm-up: the descriptor heap
        for case in sample:
            clock = time.perf_counter()
            protocol.encode_run_request(case.full_id, case.description, case.inputs)
            encoded = time.perf_counter()
            outcome = backend.run(case)  # encodes again: the round trip as a worker sees it
            ran = time.perf_counter()
            judge_outcome(case, outcome, target)
            case.forget_references()
            judging += time.perf_counter() - ran
            round_trips[case.full_id] = ran - encoded
            encode += encoded - clock
    finally:
        backend.close()
    _, requests = read_timings(folder)
    busy = {str(r["id"]): sum(float(r.get(p) or 0) for p in PHASES) / 1e6 for r in requests[1:]}  # [0]: the warm-up
    in_harness = sum(busy.values())
    round_trip = sum(round_trips.values())
    n = len(sample)
    # The round trip less the harness's time, for the cases the harness saw (the native backend declines
    # those its handshake rules out), less the encoding it does again.
    pipe = sum(t - busy[i] for i, t in round_trips.items() if i in busy) - encode * len(busy) / n
    total = round_trip + judging
    return [f"Python side, {n} cases one at a time (one in {step}), ms per case: encoding {encode / n * 1000:.2f}, "
            f"harness {in_harness / n * 1000:.2f}, pipe and reply decoding {pipe / n * 1000:.2f}, judging "
            f"(reference + comparison) {judging / n * 1000:.2f}; the runner's own share "
            f"{(total - in_harness) / total * 100:.0f}% of a case's {total / n * 1000:.2f} ms",
            f"loading the workload's suites: {loading_s[1]:.2f} s from the parsed-suite cache, as every run but the "
            f"first after a change of dmlconform or the suites ({loading_s[0]:.2f} s parsing them, "
            f"{loading_s[0] / max(len(cases), 1) * 1000:.2f} ms per case); the command overlaps it with the harness "
            "starts"]


# -- comparisons -----------------------------------------------------------------------------------------------
def result_differences(runs: list[Run]) -> list[str]:
    reference = runs[0]
    lines = []
    for run in runs[1:]:
        differing = sorted(k for k in reference.results.keys() | run.results.keys()
                           if reference.results.get(k) != run.results.get(k))
        for case_id in differing[:10]:
            lines.append(f"  {case_id}: {reference.label}: {reference.results.get(case_id)}; "
                         f"{run.label}: {run.results.get(case_id)}")
        if len(differing) > 10:
            lines.append(f"  ... {len(differing) - 10} more between {reference.label} and {run.label}")
    return lines


def output_differences(ours: Run, peer: Run) -> tuple[int, list[str]]:
    """Cases compared, and every difference in the bytes (and dtype, shape) of what the harnesses returned."""
    compared, lines = 0, []
    for case_id in sorted(ours.artifacts.keys() | peer.artifacts.keys()):
        mine, theirs = ours.artifacts.get(case_id, {}), peer.artifacts.get(case_id, {})
        if mine.keys() != theirs.keys():
            lines.append(f"  {case_id}: outputs {sorted(mine)} vs {sorted(theirs)}")
            continue
        for name in mine:
            a, b = np.load(ours.folder / mine[name]), np.load(peer.folder / theirs[name])
            if a.dtype != b.dtype or a.shape != b.shape or a.tobytes() != b.tobytes():
                lines.append(f"  {case_id} {name}: not byte-identical")
        compared += bool(mine)
    return compared, lines


def keep(root: Path, report_dir: Path, text: str) -> None:
    """The report, and each run's JSON result and harness timings, compressed (never the outputs)."""
    report_dir.mkdir(parents=True, exist_ok=True)
    (report_dir / "bench_directml.txt").write_text(text)
    for path in [*root.glob("*/result.json"), *root.glob("*/timings-*.jsonl")]:
        target = report_dir / path.parent.name / f"{path.name}.gz"
        target.parent.mkdir(exist_ok=True)
        with open(path, "rb") as plain, gzip.open(target, "wb") as packed:
            shutil.copyfileobj(plain, packed)


def cold_run_line(run: Run) -> str:
    """The warm-up run: the workload's first on this machine, which fills the GPU driver's shader cache."""
    compile_ms = seconds(run.requests, "compile") / max(len(run.requests), 1) * 1000
    return (f"warm-up run (timed, not among the runs below): {run.wall_s:.2f} s at jobs {run.jobs}, CompileOperator "
            f"{compile_ms:.2f} ms a request; the driver's shader cache it fills is what every later run on this "
            "machine finds")


def measure(args: argparse.Namespace, jobs: list[int], cpus: int, root: Path, out: list[str]) -> int:
    """Every run and measurement; the report's lines are printed and collected in `out`."""

    def say(*lines: str) -> None:
        for line in lines:
            print(line, flush=True)
            out.append(line)

    harness = choose_harness(args)
    cases, loading_s = load_workload(args)
    what = "--backend onnxruntime --ep dml" + "".join(f" --session-config {c}" for c in args.session_config) \
        if args.ep else ("--backend directml" if harness.packaged else "--backend native")
    say(f"workload: dmlconform run{f' {args.suites}' if args.suites else ''} --tier {args.tier}"
        f"{f' --path {args.path}' if args.path != 'operator' else ''}"
        f"{f' -k {shlex.quote(args.k)}' if args.k else ''} {what}, {len(cases)} cases; "
        f"{'host' if args.ep else 'harness'} {harness.label}",
        f"machine: {cpus} CPUs, load average {os.getloadavg()[0]:.1f} at the start", warm_up(args, harness))
    if args.warm_up_run:
        say(cold_run_line(measured_run(args, harness, "cold", max(jobs), "", root)))
    runs = [measured_run(args, harness, f"jobs {j}", j, "", root) for j in jobs]
    say(f"device: {runs[0].device}", "",
        f"{'jobs':>4} {'wall s':>8} {'cases/s':>8} {'x j=1':>6} {'x limit':>8} {'starts':>6}  results")
    for run in runs:
        limit = physical_limit(run)
        say(f"{run.jobs:4d} {run.wall_s:8.2f} {run.rate:8.1f} {runs[0].wall_s / run.wall_s:6.2f} "
            f"{run.wall_s / limit if limit else float('nan'):8.1f} {len(run.starts):6d}  "
            + ", ".join(f"{n} {s}" for s, n in run.statuses.most_common()))
    best = min(runs, key=lambda r: r.wall_s)
    peer = ours_kept = None
    if args.peer or args.peer_env:
        peer_jobs = args.peer_jobs or max(jobs)
        peer_env = dict(entry.split("=", 1) for entry in args.peer_env)
        peer = measured_run(args, harness, "peer", peer_jobs, args.peer, root, keep_outputs=args.check_outputs,
                            env=peer_env)
        same = next((r for r in runs if r.jobs == peer_jobs), None)
        called = " ".join([*(args.peer.split() if args.peer else []), *args.peer_env])
        say("", f"peer: the {program(peer)} with {called}, jobs {peer_jobs}: {peer.wall_s:.2f} s, "
            f"{peer.rate:.1f} cases/s" + (" (keeping every output)" if args.check_outputs else "")
            + (f"; this {program(peer)} at jobs {peer_jobs} is {peer.wall_s / same.wall_s:.1f}x faster" if same
               else ""))
        if args.check_outputs:
            ours_kept = measured_run(args, harness, "outputs", peer_jobs, "", root, keep_outputs=True,
                                     timed_harness=False)
    say("", *limit_lines(runs), "", *share_table(runs), "", *(line for run in runs for line in timeline(run)),
        *gpu_lines(runs[0]), *operator_lines(runs[0]))
    if peer is not None:
        say("", "the peer's shares:", *share_table([peer]), *limit_lines([peer]), *timeline(peer), *gpu_lines(peer))
    if not args.ep:
        say("", *start_probe(args, harness, cases, root), *python_side(args, harness, cases, loading_s, root))

    failed = False
    differences = result_differences([*runs, *(r for r in (peer, ours_kept) if r is not None)])
    say("", "per-case results (status, outcome, candidate, max ULP, max abs error, output digest): "
        + ("identical in every run" if not differences else "DIFFER:"), *differences)
    failed |= bool(differences)
    if peer is not None and ours_kept is not None:
        compared, lines = output_differences(ours_kept, peer)
        say(f"outputs of {compared} cases, this {program(peer)} without --timings vs the peer: "
            + ("byte-identical" if not lines else "DIFFER:"), *lines[:20])
        failed |= bool(lines) or compared == 0
    device = "llvmpipe" if "llvmpipe" in best.device.lower() else "gpu"
    path = "ep" if args.ep else "harness"
    goal = GOALS_S.get((path, device, args.tier))
    if goal is not None and not args.k:
        verdict = "PASS" if best.wall_s <= goal else "MISS"
        failed |= verdict == "MISS"
        say(f"goal (issue 31): the {args.tier} tier through the {'DML EP' if args.ep else 'DirectML harness'} in at "
            f"most {goal:g} s on {device}: best {best.wall_s:.1f} s at jobs {best.jobs}: {verdict}")
    return 1 if failed else 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--adapter", default="lavapipe", metavar="N|DRIVER",
                        help="the device, as `dmlconform run --backend directml --adapter` takes it: a DXGI adapter "
                        "index, or under Wine a Vulkan driver (lavapipe, nvidia, a manifest's path); default lavapipe")
    parser.add_argument("--directml", metavar="PATH", help="DirectML.dll (default: as `dmlconform run` chooses; "
                        "$DMLCONFORM_DIRECTML)")
    parser.add_argument("--directml-version", metavar="V", help="the DLL of a fetched onnxruntime-directml release")
    parser.add_argument("--harness", metavar="'CMD ARGS'", help="a harness (with --ep, host) command line of one's own "
                        "instead of the packaged program (it must take --timings FILE; under Wine, give it DISPLAY)")
    parser.add_argument("--ep", action="store_true", help="the DML EP through the ONNX Runtime host "
                        "(`dmlconform run --backend onnxruntime --ep dml`) instead of the DirectML harness")
    parser.add_argument("--session-config", action="append", default=[], metavar="K=V",
                        help="with --ep: a session config entry for every session (repeatable), e.g. "
                        "ep.dml.disable_graph_fusion=1 as CI's step")
    parser.add_argument("--tier", default="standard", choices=["smoke", "standard", "full"])
    parser.add_argument("--path", default="operator",
                        help="execution paths, as `dmlconform run --path` takes them (docs/api-surface.md)")
    parser.add_argument("--suites", type=Path, metavar="DIR", help="suites of one's own (e.g. a frozen copy of "
                        "test_vectors/) instead of the bundled ones")
    parser.add_argument("-k", help="select cases as `dmlconform run -k` does")
    parser.add_argument("--jobs", type=int, nargs="+", help="--jobs values (default: 1 2 4 8 16 up to the CPUs)")
    parser.add_argument("--peer", default="", metavar="OPTIONS", help="program options of a peer run "
                        "(--buffers-per-case or --heap-per-case for the harness, --fresh-heaps or "
                        "'--intra-op-threads 0' for the host)")
    parser.add_argument("--peer-env", action="append", default=[], metavar="K=V", help="environment of the peer run "
                        "(DMLCONFORM_EARLY_START=off: the harnesses started after the command's imports)")
    parser.add_argument("--peer-jobs", type=int, help="--jobs of the peer run (default: the largest measured)")
    parser.add_argument("--check-outputs", action="store_true", help="compare every output with the peer's")
    parser.add_argument("--warm-up-run", action="store_true", help="run the workload once before the measured runs "
                        "(timed and reported apart): the GPU driver's shader cache is then filled, as by any earlier "
                        "run on the machine")
    parser.add_argument("--starts", type=int, default=3, help="harness starts timed in this process")
    parser.add_argument("--sample", type=int, default=200, help="cases of the Python-side measurement")
    parser.add_argument("--timeout", type=float, default=300.0, help="dmlconform run --timeout")
    parser.add_argument("--report-dir", type=Path, help="keep the report, each run's result and timings here "
                        "(compressed; about 2 MB a run)")
    args = parser.parse_args()
    if args.check_outputs and not (args.peer or args.peer_env):
        parser.error("--check-outputs compares with the peer: give --peer=OPTIONS or --peer-env K=V")
    if any("=" not in entry for entry in args.peer_env):
        parser.error("--peer-env takes KEY=VALUE")
    cpus = os.cpu_count() or 1
    jobs = args.jobs or [j for j in (1, 2, 4, 8, 16) if j <= cpus]
    root = Path(tempfile.mkdtemp(prefix="bench_directml."))
    out: list[str] = []
    try:
        return measure(args, jobs, cpus, root, out)
    finally:
        if args.report_dir is not None:  # what there is, also when a run failed
            keep(root, args.report_dir, "\n".join(out) + "\n")
            print(f"(report, results and timings in {args.report_dir})")
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
