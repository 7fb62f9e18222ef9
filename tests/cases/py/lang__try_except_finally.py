# try/except/else/finally, tuples of exception types, raise and re-raise, context managers.
# expect: [["caught","division by zero","finally"],"ValueError","else","in"]
def divide():
    steps = []
    try:
        1 / 0
    except ZeroDivisionError as error:
        steps = ["caught", str(error)]
    finally:
        steps.append("finally")
    return steps


def kind():
    try:
        raise ValueError("v")
    except (TypeError, ValueError) as error:
        return type(error).__name__


def no_error():
    try:
        value = 1
    except Exception:
        return "except"
    else:
        return "else"


class Context:
    def __enter__(self):
        return "in"

    def __exit__(self, *details):
        return False


with Context() as entered:
    inside = entered
[divide(), kind(), no_error(), inside]
