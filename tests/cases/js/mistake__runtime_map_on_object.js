// .map on a result that is an object, not an array: the answer names the call.
// expect-error: GuestError
// expect-message: TypeError: result.map is not a function
// expect-message: at line 6, column
const result = await tools.fixture.structured({ city: "Lima" });
return result.map((entry) => entry.city);
