// A failing call whose promise nothing awaits: the failure is a warning in the answer, with the line of the call.
// expect: "sent"
// expect-message: Warning: a promise was rejected and nothing awaited it (made at line 4, column 15): Error: fixture.fail returned an error: quota exceeded
tools.fixture.fail({ message: "quota exceeded" });
await tools.fixture.slow({ ms: 50 });
return "sent";
