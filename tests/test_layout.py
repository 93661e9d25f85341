"""The package's layout as the architecture promises it: no import circle among lstmgraph's
modules, and no module over 400 lines but the few `LONG_MODULES` names."""

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


MAX_MODULE_LINES = 400
#: The modules allowed past `MAX_MODULE_LINES`, each with why.
LONG_MODULES = {
    "engine/compiled/interpreter.py": "the interpreter kernel's source template, the code that writes and loads it",
    "engine/compiled/specialised.py": "writes one program's CPU kernel text, with the fixed source it is set in",
    "engine/gpu/source.py": "writes one program's CUDA kernel text, with the fixed source it is set in",
}


def test_no_module_of_the_package_is_over_400_lines_but_the_listed_ones():
    counts = {path.relative_to(PACKAGE).as_posix(): len(path.read_text(encoding="utf-8").splitlines())
              for path in PACKAGE.rglob("*.py")}
    long = {name: count for name, count in counts.items() if count > MAX_MODULE_LINES and name not in LONG_MODULES}
    assert not long, f"modules over {MAX_MODULE_LINES} lines: {long}"
    short = {name: counts.get(name) for name in LONG_MODULES if counts.get(name, 0) <= MAX_MODULE_LINES}
    assert not short, f"LONG_MODULES lists modules not over {MAX_MODULE_LINES} lines: {short}"


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
