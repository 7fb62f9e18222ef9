# A call without await: it was still running when the program ended, and the answer says so.
# expect: "done"
# expect-message: Warning: the program ended while 1 tool call it made was still running: it was cancelled
tools.fixture.slow(ms=500)
"done"
