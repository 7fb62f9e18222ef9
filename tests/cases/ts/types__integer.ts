// An integer parameter is declared as one (TypeScript has only number), and the refusal of 2.5 says the same as the declaration.
// expect: {"declared":true,"refused":true,"agrees":true}
const described = JSON.stringify(await describeTools(["fixture.slow"]));
let message = "";
try {
  await tools.fixture.slow({ ms: 2.5 });
} catch (error) {
  message = String((error as Error).message);
}
return {
  declared: described.includes("ms: number /* integer */"),
  refused: message.includes("integer"),
  agrees: message.includes("ms: number /* integer */"),
};
