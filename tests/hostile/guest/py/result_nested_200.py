# A result nested 200 lists deep: whatever the answer, it must not be reported as the client's cancellation.
# expect-error: Unserializable
deep = []
for i in range(200):
    deep = [deep]
deep
