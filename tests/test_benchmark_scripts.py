"""The scripts of benchmarks/ still run against today's package: every name they import from
lstmgraph (at any depth, inside functions too) exists, and those with a command line answer
``--help``. Refactors of lstmgraph/experiments moved names that three documented scripts
imported, unnoticed until someone ran them (adding_rate_drop, cerg_suspects, long_test_streams)."""

from __future__ import annotations

import ast
import importlib
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from conftest import REPO

SCRIPTS = sorted((REPO / "benchmarks").glob("*.py"))
#: What a script's own command line sets (its docstring's command): ptx_check compiles with
#: numba-cuda and refuses the simulator conftest.py chooses.
HELP_ENV = {"ptx_check.py": {"NUMBA_ENABLE_CUDASIM": "0"}}


def lstmgraph_imports(path: Path) -> list[tuple[int, str, str | None]]:
    """(line, module, name) of each ``from lstmgraph... import name`` in ``path`` and (line,
    module, None) of each ``import lstmgraph...``, wherever they stand."""
    found: list[tuple[int, str, str | None]] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.ImportFrom) and not node.level and (node.module or "").split(".")[0] == "lstmgraph":
            found += [(node.lineno, node.module, alias.name) for alias in node.names if alias.name != "*"]
        elif isinstance(node, ast.Import):
            found += [(node.lineno, alias.name, None) for alias in node.names
                      if alias.name.split(".")[0] == "lstmgraph"]
    return found


def missing(module: str, name: str | None) -> str | None:
    """Why ``from module import name`` (``import module`` for None) fails, or None."""
    try:
        imported = importlib.import_module(module)
    except ImportError as error:
        return f"{module} does not import ({error})"
    if name is None or hasattr(imported, name):
        return None
    try:  # a submodule not yet imported by its package
        importlib.import_module(f"{module}.{name}")
    except ImportError:
        return f"{module} has no {name}"
    return None


def test_imports_are_found_inside_functions_too():
    imports = lstmgraph_imports(REPO / "benchmarks" / "adding_rate_drop.py")
    assert ("lstmgraph.experiments.counters", "SequenceCounter") in [(module, name) for _, module, name in imports]
    assert ("lstmgraph.experiments.verdict", "wilson") in [(module, name) for _, module, name in imports]


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda path: path.name)
def test_every_lstmgraph_name_a_script_imports_exists(script):
    broken = [f"line {line}: {why}" for line, module, name in lstmgraph_imports(script)
              if (why := missing(module, name))]
    assert not broken, f"{script.name}: " + "; ".join(broken)


def _has_command_line(script: Path) -> bool:
    text = script.read_text(encoding="utf-8")
    return "argparse" in text or "import click" in text or "from click" in text


def _help(script: Path) -> tuple[str, int, str]:
    env = {**os.environ, **HELP_ENV.get(script.name, {})}
    result = subprocess.run([sys.executable, str(script), "--help"], cwd=REPO, env=env, stdin=subprocess.DEVNULL,
                            capture_output=True, text=True, timeout=120)
    return script.name, result.returncode, result.stderr[-2000:]


def test_every_script_with_a_command_line_answers_help():
    """Each ``--help`` in its own interpreter (its module-level imports run), a few at a time:
    about 0.4 s each, 4-6 s for the lot on two cores."""
    scripts = [script for script in SCRIPTS if _has_command_line(script)]
    assert len(scripts) >= 20  # all but compare.py (sys.argv) and trial_cpu.py (no main)
    with ThreadPoolExecutor(max_workers=max(2, os.cpu_count() or 1)) as pool:
        failed = [f"{name} (exit {code}): {stderr}" for name, code, stderr in pool.map(_help, scripts) if code]
    assert not failed, "\n".join(failed)
