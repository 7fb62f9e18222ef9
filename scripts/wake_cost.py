#!/usr/bin/env python3
"""What waking a process costs on this machine: a one-byte pipe round trip between two processes.

    python3 scripts/wake_cost.py [RUNS [PAUSE_MS]]

Three series, each RUNS round trips sent PAUSE_MS (default 5) apart, as an MCP client paces
its requests: both processes held on one core, each on a core of its own, and both free to
move. The difference between the first two is what a hand-off to another core costs when
that core has gone idle in the meantime (twice per round trip). Linux only; needs two cores.
"""
import os
import sys
import time

runs = int(sys.argv[1]) if len(sys.argv) > 1 else 2000
pause = (float(sys.argv[2]) if len(sys.argv) > 2 else 5.0) / 1000


def series(parent_cpus, child_cpus):
    to_child_r, to_child_w = os.pipe()
    to_parent_r, to_parent_w = os.pipe()
    child = os.fork()
    if child == 0:
        os.close(to_child_w)
        os.close(to_parent_r)
        if child_cpus is not None:
            os.sched_setaffinity(0, child_cpus)
        while os.read(to_child_r, 1):
            os.write(to_parent_w, b"x")
        os._exit(0)
    os.close(to_child_r)
    os.close(to_parent_w)
    if parent_cpus is not None:
        os.sched_setaffinity(0, parent_cpus)
    samples = []
    for _ in range(runs):
        time.sleep(pause)
        started = time.perf_counter_ns()
        os.write(to_child_w, b"x")
        os.read(to_parent_r, 1)
        samples.append(time.perf_counter_ns() - started)
    os.close(to_child_w)
    os.waitpid(child, 0)
    os.close(to_parent_r)
    os.sched_setaffinity(0, range(os.cpu_count()))
    samples.sort()
    return samples[len(samples) // 2] / 1e3, samples[len(samples) * 9 // 10] / 1e3


for name, parent, child in [("one core", {0}, {0}), ("two cores", {0}, {1}), ("free", None, None)]:
    median, p90 = series(parent, child)
    print(f"{name:10} round trip median {median:6.1f} µs   p90 {p90:6.1f} µs", flush=True)
