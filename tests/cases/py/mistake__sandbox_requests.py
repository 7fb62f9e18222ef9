# The requests package: the answer says there is no network or package here, and how to find a tool that fetches.
# expect-error: GuestError
# expect-message: ModuleNotFoundError: No module named 'requests' (requests is not available: toolweave's Python has part of the standard library and no network, file system, environment or installed packages; the only way out of the sandbox is a tool call, tools.<server>.<tool>(...). search_tools("fetch a web page") finds tools by what they do)
import requests
requests.get("https://example.com").json()
