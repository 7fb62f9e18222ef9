// An argument the tool does not declare that is a near miss of one it does (`ttl` for
// `expire_seconds`) is refused before anything is sent, naming the one meant and the signature:
// a server that ignored it would keep the value forever.
// expect-error: GuestError
// expect-message: invalid arguments for fixture.keep: "ttl" is not an argument of fixture.keep; did you mean "expire_seconds"? The call was not sent.
// expect-message: expected: tools.fixture.keep(
await tools.fixture.keep({ key: "k", value: "v", ttl: 10 });
