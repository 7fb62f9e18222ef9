#!/usr/bin/env python3
"""Finds import circles between the modules of each crate: module A that `use`s B while B
`use`s A, directly or around a loop. Reads `use crate::...`, `use super::...` and
`crate::module::` paths in each crate's `src/`, whole files with comments, string and character
literals and `#[cfg(test)]` items dropped (each such item up to its `;` or its matching closing
brace, wherever it sits in the file). Names each circle; exits 1 when there is one other than those
listed in KNOWN (none: every circle fails).

Usage: scripts/import_cycles.py [crates-dir]
"""

import re
import sys
from pathlib import Path

# Circles not broken yet, each exactly as it is, as (crate, frozenset of modules): one that
# changes, or any other, fails. Empty: no crate has one.
KNOWN: set = set()

PATH = re.compile(r"\b(crate|super)((?:::[A-Za-z_][A-Za-z0-9_]*)+)")
USE_GROUP = re.compile(r"\buse\s+(crate|super)::\{([^;]*)\};", re.S)


def module_of(crate_src: Path, file: Path) -> tuple[str, ...]:
    """The module path of a source file: lib.rs/main.rs is (), a/mod.rs and a.rs are ("a",)."""
    parts = list(file.relative_to(crate_src).with_suffix("").parts)
    if parts[-1] in ("lib", "main", "mod"):
        parts = parts[:-1]
    return tuple(parts)


def code_only(text: str) -> str:
    """The text with comments, string literals (plain, byte, raw) and character literals blanked
    out, so braces and paths inside them count for nothing. Lifetimes (`'a`) are kept."""
    out = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            end = text.find("\n", i)
            i = n if end < 0 else end
        elif text.startswith("/*", i):
            depth, i = 1, i + 2
            while i < n and depth:
                if text.startswith("/*", i):
                    depth, i = depth + 1, i + 2
                elif text.startswith("*/", i):
                    depth, i = depth - 1, i + 2
                else:
                    i += 1
            out.append(" ")
        elif (raw := re.match(r'b?r(#*)"', text[i : i + 300])) and (i == 0 or not is_ident(text[i - 1])):
            close = '"' + raw.group(1)
            end = text.find(close, i + raw.end())
            i = n if end < 0 else end + len(close)
            out.append('""')
        elif c == '"':
            i += 1
            while i < n and text[i] != '"':
                i += 2 if text[i] == "\\" else 1
            i += 1
            out.append('""')
        elif c == "'" and (char := re.match(r"'(?:\\.[^']*|[^\\'])'", text[i : i + 12])):
            i += char.end()
            out.append("' '")
        else:
            out.append(c)
            i += 1
    return "".join(out)


def is_ident(c: str) -> bool:
    return c.isalnum() or c == "_"


def without_tests(text: str) -> str:
    """The code of a file without its `#[cfg(test)]` items: each from its attribute to the `;`
    that ends it or the brace that closes its body, wherever it sits; the rest is read."""
    text = code_only(text)
    out = []
    start = 0
    while (cut := text.find("#[cfg(test)]", start)) >= 0:
        out.append(text[start:cut])
        i = cut + len("#[cfg(test)]")
        while i < len(text) and text[i] not in "{;":
            i += 1
        if i < len(text) and text[i] == "{":
            depth = 0
            while i < len(text):
                depth += {"{": 1, "}": -1}.get(text[i], 0)
                i += 1
                if depth == 0:
                    break
        else:
            i += 1
        start = i
    out.append(text[start:])
    return "".join(out)


def resolve(base: tuple[str, ...], root: str, rest: list[str], modules: set) -> tuple[str, ...]:
    """The module a path names: the longest known module prefix."""
    if root == "crate":
        start: tuple[str, ...] = ()
    else:
        start = base[:-1]
    best = None
    path = start
    for name in rest:
        path = path + (name,)
        if path in modules:
            best = path
        else:
            break
    return best


def edges_of(crate_src: Path) -> dict:
    files = [f for f in crate_src.rglob("*.rs")]
    modules = {module_of(crate_src, f) for f in files}
    edges: dict = {m: set() for m in modules}
    for file in files:
        here = module_of(crate_src, file)
        text = without_tests(file.read_text())
        paths = []
        for match in USE_GROUP.finditer(text):
            root, group = match.groups()
            for item in re.split(r"[,\s]+", group):
                head = item.split("::")
                if head and head[0]:
                    paths.append((root, head))
        for match in PATH.finditer(text):
            root, rest = match.groups()
            paths.append((root, rest.strip(":").split("::")))
        for root, rest in paths:
            target = resolve(here, root, rest, modules)
            if target is None or target == () or target == here:
                continue
            # A module using its own submodule, or a submodule its parent, is one module's insides.
            if target[: len(here)] == here or here[: len(target)] == target:
                continue
            edges[here].add(target)
    return edges


def cycles(edges: dict) -> list:
    """Strongly connected components of more than one module (Tarjan)."""
    index = {}
    low = {}
    stack = []
    on_stack = set()
    found = []
    counter = [0]
    sys.setrecursionlimit(10000)

    def visit(node):
        index[node] = low[node] = counter[0]
        counter[0] += 1
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(edges.get(node, ())):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(edges):
        if node not in index:
            visit(node)
    return found


def main() -> int:
    crates = Path(sys.argv[1] if len(sys.argv) > 1 else Path(__file__).parent.parent / "crates")
    status = 0
    for crate in sorted(p for p in crates.iterdir() if (p / "src").is_dir()):
        edges = edges_of(crate / "src")
        for component in cycles(edges):
            names = ["::".join(m) for m in component]
            known = (crate.name, frozenset(names)) in KNOWN
            if not known:
                status = 1
            label = "known import circle" if known else "import circle"
            print(f"{crate.name}: {label} among {', '.join(names)}")
            for module in component:
                uses = sorted("::".join(t) for t in edges[module] if t in component)
                print(f"  {'::'.join(module)} uses {', '.join(uses)}")
    return status


if __name__ == "__main__":
    sys.exit(main())
