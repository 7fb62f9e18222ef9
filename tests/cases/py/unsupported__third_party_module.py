# There is nothing to install and no network: tool calls are the only way out.
# expect-error: GuestError
# expect-message: ModuleNotFoundError: No module named 'requests'
# expect-message: the only way out of the sandbox is a tool call
import requests
