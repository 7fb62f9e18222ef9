# sys.modules is not a way to find os or anything else already loaded.
# expect-error: GuestError
# expect-message: AttributeError
import sys

sys.modules["os"].system("id")
