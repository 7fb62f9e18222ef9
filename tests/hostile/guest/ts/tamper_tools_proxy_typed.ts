// Freezing checks on the typed tools object: assignments fail, and the real call still answers.
// expect: {"frozen":[true,true],"echo":"kept"}
const frozen = [Object.isFrozen(tools), Object.isFrozen(tools.fixture)];
try { (tools as any).fixture.echo = async (): Promise<string> => "forged"; } catch { /* refused */ }
const echo: string = await tools.fixture.echo({ message: "kept" });
return { frozen, echo };
