#!/usr/bin/env python3
"""Checks that every relative link in README.md, CONTRIBUTING.md and docs/*.md names a file
that exists and, when it has a `#fragment`, a heading of that file (slugged as GitHub does), and
that the index, docs/README.md, links every page of docs/. Prints each broken link and each page
the index leaves out; exits 1 when there is one."""
import pathlib
import re
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")


def prose_lines(path):
    """The lines of a markdown file outside fenced code, with inline code blanked."""
    fenced = False
    for number, line in enumerate(path.read_text().splitlines(), 1):
        if line.lstrip().startswith("```"):
            fenced = not fenced
            continue
        if not fenced:
            yield number, re.sub(r"`[^`]*`", "``", line)


def slug(heading):
    text = heading.strip().lower().replace("`", "")
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(path):
    seen = {}
    for _, line in prose_lines(path):
        match = re.match(r"#{1,6}\s+(.*)", line)
        if match:
            base = slug(match.group(1))
            count = seen.get(base, 0)
            seen[base] = count + 1
            yield base if count == 0 else f"{base}-{count}"


def main():
    files = [ROOT / "README.md", ROOT / "CONTRIBUTING.md", *sorted((ROOT / "docs").glob("*.md"))]
    broken = 0
    for source in files:
        for number, line in prose_lines(source):
            for target in LINK.findall(line):
                if re.match(r"[a-z]+:", target):
                    continue
                file_part, _, fragment = target.partition("#")
                path = (source.parent / file_part).resolve() if file_part else source
                where = f"{source.relative_to(ROOT)}:{number}: {target}"
                if not path.exists():
                    print(f"{where}: no such file")
                    broken += 1
                elif fragment and path.suffix == ".md" and fragment not in set(anchors(path)):
                    print(f"{where}: no heading #{fragment} in {path.relative_to(ROOT)}")
                    broken += 1
    index = ROOT / "docs" / "README.md"
    indexed = {(index.parent / target.partition("#")[0]).resolve()
               for _, line in prose_lines(index) for target in LINK.findall(line)}
    for page in sorted((ROOT / "docs").glob("*.md")):
        if page != index and page.resolve() not in indexed:
            print(f"docs/README.md: does not link {page.relative_to(ROOT)}")
            broken += 1
    print(f"{broken} broken link(s) in {len(files)} files")
    return 1 if broken else 0


if __name__ == "__main__":
    sys.exit(main())
