#!/usr/bin/env python3
"""Import circles between sibling modules of a Rust crate, tests left out.

    python3 hack/lib/module_cycles.py controller/src              # top-level modules
    python3 hack/lib/module_cycles.py controller/src reconcilers  # the children of one module
    python3 hack/lib/module_cycles.py --all controller/src ...    # every level of each crate
    python3 hack/lib/module_cycles.py --no-sibling-imports apiserver-shim/src routes

Each file's paths (`use crate::…`, `super::…`, `self::…`, and paths written out in code) are
resolved to the module they name; an arrow joins two children of the chosen parent when one
imports from the other. Prints every group of children that import each other in a circle;
exits 1 when there is one. With --no-sibling-imports, every arrow between two children of the
parent is an error (the children are peers that share code through another module): prints
each arrow with the imports behind it; exits 1 when there is one.
"""
import os
import re
import sys

IDENT = r"[A-Za-z_][A-Za-z0-9_]*"


def module_of(root, path):
    rel = os.path.relpath(path, root)[:-3].split(os.sep)
    if rel[-1] in ("mod", "lib", "main"):
        rel = rel[:-1]
    return rel


def non_test_source(text):
    """The file's code before its test module, comments removed."""
    cut = re.search(r"#\[cfg\(test\)\]\s*mod tests\s*\{", text)
    code = text[: cut.start()] if cut else text
    return re.sub(r"//[^\n]*", "", code)


def use_paths(text):
    """Every path a `use` item names (braces expanded), and every path written out in code."""
    for item in re.finditer(r"\buse\s+([^;]+);", text):
        # `as` renames the last segment only: `a::b as c` names a::b.
        unaliased = re.sub(rf"\s+as\s+{IDENT}", "", item.group(1))
        yield from expand(re.sub(r"\s+", "", unaliased))
    for inline in re.finditer(rf"(?<![A-Za-z0-9_:])(?:crate|super)(?:::{IDENT})+", text):
        yield inline.group(0)


def expand(tree):
    brace = tree.find("{")
    if brace < 0:
        yield tree
        return
    prefix, inner = tree[:brace], tree[brace + 1 : tree.rfind("}")]
    depth, start = 0, 0
    for i, ch in enumerate(inner + ","):
        if ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
        elif ch == "," and depth == 0:
            part = inner[start:i]
            start = i + 1
            if part:
                yield from expand(prefix + part)


def resolve(module, path):
    parts = [p for p in path.split("::") if p]
    if not parts:
        return None
    if parts[0] == "crate":
        return parts[1:]
    base = list(module)
    if parts[0] == "self":
        parts = parts[1:]
    elif parts[0] == "super":
        while parts and parts[0] == "super":
            base = base[:-1]
            parts = parts[1:]
    else:
        return None  # another crate
    return base + parts


def main():
    if sys.argv[1] == "--no-sibling-imports":
        root, parent = sys.argv[2], sys.argv[3].split("::")
        sys.exit(1 if sibling_imports(root, parent) else 0)
    if sys.argv[1] == "--all":
        found = [circles_under(root, parent) for root in sys.argv[2:] for parent in parents(root)]
        sys.exit(1 if any(found) else 0)
    parent = sys.argv[2].split("::") if len(sys.argv) > 2 and sys.argv[2] else []
    circles = circles_under(sys.argv[1], parent)
    if not circles:
        print(f"no circle under {'::'.join(parent) or 'the crate root'}")
    sys.exit(1 if circles else 0)


def parents(root):
    """Every module of the crate that has children: the root and each folder."""
    yield []
    for directory, _, _ in os.walk(root):
        rel = os.path.relpath(directory, root)
        if rel != "." and "tests" not in rel.split(os.sep):
            yield rel.split(os.sep)


def imports_under(root, parent):
    """Every import from one child of `parent` to another: (source, target, file, path)."""
    for directory, _, files in os.walk(root):
        if "tests" in os.path.relpath(directory, root).split(os.sep):
            continue
        for name in sorted(files):
            if not name.endswith(".rs") or name == "tests.rs":
                continue
            path = os.path.join(directory, name)
            module = module_of(root, path)
            if module[: len(parent)] != parent or len(module) <= len(parent):
                continue
            source = module[len(parent)]
            text = non_test_source(open(path, encoding="utf-8").read())
            for used in use_paths(text):
                target = resolve(module, used)
                if not target or target[: len(parent)] != parent or len(target) <= len(parent):
                    continue
                child = target[len(parent)]
                if child != source and re.fullmatch(IDENT, child):
                    yield source, child, path, used


def circles_under(root, parent):
    """Prints the circles among `parent`'s children in the crate at `root`; returns them."""
    edges = {}
    for source, child, _, _ in imports_under(root, parent):
        edges.setdefault(source, set()).add(child)
    circles = strongly_connected(edges)
    where = "::".join(parent) or "the crate root"
    for circle in circles:
        print(f"{root}: circle under {where}: {' <-> '.join(sorted(circle))}")
        for a in sorted(circle):
            print(f"  {a} -> {', '.join(sorted(edges.get(a, set()) & circle))}")
    return circles


def child_modules(root, parent):
    """The names of `parent`'s child modules: its files and folders (items are not children)."""
    folder = os.path.join(root, *parent)
    names = set()
    for entry in os.listdir(folder):
        if entry.endswith(".rs") and entry not in ("mod.rs", "tests.rs"):
            names.add(entry[:-3])
        elif os.path.isdir(os.path.join(folder, entry)) and entry != "tests":
            names.add(entry)
    return names


def sibling_imports(root, parent):
    """Prints each arrow from one child module of `parent` to another; returns the arrows."""
    children = child_modules(root, parent)
    arrows = {}
    for source, child, path, used in sorted(imports_under(root, parent)):
        if child in children:
            arrows.setdefault((source, child), []).append(f"{os.path.relpath(path, root)}: {used}")
    where = "::".join(parent)
    for (source, target), uses in sorted(arrows.items()):
        print(f"{root}: {where}::{source} imports its sibling {where}::{target}")
        for use in sorted(set(uses)):
            print(f"  {use}")
    if arrows:
        print(f"{len(arrows)} imports between children of {where} in {root}")
    else:
        print(f"no child of {where} imports another in {root}")
    return arrows


def strongly_connected(edges):
    index, low, stack, on, out = {}, {}, [], set(), []
    nodes = set(edges) | {b for bs in edges.values() for b in bs}

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in edges.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = set()
            while True:
                w = stack.pop()
                on.discard(w)
                group.add(w)
                if w == v:
                    break
            if len(group) > 1:
                out.append(group)

    for v in sorted(nodes):
        if v not in index:
            visit(v)
    return out


if __name__ == "__main__":
    main()
