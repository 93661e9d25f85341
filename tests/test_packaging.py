"""The wheel: built from a copy of the checkout, installed (not editable) into a fresh virtual
environment, it carries every module and the bundled specs, and its `lstmgraph` command lists
the experiments and validates a bundled spec there, by name too (beside a folder of that name);
it writes nothing into its site-packages (numba's caches of its modules go to the kernel cache)."""

from __future__ import annotations

import ast
import os
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from conftest import REPO, SPECS

# What the build reads: pyproject.toml and the folders its package-dir maps.
SOURCES = ("pyproject.toml", "README.md", "lstmgraph", "cli", "specs")


def _run(*command: str | Path, cwd: Path | None = None) -> subprocess.CompletedProcess:
    result = subprocess.run([str(part) for part in command], capture_output=True, text=True,
                            cwd=cwd, timeout=600)
    assert result.returncode == 0, f"{command}: exit {result.returncode}\n{result.stdout}\n{result.stderr}"
    return result


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    """The wheel of a copy of the checkout (so no build/ folder is left in the repository)."""
    source = tmp_path_factory.mktemp("source")
    for name in SOURCES:
        if (REPO / name).is_dir():
            shutil.copytree(REPO / name, source / name, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy2(REPO / name, source / name)
    out = tmp_path_factory.mktemp("wheel")
    # Build isolation fetches the build backend (setuptools, wheel) from the package index.
    _run(sys.executable, "-m", "pip", "wheel", "--no-deps", "--quiet", "--wheel-dir", out, source)
    (built,) = out.glob("lstmgraph-*.whl")
    return built


@pytest.fixture(scope="module")
def installed(wheel: Path, tmp_path_factory) -> Path:
    """A fresh virtual environment with the wheel installed; the dependencies are read from
    this interpreter's site-packages (a .pth file), so nothing else is downloaded."""
    venv = tmp_path_factory.mktemp("venv")
    _run(sys.executable, "-m", "venv", "--without-pip", venv)
    python = venv / "bin" / "python"
    site = _run(python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])").stdout.strip()
    ours = [path for path in sys.path if path.endswith("site-packages")]
    (Path(site) / "dependencies.pth").write_text("\n".join(ours) + "\n", encoding="utf-8")
    _run(sys.executable, "-m", "pip", "--python", python, "install", "--no-deps", "--no-index",
         "--quiet", wheel)
    return venv


def test_the_wheel_holds_every_module_and_the_bundled_specs(wheel):
    names = set(zipfile.ZipFile(wheel).namelist())
    modules = {f"lstmgraph/{path.relative_to(REPO / 'lstmgraph').as_posix()}"
               for path in (REPO / "lstmgraph").rglob("*.py")}
    modules |= {f"lstmgraph_cli/{path.name}" for path in (REPO / "cli").glob("*.py")}
    assert modules <= names, f"not in the wheel: {sorted(modules - names)}"
    specs = {f"lstmgraph/specs/{path.name}" for path in SPECS.glob("*.yaml")}
    assert len(specs) >= 11 and specs <= names


def test_the_installed_command_lists_experiments_and_validates_a_bundled_spec(installed, tmp_path):
    command = installed / "bin" / "lstmgraph"
    where = _run(installed / "bin" / "python", "-c",
                 "import lstmgraph.files as f; print(f.__file__); print(f.BUNDLED_SPECS)", cwd=tmp_path)
    module, specs = map(Path, where.stdout.split())
    assert module.is_relative_to(installed) and specs.is_relative_to(installed)  # not the checkout
    listing = _run(command, "reproduce", "--list", cwd=tmp_path).stdout
    assert "gers2000-cerg-forget" in listing and "spec gers2000_cerg\n" in listing  # a name train takes
    result = _run(command, "validate", specs / "gers2000_cerg.yaml", "--json", cwd=tmp_path)
    assert '"parameters": 424' in result.stdout


def test_the_installed_library_and_command_take_a_bundled_name_beside_a_folder_of_that_name(installed, tmp_path):
    """Outside the checkout, as a pip user: `compile_spec` takes a bundled spec's name, and a run
    folder named like one (``train gru --out gru``) does not hide it from the command."""
    (tmp_path / "gru").mkdir()
    compiled = _run(installed / "bin" / "python", "-c",
                    "import lstmgraph; print(lstmgraph.compile_spec('gers2000_cerg').n_parameters)", cwd=tmp_path)
    assert compiled.stdout.split() == ["424"]
    assert _run(installed / "bin" / "lstmgraph", "validate", "gru", cwd=tmp_path).stdout.startswith("gru: valid")


def _package_files(installed: Path) -> set[Path]:
    """The installed package's files but Python's own bytecode (which pip writes at install)."""
    (package,) = installed.glob("lib/python*/site-packages/lstmgraph")
    return {path for path in package.rglob("*") if path.is_file() and path.suffix != ".pyc"}


def test_the_installed_library_writes_numba_s_caches_to_the_kernel_cache_not_into_site_packages(installed, tmp_path):
    """numba caches a ``cache=True`` function beside its module where it may write there: an
    installed lstmgraph's compiled task draws once left .nbi and .nbc files in site-packages."""
    before = _package_files(installed)
    environment = {key: value for key, value in os.environ.items() if key != "NUMBA_CACHE_DIR"}
    environment["LSTMGRAPH_CACHE"] = str(tmp_path / "cache")
    script = ("import numpy as np, lstmgraph.tasks as tasks\n"
              "tasks.make_task('adding', {}).sample_many(np.random.default_rng(0), 3)\n")
    result = subprocess.run([str(installed / "bin" / "python"), "-c", script], capture_output=True, text=True,
                            cwd=tmp_path, env=environment, timeout=600)
    assert result.returncode == 0, result.stderr
    assert _package_files(installed) == before, sorted(map(str, _package_files(installed) - before))
    (folder,) = (tmp_path / "cache" / "kernels" / "modules").glob("tasks_*")  # the installed tasks folder's
    assert any(folder.glob("draws.marked_pairs_rows-*.nbi")) and any(folder.glob("pcg64.*.nbi"))


def _caches_compiled_functions(tree: ast.Module) -> bool:
    """Whether a module's code (not text it generates) calls ``njit`` with ``cache=True``."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and getattr(node.func, "attr", getattr(node.func, "id", None)) == "njit":
            if any(word.arg == "cache" and getattr(word.value, "value", None) is True for word in node.keywords):
                return True
    return False


def test_every_module_that_caches_compiled_functions_imports_numba_cache_first():
    """A process may import any one of them first (a worker, a test): each registers the locator."""
    caching = []
    for path in sorted((REPO / "lstmgraph").rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        if not _caches_compiled_functions(tree):
            continue
        caching.append(path.name)
        imports = [node for node in tree.body if isinstance(node, ast.ImportFrom)
                   and any(alias.name == "numba_cache" for alias in node.names)]
        assert imports, f"{path.relative_to(REPO)} compiles with cache=True but does not import numba_cache"
    assert {"pcg64.py", "draws.py", "lanes.py", "stream_driver.py", "sequence_driver.py"} <= set(caching)


#: Modules whose messages name a checkout's docs/ folder, which they work on (`lstmgraph results`).
_ON_A_CHECKOUT = {"lstmgraph/experiments/results_table.py", "lstmgraph/experiments/results_docs.py", "cli/results.py"}


def _texts(tree: ast.Module):
    """The string constants of a module's code, f-strings' pieces included; no docstrings."""
    docstrings = {id(node.body[0].value) for node in ast.walk(tree)
                  if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
                  and node.body and isinstance(node.body[0], ast.Expr) and isinstance(node.body[0].value, ast.Constant)}
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings:
            yield node


def test_a_page_of_the_docs_cited_in_a_message_says_where_it_is():
    """A pip user has no docs/ folder: an error message or help text citing a page says it is in
    the source (the help texts' test is tests/cli/test_commands.py), and the page exists."""
    cited = 0
    for path in sorted([*(REPO / "lstmgraph").rglob("*.py"), *(REPO / "cli").glob("*.py")]):
        name = path.relative_to(REPO).as_posix()
        if name in _ON_A_CHECKOUT:
            continue
        for node in _texts(ast.parse(path.read_text(encoding="utf-8"))):
            for page, after in re.findall(r"(docs/[\w/.-]+\.md)(.{0,24})", node.value):
                assert after.startswith(" in the lstmgraph source"), f"{name}:{node.lineno}: {page}{after}"
                assert (REPO / page).is_file(), f"{name}:{node.lineno}: {page}"
                cited += 1
    assert cited >= 15


def test_the_readme_says_how_to_install_what_these_tests_install():
    """A reader without setup.sh learns `pip install .` and that the installed command takes a
    bundled spec by name in any folder (test_the_installed_library_and_command_take_...)."""
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    install = next(line for line in readme.splitlines() if "`pip install .`" in line)
    assert "`lstmgraph` command" in install and "bundled specs" in install
    assert "by name in any folder, as in `lstmgraph train gers2000_cerg`" in readme
