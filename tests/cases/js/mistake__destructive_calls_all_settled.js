// Several destructive calls at once with Promise.allSettled: each is refused on its own with the
// same advice, and the harmless call beside them goes through.
// expect: {"statuses":["rejected","rejected","fulfilled"],"advised":true,"sum":"3"}
const settled = await Promise.allSettled([
  tools.fixture.remove({ name: "a" }),
  tools.fixture.remove({ name: "b" }),
  tools.fixture.add({ a: 1, b: 2 }),
]);
return {
  statuses: settled.map((outcome) => outcome.status),
  advised: settled
    .filter((outcome) => outcome.status === "rejected")
    .every((outcome) => outcome.reason.message.includes("--approve fixture.remove")),
  sum: settled[2].value,
};
