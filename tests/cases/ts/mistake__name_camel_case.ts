// camelCase for a tool whose name has a dash upstream (get-sum): the answer points at its guest name.
// also-while-starting
// expect-error: GuestError
// expect-message: unknown tool "fixture.getSum"; did you mean fixture.get_sum?
const total: number = await tools.fixture.getSum({ a: 2, b: 3 });
total
