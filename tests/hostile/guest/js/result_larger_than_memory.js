// A tool result larger than the guest's memory limit (40 MiB against 32 MiB) ends the execution
// with that limit, naming the tool, as soon as the result arrives: it is never copied in.
// expect-error: MemoryLimit
// expect-message: fixture.large returned
// expect-message: more than the code can hold in 32 MiB (--memory-mb 32)
return (await tools.fixture.large({ bytes: 41943040 })).length;
