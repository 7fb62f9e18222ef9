# A real RecursionError caught by the program is its own business: the program goes on.
# expect: "caught at depth"
def down(n):
    return down(n + 1) + 1


try:
    down(0)
    outcome = "no error"
except RecursionError:
    outcome = "caught at depth"
outcome
