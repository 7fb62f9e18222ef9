// `s += s` builds ropes that take little memory: QuickJS's own string-length cap ends it, as a guest error.
// expect-error: GuestError
// expect-message: InternalError: string too long
let text = "x";
while (true) text += text;
