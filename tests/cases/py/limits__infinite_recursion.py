# expect-error: StackOverflow
# expect-message: --stack-kb
def down(n):
    return down(n + 1) + 1


down(0)
