# The local branches, after the test made one beside main; the current one is starred.
# expect: {"branches": ["main", "release"], "current": "main"}
listed = await tools.git.git_branch(repo_path="{{REPO}}", branch_type="local")
lines = [line.strip() for line in listed.splitlines() if line.strip()]
{
    "branches": sorted(line.lstrip("* ").strip() for line in lines),
    "current": [line[2:] for line in lines if line.startswith("* ")][0],
}
