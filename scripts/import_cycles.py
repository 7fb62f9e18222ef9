#!/usr/bin/env python3
"""Finds import circles between the modules of each crate: module A that `use`s B while B
`use`s A, directly or around a loop. Reads `use crate::...`, `use super::...` and
`crate::module::` paths in each crate's `src/` (test modules excluded: `#[cfg(test)]` blocks at
the end of a file are cut off). Names each circle; exits 1 when there is one other than those
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


def without_tests(text: str) -> str:
    """The text before the first `#[cfg(test)]` item; comments dropped."""
    text = re.sub(r"//[^\n]*", "", text)
    cut = text.find("#[cfg(test)]")
    return text if cut < 0 else text[:cut]


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
