// A caught Error put in the result: sent with its name and message, not {}.
// expect: {"ok":false,"error":{"name":"Error","message":"fixture.fail returned an error: disk full"}}
try {
  await tools.fixture.fail({ message: "disk full" });
  return { ok: true };
} catch (error) {
  return { ok: false, error };
}
