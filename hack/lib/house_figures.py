#!/usr/bin/env python3
"""Figures of the shim's house (issue 40), measured the same way on any checkout:

    python3 hack/lib/house_figures.py [REPO_ROOT]

- route areas: the children of apiserver-shim's `routes`, the arrows between them (one child
  importing another) and the floors they stand on (the longest chain of arrows, plus one);
- the walk of a Resource's apply: the controller modules (files) reached by following imports
  from `reconcilers::resource`, and how many of those import a module of the walk back;
- field checks in the shim: `bounded(...)` calls outside berth-api, and calls of berth-api's
  `validate()` (the `Checked` trait).
"""
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from module_cycles import imports_under, module_of, non_test_source, resolve, strongly_connected, use_paths  # noqa: E402


def floors(edges):
    """The longest chain of arrows plus one, circles counted as one room."""
    groups = strongly_connected(edges)
    room = {}
    for i, group in enumerate(groups):
        for node in group:
            room[node] = f"circle{i}"
    dag = {}
    for a, bs in edges.items():
        for b in bs:
            ra, rb = room.get(a, a), room.get(b, b)
            if ra != rb:
                dag.setdefault(ra, set()).add(rb)
    memo = {}

    def height(n):
        if n not in memo:
            memo[n] = 1 + max((height(m) for m in dag.get(n, ())), default=0)
        return memo[n]

    nodes = set(dag) | {b for bs in dag.values() for b in bs}
    return max((height(n) for n in nodes), default=1)


def route_areas(root):
    src = os.path.join(root, "apiserver-shim/src")
    folder = os.path.join(src, "routes")
    areas = {e[:-3] if e.endswith(".rs") else e for e in os.listdir(folder)
             if e not in ("mod.rs", "tests.rs", "tests")}
    edges = {}
    for source, child, _, _ in imports_under(src, ["routes"]):
        if child in areas and source in areas:
            edges.setdefault(source, set()).add(child)
    arrows = sum(len(v) for v in edges.values())
    return len(areas), arrows, floors(edges)


def module_imports(src):
    """Each file module of the crate → the modules (as tuples) its code names."""
    found = {}
    for directory, _, files in os.walk(src):
        if "tests" in os.path.relpath(directory, src).split(os.sep):
            continue
        for name in files:
            if not name.endswith(".rs") or name == "tests.rs":
                continue
            path = os.path.join(directory, name)
            module = tuple(module_of(src, path))
            text = non_test_source(open(path, encoding="utf-8").read())
            targets = set()
            for used in use_paths(text):
                target = resolve(list(module), used)
                if target:
                    targets.add(tuple(target))
            found[module] = targets
    return found


def owning_module(modules, path):
    """The longest prefix of `path` that is a file module."""
    for n in range(len(path), 0, -1):
        if path[:n] in modules:
            return path[:n]
    return None


def resource_walk(root):
    src = os.path.join(root, "controller/src")
    imports = module_imports(src)
    start = [m for m in imports if m[:2] == ("reconcilers", "resource")]
    inside = set(start)
    seen, queue = set(), list(start)
    while queue:
        module = queue.pop()
        for target in imports.get(module, ()):
            owner = owning_module(imports, target)
            if owner and owner not in seen and owner not in inside:
                seen.add(owner)
                queue.append(owner)
    back = sum(1 for m in seen if any(owning_module(imports, t) in inside
                                       for t in imports.get(m, ())))
    return len(seen), back


def field_checks(root):
    bounded = validate = 0
    src = os.path.join(root, "apiserver-shim/src")
    for directory, _, files in os.walk(src):
        for name in files:
            if name.endswith(".rs"):
                text = non_test_source(open(os.path.join(directory, name), encoding="utf-8").read())
                bounded += len(re.findall(r"(?<![A-Za-z0-9_])bounded\(", text))
                validate += len(re.findall(r"\.validate\(\)", text))
    return bounded, validate


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else "."
    areas, arrows, levels = route_areas(root)
    print(f"shim route areas: {areas}, arrows between them: {arrows}, floors: {levels}")
    walked, back = resource_walk(root)
    print(f"a Resource's apply walks {walked} controller modules outside reconcilers::resource; "
          f"{back} of them import it back")
    bounded, validate = field_checks(root)
    print(f"shim field checks: {bounded} bounded(...) calls outside berth-api, "
          f"{validate} calls of berth-api's validate()")


if __name__ == "__main__":
    main()
