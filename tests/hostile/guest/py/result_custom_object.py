# An instance of a class has no JSON form.
# expect-error: Unserializable
# expect-message: the result["handle"] is an instance of the class Handle
class Handle:
    def __init__(self):
        self.fd = 3


{"handle": Handle()}
