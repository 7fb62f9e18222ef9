// A server's error text with terminal colour codes: the model reads the text without them.
// expect-error: GuestError
// expect-message: Error: fixture.fail returned an error: Error: disk full (code 28)
await tools.fixture.fail({ message: "\u001b[1;31mError:\u001b[0m disk full \u001b[2m(code 28)\u001b[0m" });
