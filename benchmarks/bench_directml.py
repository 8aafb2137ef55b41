"""Speed of the real DirectML harness: cases per second of a tier through `dmlconform run --backend native`,
how that scales with --jobs, and where the time goes.

    python benchmarks/bench_directml.py [--adapter lavapipe|nvidia|N] [--directml PATH | --directml-version V] \\
        [--tier standard] [-k EXPR] [--jobs 1 2 4 8 16] [--peer=--heap-per-case] [--check-outputs] \\
        [--report-dir DIR]
    python benchmarks/bench_directml.py --harness "CMD ARGS" ...        # a harness of one's own instead

The harness is the DirectML harness this package carries (dml_harness.exe, windows/), started exactly as `dmlconform
run --backend directml --adapter A` starts it: directly on Windows, under Wine elsewhere (the package's prefix and
its X display, which every harness shares; the Vulkan driver --adapter names). Its whole start is one command line
(`Launch.command_line`, dmlconform/directml/wine.py), so that harness options can be added to it. The workload is
`dmlconform run --tier T [-k EXPR] --backend native --harness "HARNESS --timings ..."` as a user runs it (one
harness per job, each case retried once when it fails, as on native by default), timed from this script's side, once
per --jobs value (those above this machine's CPU count are left out unless given explicitly). The harness writes one
line per request with the microseconds of each phase (`--timings`; replies do not change), from which the run's
worker time (jobs x wall) is split into: harness starts (D3D12 + DirectML device creation), the per-case phases
(operator creation, compilation, initializer creation, descriptor heap, buffers, upload, initialisation, binding,
dispatch, readback, reply), the harness waiting for the runner between cases (the Python side: judging, the pool,
encoding, the pipe), and the rest (interpreter and Wine start, suite loading, handshake, reports, workers idle at
the end).

Then, in this process: harness starts (`--starts` of them: Wine (and env, or a wrapper), device creation, handshake,
and the first case, which creates the descriptor heap), and a sample of cases run one at a time through the native
backend, as a worker runs them, timing encoding, the round trip less the harness's own time, and judging; and
loading the workload's suites.

With --peer=OPTIONS (the = keeps argparse from reading them as its own) the same workload runs once more with
those harness options added (e.g. "--heap-per-case", the harness's old way) at --peer-jobs, and the ratio is
printed. Every run's per-case results (status, outcome, matched candidate, max ULP, max abs error) must agree;
with --check-outputs the peer run keeps every output (--artifacts-all; its wall time then includes writing
them) and so does one more, untimed run of the harness without --timings, and the outputs must be byte-
identical. Exit status 1 when results or outputs differ, or when the full standard tier misses issue 22's goal
(lavapipe 300 s, a GPU 10 s, at the best --jobs).
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
          "readback", "reply")
PHASE_LABELS = {"decode": "request decoding", "create": "CreateOperator", "compile": "CompileOperator",
                "initializer": "CreateOperatorInitializer", "heap": "descriptor heap (once, or per case)",
                "resources": "buffers, binding table",
                "upload": "upload (CPU copy)", "initialize": "initializer dispatch + wait",
                "bind": "binding", "dispatch": "dispatch + copies + wait", "readback": "readback (CPU copy)",
                "reply": "reply frame"}
GPU_PHASES = ("gpu_initialize", "gpu_upload", "gpu_dispatch", "gpu_readback")
COMPARED = ("status", "outcome", "matched", "max_ulp", "max_abs_error")
#: Issue 22's goals for the whole standard tier, by the device the harness reports.
GOALS_S = {"llvmpipe": 300.0, "gpu": 10.0}


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
        if wine:
            from dmlconform.directml.wine import windows_path

            parts += ["--timings", shlex.quote(windows_path(timings))]
        else:
            parts += ["--timings", shlex.quote(str(timings))]
    return " ".join(parts)


@dataclass(frozen=True)
class Harness:
    """The harness every run starts: its command line, what the report calls it, and whether it runs under Wine."""

    command: str
    label: str
    wine: bool = False

    def with_options(self, options: str, timings: Path | None) -> str:
        return harness_command(self.command, options, timings, self.wine)


def choose_harness(args: argparse.Namespace) -> Harness:
    """The packaged DirectML harness on the device and DirectML.dll the options name (or --harness, a command of
    one's own, which must see to its own display under Wine). Under Wine the packaged harness's command line names the
    prefix's own X display, so every harness of every run shares the prefix's desktop, as they must."""
    if args.harness:
        return Harness(args.harness, args.harness)
    from dmlconform.directml.start import Device, StartError, harness_start
    from dmlconform.directml.wine import WineUnavailable

    try:
        start = harness_start(args.directml, args.directml_version, Device.parse(args.adapter),
                              lambda line: print(f"bench_directml: {line}", file=sys.stderr))
    except (StartError, WineUnavailable) as exc:  # one line naming what is missing and its fix
        raise SystemExit(f"bench_directml: the DirectML harness cannot start: {exc}") from None
    facts = start.facts
    label = (f"the packaged {facts['program'].replace(' sha256 ', ' (sha256 ', 1)}), DirectML.dll "
             f"{facts['directml_dll_version']} ({facts['directml_origin']})"
             + (f", {facts['wine']}" if "wine" in facts else "")
             + (f", Vulkan driver {start.launch.vulkan_driver.name}" if start.launch.vulkan_driver else ""))
    return Harness(start.launch.command_line(), label, start.launch.wine is not None)


def dmlconform_run(args: argparse.Namespace, jobs: int, harness: str, folder: Path,
                   keep_outputs: bool) -> tuple[float, float, Path]:
    """One `dmlconform run`, timed from here; returns when it began (Unix time), its wall time and the JSON
    result's path."""
    folder.mkdir(parents=True)
    result = folder / "result.json"
    command = [sys.executable, "-m", "dmlconform", "run", "--tier", args.tier, "--backend", "native",
               "--harness", harness, "--jobs", str(jobs), "--timeout", str(args.timeout), "--json", str(result)]
    if args.k:
        command += ["-k", args.k]
    if keep_outputs:
        command += ["--artifacts", str(folder / "outputs"), "--artifacts-all"]
    with open(folder / "stderr.txt", "wb") as stderr:
        began, clock = time.time(), time.perf_counter()
        done = subprocess.run(command, stdout=subprocess.DEVNULL, stderr=stderr)
        wall = time.perf_counter() - clock
    if done.returncode not in (0, 1) or not result.exists():
        tail = (folder / "stderr.txt").read_text(errors="replace")[-1500:]
        raise SystemExit(f"{shlex.join(command)} exited {done.returncode}:\n{tail}")
    return began, wall, result


def read_timings(folder: Path) -> tuple[list[dict[str, object]], list[dict[str, object]]]:
    """The harnesses' start lines and request lines, each tagged with its file (one file per process)."""
    starts, requests = [], []
    for path in sorted(folder.glob("timings-*.jsonl")):
        for order, line in enumerate(path.read_text().splitlines()):
            try:
                record = json.loads(line)
            except json.JSONDecodeError:
                continue  # a harness killed mid-line
            record["process"], record["order"] = path.name, order
            (starts if record.get("event") == "start" else requests).append(record)
    return starts, requests


def measured_run(args: argparse.Namespace, harness: Harness, label: str, jobs: int, options: str, root: Path,
                 keep_outputs: bool = False, timed_harness: bool = True) -> Run:
    folder = root / label.replace(" ", "_")
    timings = folder / "timings-%p.jsonl" if timed_harness else None
    began, wall, result_path = dmlconform_run(args, jobs, harness.with_options(options, timings), folder,
                                              keep_outputs)
    document = json.loads(result_path.read_text())
    results = {case["id"]: tuple(case.get(key) for key in COMPARED) for case in document["cases"]}
    artifacts = {case["id"]: case.get("artifacts") or {} for case in document["cases"]}
    starts, requests = read_timings(folder)
    return Run(label, jobs, wall, folder, results, Counter(case["status"] for case in document["cases"]),
               str(document["backend"].get("device", "?")), starts, requests, began, artifacts)


# -- where the time goes -------------------------------------------------------------------------------------
def seconds(records: list[dict[str, object]], key: str) -> float:
    return sum(float(r[key]) for r in records if isinstance(r.get(key), int | float)) / 1e6


def between_cases_wait(run: Run) -> float:
    """The harness's waits for the runner, less each process's first (the handshake and loading)."""
    return sum(float(r["wait"]) for r in run.requests if r["order"] != 1) / 1e6


def breakdown(run: Run) -> dict[str, float]:
    """Seconds of the run's worker time (jobs x wall) per part; `rest` is what the harnesses did not see."""
    parts = {"device creation (harness starts)": seconds(run.starts, "device_us")}
    parts |= {PHASE_LABELS[p]: seconds(run.requests, p) for p in PHASES}
    parts["harness waits for the runner"] = between_cases_wait(run)
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


def timeline(run: Run) -> list[str]:
    """When, after the command began, its first harness got going, and when the cases were done."""
    first = min(run.starts, key=lambda s: float(s["main_unix_us"]), default=None)
    if first is None or not run.requests:
        return []
    main = float(first["main_unix_us"]) / 1e6 - run.began_unix
    device = main + float(first["device_us"]) / 1e6
    mine = [r for r in run.requests if r["process"] == first["process"]]
    ordered = sorted(mine, key=lambda r: float(r["t_us"]))
    first_case = main + (float(ordered[0]["t_us"]) if ordered else float("nan")) / 1e6
    last_end = max(float(s["main_unix_us"]) / 1e6 - run.began_unix
                   + (float(r["t_us"]) + sum(float(r[p]) for p in PHASES)) / 1e6
                   for s in run.starts for r in run.requests if r["process"] == s["process"])
    return [f"timeline of the j={run.jobs} run (s after the command began): a harness's process began {main:.2f}, "
            f"its devices were ready {device:.2f}, its first case arrived {first_case:.2f}; the last case was done "
            f"{last_end:.2f}, the command {run.wall_s:.2f} (results written, harnesses stopped)"]


def gpu_lines(run: Run) -> list[str]:
    timed = [r for r in run.requests if r.get("gpu_dispatch") is not None]
    if not timed:
        return ["GPU timestamps: none (the device gave none)"]
    dispatch = seconds(timed, "dispatch")
    parts = ", ".join(f"{p.removeprefix('gpu_')} {seconds(timed, p) / len(timed) * 1000:.3f}" for p in GPU_PHASES)
    busy = sum(seconds(timed, p) for p in GPU_PHASES[1:])
    return [f"GPU timestamps, ms per request at j={run.jobs} ({len(timed)} requests that ran): {parts}; the GPU "
            f"is busy {busy / dispatch * 100 if dispatch else 0:.0f}% of the dispatch phase "
            "(the rest: submission, fence wait, Wine/vkd3d)"]


def operator_lines(run: Run) -> list[str]:
    by_op: dict[str, list[dict[str, object]]] = {}
    for r in run.requests:
        by_op.setdefault(str(r.get("op") or "(not run)"), []).append(r)
    lines = [f"per operator at j={run.jobs}: requests, harness ms per request (mean, median), largest phase"]
    for op, records in sorted(by_op.items()):
        busy = [sum(float(r[p]) for p in PHASES) / 1000 for r in records]
        totals = {p: seconds(records, p) for p in PHASES}
        top = max(totals, key=totals.__getitem__)
        lines.append(f"  {op:28} {len(records):5d} {statistics.fmean(busy):8.2f} {statistics.median(busy):8.2f}  "
                     f"{top} {totals[top] / max(sum(totals.values()), 1e-9) * 100:.0f}%")
    return lines


# -- in this process: harness starts and the Python side -----------------------------------------------------
def load_workload(args: argparse.Namespace) -> tuple[list[object], float]:
    from dmlconform.cli.common import load_cases
    from dmlconform.runner.loading import default_helpers, parallel_parser

    clock = time.perf_counter()
    cases = load_cases((), args.k, args.tier, parallel_parser(default_helpers()))
    return cases, time.perf_counter() - clock


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


def python_side(args: argparse.Namespace, harness: Harness, cases: list[object], loading_s: float,
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
    busy = {str(r["id"]): sum(float(r[p]) for p in PHASES) / 1e6 for r in requests[1:]}  # [0]: the warm-up
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
            f"loading the workload's suites: {loading_s:.2f} s ({loading_s / max(len(cases), 1) * 1000:.2f} ms "
            "per case; the command overlaps it with the harness starts)"]


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


def measure(args: argparse.Namespace, jobs: list[int], cpus: int, root: Path, out: list[str]) -> int:
    """Every run and measurement; the report's lines are printed and collected in `out`."""

    def say(*lines: str) -> None:
        for line in lines:
            print(line, flush=True)
            out.append(line)

    harness = choose_harness(args)
    cases, loading_s = load_workload(args)
    say(f"workload: dmlconform run --tier {args.tier}{f' -k {shlex.quote(args.k)}' if args.k else ''} "
        f"--backend native, {len(cases)} cases; harness {harness.label}",
        f"machine: {cpus} CPUs, load average {os.getloadavg()[0]:.1f} at the start")
    runs = [measured_run(args, harness, f"jobs {j}", j, "", root) for j in jobs]
    say(f"device: {runs[0].device}", "",
        f"{'jobs':>4} {'wall s':>8} {'cases/s':>8} {'x j=1':>6} {'starts':>6}  results")
    for run in runs:
        say(f"{run.jobs:4d} {run.wall_s:8.2f} {run.rate:8.1f} {runs[0].wall_s / run.wall_s:6.2f} "
            f"{len(run.starts):6d}  " + ", ".join(f"{n} {s}" for s, n in run.statuses.most_common()))
    best = min(runs, key=lambda r: r.wall_s)
    peer = ours_kept = None
    if args.peer:
        peer_jobs = args.peer_jobs or max(jobs)
        peer = measured_run(args, harness, "peer", peer_jobs, args.peer, root, keep_outputs=args.check_outputs)
        same = next((r for r in runs if r.jobs == peer_jobs), None)
        say("", f"peer: the harness with {args.peer}, jobs {peer_jobs}: {peer.wall_s:.2f} s, {peer.rate:.1f} "
            f"cases/s" + (" (keeping every output)" if args.check_outputs else "")
            + (f"; this harness at jobs {peer_jobs} is {peer.wall_s / same.wall_s:.1f}x faster" if same else ""))
        if args.check_outputs:
            ours_kept = measured_run(args, harness, "outputs", peer_jobs, "", root, keep_outputs=True,
                                     timed_harness=False)
    say("", *share_table(runs), "", *timeline(runs[0]), *gpu_lines(runs[0]), *operator_lines(runs[0]))
    if peer is not None:
        say("", "the peer's shares:", *share_table([peer]))
    say("", *start_probe(args, harness, cases, root), *python_side(args, harness, cases, loading_s, root))

    failed = False
    differences = result_differences([*runs, *(r for r in (peer, ours_kept) if r is not None)])
    say("", "per-case results (status, outcome, candidate, max ULP, max abs error): "
        + ("identical in every run" if not differences else "DIFFER:"), *differences)
    failed |= bool(differences)
    if peer is not None and ours_kept is not None:
        compared, lines = output_differences(ours_kept, peer)
        say(f"outputs of {compared} cases, this harness without --timings vs the peer: "
            + ("byte-identical" if not lines else "DIFFER:"), *lines[:20])
        failed |= bool(lines) or compared == 0
    if args.tier == "standard" and not args.k:
        kind = "llvmpipe" if "llvmpipe" in best.device.lower() else "gpu"
        goal = GOALS_S[kind]
        verdict = "PASS" if best.wall_s < goal else "MISS"
        failed |= verdict == "MISS"
        say(f"goal (issue 22): the standard tier in under {goal:g} s on {kind}: best {best.wall_s:.1f} s at jobs "
            f"{best.jobs}: {verdict}")
    return 1 if failed else 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--adapter", default="lavapipe", metavar="N|DRIVER",
                        help="the device, as `dmlconform run --backend directml --adapter` takes it: a DXGI adapter "
                        "index, or under Wine a Vulkan driver (lavapipe, nvidia, a manifest's path); default lavapipe")
    parser.add_argument("--directml", metavar="PATH", help="DirectML.dll (default: as `dmlconform run` chooses; "
                        "$DMLCONFORM_DIRECTML)")
    parser.add_argument("--directml-version", metavar="V", help="the DLL of a fetched onnxruntime-directml release")
    parser.add_argument("--harness", metavar="'CMD ARGS'", help="a harness command line of one's own instead of the "
                        "packaged harness (it must take --timings FILE; under Wine, give it DISPLAY)")
    parser.add_argument("--tier", default="standard", choices=["smoke", "standard", "full"])
    parser.add_argument("-k", help="select cases as `dmlconform run -k` does")
    parser.add_argument("--jobs", type=int, nargs="+", help="--jobs values (default: 1 2 4 8 16 up to the CPUs)")
    parser.add_argument("--peer", default="", metavar="OPTIONS", help="harness options of a peer run")
    parser.add_argument("--peer-jobs", type=int, help="--jobs of the peer run (default: the largest measured)")
    parser.add_argument("--check-outputs", action="store_true", help="compare every output with the peer's")
    parser.add_argument("--starts", type=int, default=3, help="harness starts timed in this process")
    parser.add_argument("--sample", type=int, default=200, help="cases of the Python-side measurement")
    parser.add_argument("--timeout", type=float, default=300.0, help="dmlconform run --timeout")
    parser.add_argument("--report-dir", type=Path, help="keep the report, each run's result and timings here "
                        "(compressed; about 2 MB a run)")
    args = parser.parse_args()
    if args.check_outputs and not args.peer:
        parser.error("--check-outputs compares with the peer: give --peer=OPTIONS")
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
