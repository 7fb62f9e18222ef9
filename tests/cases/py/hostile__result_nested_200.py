# A result nested 200 lists deep: whatever the answer, it must not be reported as the client's cancellation.
# expect-error: Unserializable
# pending: the worker's outcome line is deeper than serde_json's 128-level limit; the host takes it for garbage, kills the worker and reports "Cancelled: the client cancelled this execution"
deep = []
for i in range(200):
    deep = [deep]
deep
