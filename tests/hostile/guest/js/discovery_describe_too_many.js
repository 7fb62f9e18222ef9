// 20,000 different names are refused before any is looked up: each unknown one would be
// compared with every tool.
// expect-error: GuestError
// expect-message: describe at most 50 tools at once: this request names more than 50 different ones (20000 names in all)
await describeTools(Array.from({ length: 20000 }, (_, i) => "demo" + i));
