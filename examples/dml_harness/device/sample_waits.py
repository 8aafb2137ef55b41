"""Where the processes of a run spend their time, sampled from /proc (Linux): CPU seconds per kind of process, and
each sample of a Windows program's threads (the DirectML harness, the ONNX model host, under Wine) as running or
waiting in the kernel, with the wait channel. Started before a run and stopped by a file's appearance:

    python3 sample_waits.py OUT.txt STOP_FILE &  dmlconform run ... ;  touch STOP_FILE; wait

A thread in state D waiting in `os_acquire_rwlock_*` or `os_acquire_mutex` is inside NVIDIA's kernel driver, waiting
for its lock (docs/directml-speed.md, issue 31's fourth round); `futex_do_wait` and `anon_pipe_read` are idle threads.
Standard library only: the device machine's Python runs it without the project.
"""

from __future__ import annotations

import collections
import os
import sys
import time

PERIOD_S = 0.1


def kind(comm: str) -> str:
    """By the process's name (at most 15 characters: "ort_dml_host.ex")."""
    if "wineserver" in comm:
        return "wineserver"
    if comm.startswith(("dml_harness", "ort_dml_host")):
        return "program"
    if comm.endswith((".exe", ".ex", ".e")):
        return "wine"  # Wine's own services (explorer.exe, services.exe, ...)
    if "python" in comm or "dmlconform" in comm:
        return "python"
    return "other"


def read(path: str) -> str:
    with open(path, encoding="utf-8", errors="replace") as file:
        return file.read()


def machine_ticks() -> tuple[int, int]:
    values = [int(v) for v in read("/proc/stat").splitlines()[0].split()[1:]]
    return sum(values), values[3] + values[4]  # all, idle + iowait


def main(out: str, stop: str) -> None:
    tick = os.sysconf("SC_CLK_TCK")
    first: dict[tuple[str, str], int] = {}
    last: dict[tuple[str, str], int] = {}
    states: collections.Counter[tuple[str, str, str]] = collections.Counter()
    samples = 0
    began, ticks = time.time(), machine_ticks()
    while not os.path.exists(stop):
        samples += 1
        for pid in filter(str.isdigit, os.listdir("/proc")):
            try:
                stat = read(f"/proc/{pid}/stat")
                comm = stat[stat.index("(") + 1:stat.rindex(")")]
                fields = stat[stat.rindex(")") + 2:].split()
            except (OSError, ValueError):
                continue
            what = kind(comm)
            first.setdefault((pid, what), int(fields[11]) + int(fields[12]))
            last[(pid, what)] = int(fields[11]) + int(fields[12])
            if what != "program":
                continue
            try:
                for tid in os.listdir(f"/proc/{pid}/task"):
                    task = read(f"/proc/{pid}/task/{tid}/stat")
                    state = task[task.rindex(")") + 2]
                    where = task[task.index("(") + 1:task.rindex(")")] if state == "R" else \
                        read(f"/proc/{pid}/task/{tid}/wchan").strip()
                    states[("running" if state == "R" else f"waiting ({state})", where, "")] += 1
            except OSError:
                continue
        time.sleep(PERIOD_S)
    wall, (all_now, idle_now) = time.time() - began, machine_ticks()
    busy = 1 - (idle_now - ticks[1]) / max(all_now - ticks[0], 1)
    cpu: collections.Counter[str] = collections.Counter()
    for key, value in last.items():
        cpu[key[1]] += (value - first[key]) / tick
    running = sum(n for (state, _, _), n in states.items() if state == "running")
    driver = sum(n for (state, where, _), n in states.items()
                 if state == "waiting (D)" and where.startswith(("os_acquire_rwlock", "os_acquire_mutex")))
    with open(out, "w", encoding="utf-8") as file:
        print(f"wall {wall:.1f} s, {samples} samples every {PERIOD_S} s, the machine {busy * 100:.0f}% busy "
              f"({os.cpu_count()} CPUs)", file=file)
        for what, seconds in cpu.most_common():
            print(f"cpu {what:12s} {seconds:8.1f} s", file=file)
        print(f"program threads: {running} samples running, {driver} waiting for the NVIDIA driver's lock "
              f"({driver / max(running + driver, 1) * 100:.0f}% of the two)", file=file)
        for (state, where, _), count in states.most_common(20):
            print(f"  {state:12s} {where:40s} {count}", file=file)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
