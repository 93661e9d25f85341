"""The numbers in the docs that drift as the tool changes are held to what the tool does:
README's experiment count and the files `reproduce` writes, every example of docs/api.md
run as a script, its printed lines against the doc's, and the --specs folders that
docs/results.md's commands name."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest
from click.testing import CliRunner

import lstmgraph
from lstmgraph.experiments import EXPERIMENTS
from lstmgraph_cli.main import main

from conftest import REPO, SPECS

README = (REPO / "README.md").read_text(encoding="utf-8")
API_EXAMPLES = re.findall(r"```python\n(.*?)```", (REPO / "docs" / "api.md").read_text(encoding="utf-8"), re.S)


def test_readme_counts_the_experiments():
    (count,) = re.findall(r"names the (\d+) experiments", README)
    assert int(count) == len(EXPERIMENTS)


@pytest.mark.parametrize("path", sorted((REPO / "docs" / "results").glob("*/*.yaml")), ids=lambda path: path.parent.name)
def test_a_specs_folder_of_the_results_holds_a_bundled_net_under_a_row_s_file_name(path):
    """`reproduce ROW --specs docs/results/FOLDER` reads FOLDER/<the row's spec file>: each spec
    there compiles, its file name is one the catalogue's rows read, and it has the weights of
    the bundled spec it names (exact-rtrl: the same net; no-shortcut: the 375-weight one)."""
    plan = lstmgraph.compile_spec(path)
    assert path.stem in {experiment.spec for experiment in EXPERIMENTS.values()}
    assert plan.n_parameters == lstmgraph.compile_spec(SPECS / f"{plan.name}.yaml").n_parameters


def test_readme_lists_the_files_reproduce_writes(tmp_path):
    (row,) = [line for line in README.splitlines() if line.startswith("| `lstmgraph reproduce EXPERIMENT")]
    listed = {name.split("/")[0] for name in re.findall(r"`([^`]+)`", row.split(" writes ", 1)[1].split(" to `DIR`")[0])
              if "." in name or name.endswith("/")}
    out = tmp_path / "msd"
    result = CliRunner().invoke(main, ["reproduce", "gers2002-msd-f10-peephole", "--trials", "1", "--jobs", "1",
                                       "--max-steps", "100", "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert listed == {path.name for path in out.iterdir()}
    assert {path.name for path in (out / "trials" / "0").iterdir()} >= {"spec.yaml", "weights.npz"}


def printed_lines(code: str) -> list[str]:
    """What an example says it prints: the comment on each `print(...)` line and the comment
    lines right after it (stripped, as the doc indents them)."""
    lines, after_print = [], False
    for line in code.splitlines():
        stripped = line.strip()
        if stripped.startswith("#"):
            if after_print:
                lines.append(stripped[1:].strip())
            continue
        after_print = stripped.startswith("print(")
        if after_print and "  # " in line:
            lines.append(line.split("  # ", 1)[1].strip())
    return lines


def test_printed_lines_are_read_from_comments():
    code = 'x = 1  # not output\nprint(x)  # 1\nprint("a\\nb")\n# a\n#   b\n\n# a remark\n'
    assert printed_lines(code) == ["1", "a", "b"]


@pytest.mark.parametrize("index", range(len(API_EXAMPLES)))
def test_api_examples_print_what_the_doc_says(index, tmp_path):
    script = tmp_path / f"example_{index}.py"
    script.write_text(API_EXAMPLES[index], encoding="utf-8")
    result = subprocess.run([sys.executable, str(script)], cwd=REPO, capture_output=True, text=True,
                            timeout=600)
    assert result.returncode == 0, result.stderr
    assert [line.strip() for line in result.stdout.splitlines()] == printed_lines(API_EXAMPLES[index])
