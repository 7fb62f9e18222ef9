// An uncaught error names its line and column in the code as written (types included).
// expect-error: GuestError
// expect-message: Error: boom
// expect-message: at line 9
interface Config {
  retries: number;
}
const config: Config = { retries: 1 };
if (config.retries > 0) throw new Error("boom");
