// The last commits of the repository the test made, newest first, and the id of the newest.
// expect: {"messages":["Add the parser","Add the notes"],"head":"{{HEAD}}","author":"Ada"}
const repo_path = "{{REPO}}";
const log = await tools.git.git_log({ repo_path, max_count: 5 });
const messages = [...log.matchAll(/^Message: (.*)$/gm)].map((match) => match[1]);
const commits = [...log.matchAll(/^Commit: ([0-9a-f]{40})$/gm)].map((match) => match[1]);
const author = log.match(/^Author: (.*)$/m)[1];
return { messages, head: commits[0], author };
