// The advice names the tool of the server that was called, not a glob over every server.
// expect-error: GuestError
// expect-message: beta.remove was not called: its server marks it destructive
// expect-message: --approve beta.remove
await tools.beta.remove({ name: "draft" });
