# expect-error: SyntaxError
# expect-message: line 4
ok = 1
broken = 1 +
