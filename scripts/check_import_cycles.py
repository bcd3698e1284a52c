#!/usr/bin/env python3
"""Fail when the product's import graph has a cycle.

The graph is the one grimp builds (the library import-linter uses): every
``import`` statement counts, including those inside functions. Each strongly
connected component with more than one module is printed with one import per
edge, then the script exits 1.

Usage: ``python scripts/check_import_cycles.py [package ...]`` (default: the ``root_packages``
of ``[tool.importlinter]`` in pyproject.toml, the packages ``lint-imports`` checks).
"""

from __future__ import annotations

import sys
import tomllib
from pathlib import Path

import grimp

ROOT = Path(__file__).resolve().parent.parent


def strongly_connected(graph: grimp.ImportGraph) -> list[list[str]]:
    """Tarjan's algorithm over module-level imports; components of two or more modules."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = 0
    for root in sorted(graph.modules):
        if root in index:
            continue
        work = [(root, iter(sorted(graph.find_modules_directly_imported_by(root))))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            for child in children:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append(
                        (child, iter(sorted(graph.find_modules_directly_imported_by(child))))
                    )
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            else:
                work.pop()
                if work:
                    parent = work[-1][0]
                    low[parent] = min(low[parent], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        found.append(sorted(component))
    return found


def main(argv: list[str]) -> int:
    sys.path.insert(0, str(ROOT))
    packages = argv or tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]["root_packages"]
    graph = grimp.build_graph(*packages, cache_dir=None)
    components = strongly_connected(graph)
    if not components:
        print(f"import cycles: none in {', '.join(packages)}")
        return 0
    print(f"import cycles: {len(components)} circle(s)", file=sys.stderr)
    for component in components:
        members = set(component)
        print(f"\n  circle of {len(component)} modules:", file=sys.stderr)
        for module in component:
            for imported in sorted(graph.find_modules_directly_imported_by(module) & members):
                lines = graph.get_import_details(importer=module, imported=imported)
                where = ", ".join(str(d["line_number"]) for d in lines)
                print(f"    {module} -> {imported}  (line {where})", file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
