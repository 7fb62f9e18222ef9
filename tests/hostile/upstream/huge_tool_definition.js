// A tool definition nested 100,000 levels deep is left out without recursion; the server's
// other tools are served.
// expect: "ok"
return await tools.huge.ok({});
