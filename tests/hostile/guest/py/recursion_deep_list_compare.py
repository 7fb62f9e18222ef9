# Comparing two lists nested 100000 levels deep (built by a loop): the native recursion is bounded.
# expect-error: StackOverflow
# expect-message: --stack-kb
left = []
right = []
for i in range(100000):
    left = [left]
    right = [right]
left == right
