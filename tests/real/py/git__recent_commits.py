# The last commits of the repository the test made, newest first, and the id of the newest.
# expect: {"messages": ["Add the parser", "Add the notes"], "head": "{{HEAD}}"}
import re

log = await tools.git.git_log(repo_path="{{REPO}}", max_count=5)
{
    "messages": re.findall(r"^Message: (.*)$", log, re.MULTILINE),
    "head": re.findall(r"^Commit: ([0-9a-f]{40})$", log, re.MULTILINE)[0],
}
