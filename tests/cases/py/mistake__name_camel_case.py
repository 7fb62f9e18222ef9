# camelCase for a tool whose name has a dash upstream (get-sum): the answer points at its Python name.
# also-while-starting
# expect-error: GuestError
# expect-message: unknown tool "fixture.getSum"; did you mean fixture.get_sum?
await tools.fixture.getSum(a=2, b=3)
