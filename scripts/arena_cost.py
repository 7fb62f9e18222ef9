#!/usr/bin/env python3
"""Concurrent executions that allocate, in process: what the C allocator's arenas cost them.

    python3 scripts/arena_cost.py BINARY CONFIG default|GLIBC_TUNABLES_VALUE

Serves CONFIG over HTTP with `--isolation in-process` (GLIBC_TUNABLES set to the third argument
unless it is `default`), then four clients, each in its own session, run 15 executions one after
another that each build an array of 100,000 objects; prints the wall time of all 60. The gateway
sets its own arena bound at start, which overrides the tunable: compare a build from before that
with and without `glibc.malloc.arena_max=1`.
"""
import json, sys, threading, time, urllib.request, subprocess, os
binary, config, tunable = sys.argv[1], sys.argv[2], sys.argv[3]
env = dict(os.environ, TOOLWEAVE_LOG="warn")
if tunable != "default": env["GLIBC_TUNABLES"] = tunable
p = subprocess.Popen([binary, "serve", "--http", "127.0.0.1:0", "--config", config, "--isolation", "in-process"], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
url = None
for line in p.stderr:
    if "serving MCP at http://" in line:
        url = "http://" + line.split("http://")[1].split("/")[0] + "/mcp"; break
threading.Thread(target=lambda: [None for _ in p.stderr], daemon=True).start()
def post(body, session=None):
    req = urllib.request.Request(url, data=json.dumps(body).encode(), method="POST",
        headers={"content-type": "application/json", "accept": "application/json, text/event-stream", **({"mcp-session-id": session} if session else {})})
    with urllib.request.urlopen(req, timeout=120) as r:
        return r.headers.get("mcp-session-id"), r.read().decode()
def session():
    s, _ = post({"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"b","version":"0"}}})
    post({"jsonrpc":"2.0","method":"notifications/initialized"}, s); return s
CODE = "let a = []; for (let i = 0; i < 100000; i++) a.push({ i, s: 'x' + i }); return a.length"
THREADS, EACH = 4, 15
sessions = [session() for _ in range(THREADS)]
post({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"execute_code","arguments":{"code":CODE}}}, sessions[0])
bad = []
def run(k):
    for j in range(EACH):
        _, body = post({"jsonrpc":"2.0","id":j+2,"method":"tools/call","params":{"name":"execute_code","arguments":{"code":CODE}}}, sessions[k])
        if "100000" not in body: bad.append(body[-200:])
t = time.time()
ts = [threading.Thread(target=run, args=(k,)) for k in range(THREADS)]
[x.start() for x in ts]; [x.join() for x in ts]
print(f"{tunable}: {THREADS*EACH} executions in {time.time()-t:.2f} s, bad {len(bad)}", bad[:1])
p.terminate(); p.wait()
