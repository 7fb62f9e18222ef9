# `match` statements are not supported: use if/elif.
# expect-error: SyntaxError
# expect-message: pattern matching (match statements): not supported
# expect-message: line 6
value = 1
match value:
    case 1:
        result = "one"
