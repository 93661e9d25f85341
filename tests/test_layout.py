"""The package's layout as the architecture promises it: no import circle among lstmgraph's
modules, and no module of experiments/ over 400 lines."""

from __future__ import annotations

import ast
from pathlib import Path

import networkx as nx

from conftest import REPO

PACKAGE = REPO / "lstmgraph"


def module_name(path: Path) -> str:
    parts = path.relative_to(REPO).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def import_graph() -> nx.DiGraph:
    """Module -> module it imports (anywhere in its text, functions included), lstmgraph's only.
    ``from PACKAGE import NAME`` points at PACKAGE.NAME where that is a module, else at PACKAGE."""
    paths = {module_name(path): path for path in PACKAGE.rglob("*.py")}
    graph = nx.DiGraph()
    graph.add_nodes_from(paths)
    for name, path in paths.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = package
                for _ in range(node.level - 1):
                    base = base.rpartition(".")[0]
                base = f"{base}.{node.module}" if node.level and node.module else (node.module if not node.level
                                                                                     else base)
                targets = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in paths else base for alias in node.names]
            else:
                continue
            graph.add_edges_from((name, target) for target in targets if target in paths and target != name)
    return graph


def test_the_import_graph_is_read_as_written():
    graph = import_graph()
    assert graph.has_edge("lstmgraph.experiments.streams", "lstmgraph.experiments.protocols")
    assert graph.has_edge("lstmgraph.experiments.sequence_driver", "lstmgraph.success")
    assert graph.has_edge("lstmgraph.tasks", "lstmgraph.tasks.builtin")


def test_no_import_circle():
    cycles = list(nx.simple_cycles(import_graph()))
    assert not cycles, "import circles: " + "; ".join(" -> ".join(cycle + cycle[:1]) for cycle in cycles[:5])


def test_no_experiments_module_over_400_lines():
    long = {path.name: count for path in (PACKAGE / "experiments").glob("*.py")
            if (count := len(path.read_text(encoding="utf-8").splitlines())) > 400}
    assert not long, f"modules over 400 lines: {long}"


def test_every_class_and_function_a_package_exports_has_a_docstring_of_its_own():
    """Before: `training.RunDirectory` had none, `training.Summary` and `experiments.Experiment`
    only the signature dataclasses write."""
    import importlib
    import inspect
    packages = ["lstmgraph", "lstmgraph.spec", "lstmgraph.graph", "lstmgraph.plan", "lstmgraph.program",
                "lstmgraph.engine", "lstmgraph.training", "lstmgraph.tasks", "lstmgraph.experiments", "lstmgraph.render"]
    bare = []
    for package in packages:
        module = importlib.import_module(package)
        for name in module.__all__:
            value = getattr(module, name)
            if inspect.isclass(value) or inspect.isfunction(value):
                doc = (value.__doc__ or "").strip()
                if not doc or doc.startswith(f"{value.__name__}("):
                    bare.append(f"{package}.{name}")
    assert bare == []
