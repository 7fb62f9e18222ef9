# llm.ask and llm.think take the options as keywords (max_tokens) or one dict (maxTokens), check
# them before anything is sent, and say what to pass.
# expect: ["llm.ask(prompt, options, system, max_tokens, model) missing required argument 'prompt'", "llm.ask: maxTokens must be a whole number of 1 or more, got 2.5", "llm.think: messages must be an array like [{role: \"user\", content: \"...\"}], got a string", "llm has no method 'chat'; it has ask(prompt, system=None, max_tokens=None, model=None) and think(messages, system=None, max_tokens=None, model=None)"]
messages = []
for attempt in [
    lambda: llm.ask(),
    lambda: llm.ask("Summarise this.", max_tokens=2.5),
    lambda: llm.think("Summarise this."),
    lambda: llm.chat("hi"),
]:
    try:
        await attempt()
        messages.append("answered")
    except Exception as error:
        messages.append(str(error))
messages
