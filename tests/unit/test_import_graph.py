"""No import circle in devicewatch or workloads, imports inside functions included.

import-linter's layers keep the top-level packages in one direction, but not the modules
inside one layer (``integrations``, ``tui``), and an import written inside a function (to
dodge a circle at import time) still makes one: each module needs the other to work. This
builds the graph from the source with ``ast``, every ``import`` statement wherever it is, and
finds its strongly connected components.

    python tests/unit/test_import_graph.py [ROOT]   # modules, edges and circles of a tree
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("devicewatch", "workloads")


def modules(root: Path) -> dict[str, Path]:
    """Every module of PACKAGES under ROOT by dotted name (a package by its own name)."""
    found = {}
    for package in PACKAGES:
        for path in sorted((root / package).rglob("*.py")):
            parts = list(path.relative_to(root).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            found[".".join(parts)] = path
    return found


def _resolve(name: str, known: dict[str, Path]) -> str | None:
    """The module NAME names, or the nearest package above it that is ours."""
    while name:
        if name in known:
            return name
        name = name.rpartition(".")[0]
    return None


def imports(module: str, path: Path, known: dict[str, Path]) -> set[str]:
    """The modules of ours that MODULE imports, at any depth of its code."""
    is_package = path.name == "__init__.py"
    package = module if is_package else module.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")
                anchor = anchor[: len(anchor) - (node.level - 1)]
                base = ".".join(anchor + ([base] if base else []))
            # ``from pkg import mod`` imports the module pkg.mod; ``from mod import name`` mod.
            names = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in known else base for alias in node.names]
        else:
            continue
        for name in names:
            target = _resolve(name, known)
            if target is not None and target != module:
                found.add(target)
    return found


def graph(root: Path = ROOT) -> dict[str, set[str]]:
    known = modules(root)
    return {module: imports(module, path, known) for module, path in known.items()}


def circles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's, iteratively)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for start in sorted(edges):
        if start in index:
            continue
        work = [(start, iter(sorted(edges[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(edges.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
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


def test_the_checker_finds_a_circle_made_inside_a_function(tmp_path):
    package = tmp_path / "devicewatch"
    package.mkdir()
    (tmp_path / "workloads").mkdir()
    (package / "__init__.py").write_text("")
    (package / "a.py").write_text("from . import b\n")
    (package / "b.py").write_text("def f():\n    from .c import thing\n")
    (package / "c.py").write_text("import devicewatch.a\n")
    (package / "d.py").write_text("from devicewatch import a\n")
    assert circles(graph(tmp_path)) == [["devicewatch.a", "devicewatch.b", "devicewatch.c"]]


def test_no_import_circle_in_devicewatch_or_workloads():
    edges = graph()
    assert len(edges) > 100  # the whole tree was read
    assert circles(edges) == []


if __name__ == "__main__":
    tree = Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT
    edges = graph(tree)
    found = circles(edges)
    print(f"{len(edges)} modules, {sum(map(len, edges.values()))} imports, {len(found)} circles")
    for component in found:
        print(f"  circle of {len(component)}: {', '.join(component)}")
