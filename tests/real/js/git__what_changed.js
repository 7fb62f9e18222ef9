// What changed since the last commit: the modified and untracked files from the status, and the
// lines the unstaged diff adds.
// expect: {"branch":"main","modified":["notes.txt"],"untracked":["todo.txt"],"added":["changed notes"]}
const repo_path = "{{REPO}}";
const status = await tools.git.git_status({ repo_path });
const diff = await tools.git.git_diff_unstaged({ repo_path });
const modified = [...status.matchAll(/modified:\s+(\S+)/g)].map((match) => match[1]);
const untracked = status
  .split("Untracked files:")[1]
  .split("\n")
  .filter((line) => line.startsWith("\t"))
  .map((line) => line.trim());
const added = diff
  .split("\n")
  .filter((line) => line.startsWith("+") && !line.startsWith("+++"))
  .map((line) => line.slice(1));
return { branch: status.match(/On branch (\S+)/)[1], modified, untracked, added };
