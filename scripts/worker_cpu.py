#!/usr/bin/env python3
"""Back-to-back executions over raw stdio, and what each costs the machine in worker processes.

    python3 scripts/worker_cpu.py BINARY CONFIG LANGUAGE CODE [RUNS [IN_FLIGHT]]

Starts `BINARY serve --config CONFIG`, sends RUNS executions of CODE one after another (each as
soon as the last is answered, after 30 to warm up), and prints the median and p90 latency as
this script sees it; with IN_FLIGHT above 1, keeps that many requests in flight and prints the
executions per second instead. Either way it prints the CPU per execution of the language's fork
server (the forks) and of the workers it forked: those it reaped (their whole lives: start,
confinement, warm-up, jobs, exit) and those still alive (kept for the session, or waiting), read
from /proc/<pid>/stat (utime + stime, cutime + cstime). Linux only.
"""
import json
import os
import subprocess
import sys
import time

binary, config, language, code = sys.argv[1:5]
runs = int(sys.argv[5]) if len(sys.argv) > 5 else 1500
in_flight = int(sys.argv[6]) if len(sys.argv) > 6 else 1
ticks = os.sysconf("SC_CLK_TCK")
server = subprocess.Popen([binary, "serve", "--config", config], stdin=subprocess.PIPE,
                          stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)


def send(message):
    server.stdin.write((json.dumps(message) + "\n").encode())
    server.stdin.flush()


def answer(id):
    while True:
        message = json.loads(server.stdout.readline())
        if message.get("id") == id:
            return message


def request(id):
    send({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {
        "name": "execute_code", "arguments": {"code": code, "language": language}}})


def execute(id):
    request(id)
    return answer(id)


def pipelined(first, count):
    """Runs `count` executions with `in_flight` requests outstanding; every answer checked."""
    sent = first
    for _ in range(min(in_flight, count)):
        request(sent)
        sent += 1
    for _ in range(count):
        while True:
            message = json.loads(server.stdout.readline())
            if "id" in message:
                break
        assert not message["result"].get("isError"), message
        if sent < first + count:
            request(sent)
            sent += 1


send({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
    "protocolVersion": "2025-06-18", "capabilities": {},
    "clientInfo": {"name": "worker_cpu", "version": "1"}}})
answer(0)
send({"jsonrpc": "2.0", "method": "notifications/initialized"})
time.sleep(0.5)
for id in range(1, 31):
    result = execute(id)["result"]
assert not result.get("isError"), result

kind = "python" if language == "python" else "javascript"
found = subprocess.run(["pgrep", "-f", "fork-server " + kind], capture_output=True, text=True)
fork_server = next(int(pid) for pid in found.stdout.split()
                   if open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()[1]
                   == str(server.pid))


def cpu(pid):
    fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12]), int(fields[13]) + int(fields[14])


def living_workers():
    """The fork server's children now: their CPU so far, by pid."""
    found = {}
    for pid in os.listdir("/proc"):
        try:
            fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
        except (OSError, ValueError):
            continue
        if fields[1] == str(fork_server):
            found[pid] = int(fields[11]) + int(fields[12])
    return found


def workers_cpu():
    """Ticks of the fork server's own CPU, and of its workers: those it reaped, whole, plus
    those alive now. A worker alive at the start and reaped since is counted whole by the
    reaping: the difference of two readings takes its share before the start out again."""
    own, reaped = cpu(fork_server)
    return own, reaped + sum(living_workers().values())


time.sleep(0.2)
own_before, workers_before = workers_cpu()
latencies = []
if in_flight > 1:
    started = time.perf_counter()
    pipelined(100, runs)
    measured = "%.0f executions/s with %d in flight" % (
        runs / (time.perf_counter() - started), in_flight)
else:
    for id in range(100, 100 + runs):
        started = time.perf_counter()
        execute(id)
        latencies.append(time.perf_counter() - started)
    latencies.sort()
    measured = "median %.3f ms, p90 %.3f ms" % (
        latencies[runs // 2] * 1e3, latencies[int(runs * 0.9)] * 1e3)
time.sleep(0.3)
own_after, workers_after = workers_cpu()
print("%s: %s; per execution: fork server %.0f µs, workers %.0f µs" % (
    language, measured, (own_after - own_before) / ticks / runs * 1e6,
    (workers_after - workers_before) / ticks / runs * 1e6))
server.stdin.close()
server.wait()
