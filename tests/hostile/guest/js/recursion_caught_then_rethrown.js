// A real stack overflow caught deep down and replaced by an ordinary error is the guest's error.
// expect-error: GuestError
// expect-message: Error: replaced
function down(n) {
  try {
    return down(n + 1) + 1;
  } catch (error) {
    if (error.message === "replaced") throw error;
    throw new Error("replaced");
  }
}
down(0);
