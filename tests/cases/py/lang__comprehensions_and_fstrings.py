# Comprehensions (list, dict, set, generator expressions), f-strings, the walrus operator, lambdas,
# closures with nonlocal, global, defaults, *args/**kwargs, keyword-only and positional-only
# parameters, and decorators that are plain functions.
# expect: {"squares":[0,1,4],"index":{"a":0,"b":1},"mods":[0,1,2],"total":6,"text":"'x' 3.14 n=3","walrus":10,"counter":2,"sorted":[3,2,1],"kw":[1,2,3],"varargs":[[1,2],{"k":3}],"default":4,"decorated":2,"global":1}
name = "x"
n = 3
pi = 3.14159
calls = 0


def make_counter():
    count = 0

    def increment():
        nonlocal count
        count += 1
        return count

    return increment


def keywords(a, /, b, *, c):
    return [a, b, c]


def varargs(*args, **kwargs):
    return [list(args), kwargs]


def double(x=2):
    return x * 2


def plus_one(function):
    def wrapper(*args):
        return function(*args) + 1

    return wrapper


@plus_one
def one():
    global calls
    calls += 1
    return 1


counter = make_counter()
counter()
if (limit := 10) > 5:
    walrus = limit
{
    "squares": [i * i for i in range(3)],
    "index": {key: position for position, key in enumerate("ab")},
    "mods": sorted({value % 3 for value in range(10)}),
    "total": sum(value for value in range(4)),
    "text": f"{name!r} {pi:.2f} {n=}",
    "walrus": walrus,
    "counter": counter(),
    "sorted": sorted([1, 3, 2], key=lambda value: -value),
    "kw": keywords(1, 2, c=3),
    "varargs": varargs(1, 2, k=3),
    "default": double(),
    "decorated": one(),
    "global": calls,
}
