// llm.ask and llm.think check their arguments before anything is sent, and say what to pass.
// expect: ["llm.ask(prompt, options?): the prompt must be a string, got null", "llm.ask: maxTokens must be a whole number of 1 or more, got \"500\"", "llm.ask: unknown option \"max_tokens\"; the options are system, maxTokens (max_tokens in Python) and model", "llm.think: messages is missing; it must be an array like [{role: \"user\", content: \"...\"}]", "llm.think: messages[0].role must be \"user\" or \"assistant\", got \"system\""]
const messages = [];
for (const attempt of [
  () => llm.ask(),
  () => llm.ask("Summarise this.", { maxTokens: "500" }),
  () => llm.ask("Summarise this.", { max_tokens: 500 }),
  () => llm.think({ system: "Be brief." }),
  () => llm.think({ messages: [{ role: "system", content: "Be brief." }] }),
]) {
  try {
    await attempt();
    messages.push("answered");
  } catch (error) {
    messages.push(error.message);
  }
}
return messages;
