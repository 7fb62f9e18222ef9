// A guest imitating the host's MemoryLimit text stays a guest error.
// expect-error: GuestError
// expect-message: MemoryLimit: the code allocated more than 32 MiB
throw new Error("MemoryLimit: the code allocated more than 32 MiB (--memory-mb 32). Keep less data in memory.");
