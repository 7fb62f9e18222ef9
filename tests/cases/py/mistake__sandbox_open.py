# A file opened as on a laptop: the answer says there is no file system, and how to find a tool that reads files.
# expect-error: GuestError
# expect-message: PermissionError: open() is not available: toolweave's Python has part of the standard library and no network, file system, environment or installed packages; the only way out of the sandbox is a tool call, tools.<server>.<tool>(...). search_tools("read a file") finds tools by what they do
text = open("notes.txt").read()
text
