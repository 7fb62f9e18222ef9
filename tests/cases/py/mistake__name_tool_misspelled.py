# A misspelled tool: the answer names what was asked, the closest tool and the server's tools, whether the server is up yet or not.
# also-while-starting
# expect-error: GuestError
# expect-message: RuntimeError: unknown tool "fixture.ad"; did you mean fixture.add? The tools of fixture are add, get_sum, echo
# expect-message: search_tools("what you need") finds tools by what they do.
# expect-message: line 7
total = await tools.fixture.ad(a=1, b=2)
total
