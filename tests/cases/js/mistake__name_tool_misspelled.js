// A misspelled tool: the answer names what was asked, the closest tool and the server's tools, whether the server is up yet or not.
// also-while-starting
// expect-error: GuestError
// expect-message: Error: unknown tool "fixture.ad"; did you mean fixture.add? The tools of fixture are add, get_sum, echo
// expect-message: searchTools("what you need") finds tools by what they do.
// expect-message: at line 7, column 33:
const sum = await tools.fixture.ad({ a: 1, b: 2 });
return sum;
