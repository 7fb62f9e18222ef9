// What the newest commit added: the file and its first line, from git_show of HEAD.
// expect: {"file":"parser.py","firstLine":"def parse(text):"}
const shown = await tools.git.git_show({ repo_path: "{{REPO}}", revision: "HEAD" });
const file = shown.match(/^\+\+\+ b\/(.*)$/m)[1];
const firstLine = shown
  .split("\n")
  .find((line) => line.startsWith("+") && !line.startsWith("+++"))
  .slice(1);
return { file, firstLine };
