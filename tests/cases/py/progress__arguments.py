# progress(done, total=None, message=None) returns None at once; wrong arguments raise.
# expect: [null, "progress(done, total=None, message=None): done must be a number, not str", "progress(done, total=None, message=None): done must be a finite number of 0 or more, got -1", "progress(done, total=None, message=None): message must be a str, not int"]
for i in range(10001):
    progress(i, 10000, message=f"step {i}")
errors = [progress(1)]
try:
    progress("3")
except TypeError as e:
    errors.append(str(e))
try:
    progress(-1)
except ValueError as e:
    errors.append(str(e))
try:
    progress(1, 2, 3)
except TypeError as e:
    errors.append(str(e))
errors
