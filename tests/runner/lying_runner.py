"""A runner that speaks the runner protocol (docs/protocol.md) but lies, for the gateway's tests.

    lying_runner.py version   greets with protocol 99
    lying_runner.py liar      greets properly, then answers each job by what its code names:
        FORGE_TIMEOUT   a Timeout at once, long before the execution's deadline
        CALL:<name>     calls tool <name>, then returns the gateway's answer as the result
        SILENT          says nothing, ever
        FLOOD_LOG       more console output than any limit allows
        HUGE_RESULT     a result of 4 MB
        anything else   the value 7
"""

import json
import sys


def send(message):
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def finished(execution, result):
    send({"Message": {"id": execution, "message": {"Finished": {"result": result, "stats": {
        "duration": {"secs": 0, "nanos": 0}, "host_calls": 0, "log_bytes": 0,
        "memory_peak_bytes": 0}}}}})


def main():
    mode = sys.argv[1]
    hello = json.loads(sys.stdin.readline())
    assert "Hello" in hello, hello
    if mode == "version":
        send({"Hello": {"protocol": 99, "runner": "lying runner 99"}})
        return
    send({"Hello": {"protocol": 1, "runner": "lying runner"}})
    calls = {}
    for line in sys.stdin:
        message = json.loads(line)
        if "Start" in message:
            execution = message["Start"]["id"]
            code = message["Start"]["job"]["code"]
            send({"Message": {"id": execution, "message": {"Event": "Started"}}})
            if "FORGE_TIMEOUT" in code:
                finished(execution, {"Err": {"Timeout": {"limit": {"secs": 0, "nanos": 1000000}}}})
            elif "CALL:" in code:
                name = code.split("CALL:")[1].split()[0]
                calls[execution] = True
                send({"Message": {"id": execution, "message": {"Event": {"Call": {
                    "id": 1, "request": {"Tool": {"name": name, "args": {"a": 1, "b": 2},
                                                  "raw": False}}}}}}})
            elif "SILENT" in code:
                pass
            elif "FLOOD_LOG" in code:
                for _ in range(200):
                    send({"Message": {"id": execution, "message": {"Event": {"Log": {
                        "stream": "Log", "text": "x" * 10000}}}}})
                finished(execution, {"Ok": "flooded"})
            elif "HUGE_RESULT" in code:
                finished(execution, {"Ok": "y" * 4_000_000})
            else:
                finished(execution, {"Ok": 7})
        elif "Reply" in message:
            execution = message["Reply"]["id"]
            reply = message["Reply"]["reply"]
            if calls.pop(execution, None) and isinstance(reply, dict) and "Result" in reply:
                outcome = reply["Result"]["outcome"]
                finished(execution, {"Ok": outcome})


main()
