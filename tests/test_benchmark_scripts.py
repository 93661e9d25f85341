"""The scripts of benchmarks/ still run against today's package: every name they import from
lstmgraph (at any depth, inside functions too) exists, and those with a command line answer
``--help``. Refactors of lstmgraph/experiments moved names that three documented scripts
imported, unnoticed until someone ran them (adding_rate_drop, cerg_suspects, long_test_streams)."""

from __future__ import annotations

import ast
import importlib
import json
import os
import subprocess
import sys
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


#: One interpreter answers every script's ``--help`` in turn (each run as ``__main__``, as
#: ``python SCRIPT --help`` runs it): its exit code and the end of what it wrote to stderr.
_HELP_ALL = """
import contextlib, io, json, os, runpy, sys, traceback
answers, paths, environment = {}, list(sys.path), dict(os.environ)
for path in sys.argv[1:]:
    sys.argv, sys.path[:] = [path, "--help"], paths  # (each as it starts alone; modules stay imported)
    os.environ.clear()
    os.environ.update(environment)
    stderr = io.StringIO()
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(stderr):
        try:
            runpy.run_path(path, run_name="__main__")
            code = 0
        except SystemExit as stop:
            code = stop.code if isinstance(stop.code, int) else (0 if stop.code is None else 1)
        except BaseException:
            traceback.print_exc()
            code = 1
    answers[path] = [code, stderr.getvalue()[-2000:]]
print(json.dumps(answers))
"""


def _help(scripts: list[Path], env: dict[str, str]) -> list[tuple[str, int, str]]:
    """``SCRIPT --help`` of each script, in one interpreter with ``env`` added to the environment."""
    result = subprocess.run([sys.executable, "-c", _HELP_ALL, *map(str, scripts)], cwd=REPO,
                            env={**os.environ, **env}, stdin=subprocess.DEVNULL, capture_output=True, text=True,
                            timeout=300)
    assert result.returncode == 0, result.stderr[-2000:]
    answers = json.loads(result.stdout.splitlines()[-1])
    return [(Path(path).name, code, stderr) for path, (code, stderr) in answers.items()]


def test_every_script_with_a_command_line_answers_help():
    """Each script's ``--help``, as its command line runs it (its module-level imports run):
    those with the same environment share one interpreter, so an import is paid once, each from
    the interpreter's own sys.path and environment. A module an earlier script imported stays
    imported (a blind spot; the imports of lstmgraph names are checked above, file by file). A
    script that needs its own settings (HELP_ENV) gets an interpreter of its own."""
    scripts = [script for script in SCRIPTS if _has_command_line(script)]
    assert len(scripts) >= 20  # all but compare.py (sys.argv) and trial_cpu.py (no main)
    shared = [script for script in scripts if script.name not in HELP_ENV]
    own = [([script], HELP_ENV[script.name]) for script in scripts if script.name in HELP_ENV]
    answers = [answer for group, env in [(shared, {}), *own] for answer in _help(group, env)]
    assert sorted(name for name, _, _ in answers) == sorted(script.name for script in scripts)
    failed = [f"{name} (exit {code}): {stderr}" for name, code, stderr in answers if code]
    assert not failed, "\n".join(failed)
