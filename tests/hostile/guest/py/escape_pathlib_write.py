# Writing a file through pathlib is refused like reading one.
# expect-error: GuestError
# expect-message: PermissionError
# expect-message: the only way out of the sandbox is a tool call
from pathlib import Path

Path("/tmp/toolweave-hostile-marker").write_text("escaped")
