"""The `lstmgraph` command as a user runs it: in-process through click's runner (`run`), and
as the installed console script where a process of its own is the point (`run_installed`)."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
import tomllib
from pathlib import Path
from typing import Callable

import pytest

import lstmgraph

from conftest import REPO, SPECS, run  # (other CLI test files import run from here)

SCRIPT = Path(sys.executable).with_name("lstmgraph")


#: A guard against a hung command, not a measure of speed: a first run compiles kernels (10-60 s
#: each), and the machine may be loaded.
GUARD_SECONDS = 1800


def run_installed(*args: str) -> subprocess.CompletedProcess:
    """The installed console script in a process of its own, as a user runs it."""
    executable = str(SCRIPT) if SCRIPT.exists() else shutil.which("lstmgraph")
    assert executable, "the lstmgraph console script is not installed (run bash setup.sh)"
    return subprocess.run([executable, *args], capture_output=True, text=True, timeout=GUARD_SECONDS)


def wait_for(condition: Callable[[], bool]) -> None:
    """Poll ``condition`` until it holds (what a test waits for: a file, a process ending),
    failing only after `GUARD_SECONDS`."""
    deadline = time.monotonic() + GUARD_SECONDS
    while not condition():
        assert time.monotonic() < deadline, "gave up waiting after the guard time"
        time.sleep(0.005)


def test_version():
    result = run_installed("--version")
    assert result.returncode == 0 and lstmgraph.__version__ in result.stdout


def _commands() -> list[str]:
    from lstmgraph_cli.main import main
    return sorted(main.commands)


@pytest.mark.parametrize("command", [[]] + [[name] for name in _commands()])
def test_every_command_has_help(command):
    result = run(*command, "--help")
    assert result.returncode == 0 and "Usage:" in result.stdout
    assert "  -h, --help " in result.stdout


def test_options_are_named_as_the_docs_name_them():
    """`--out DIR`, `--steps N`, `--checkpoint-seconds SECONDS` (docs/training.md, docs/sweeps.md),
    not click's type names `DIRECTORY`, `INTEGER RANGE`, `FLOAT RANGE`."""
    for name in _commands():
        text = run(name, "--help").stdout
        for type_name in ("INTEGER", "FLOAT", "DIRECTORY", "TEXT", "PATH"):
            assert type_name not in text, (name, type_name)
    assert "--out DIR " in run("train", "--help").stdout and "--seed N " in run("evaluate", "--help").stdout


def test_the_command_list_shows_each_summary_whole():
    """`lstmgraph --help` once cut every summary at its 45th-odd character ("CERG and timing nets
    (1, 10,..."): each command has a one-line summary of its own that fits an 80-column terminal."""
    listed = run("--help").stdout.split("Commands:\n", 1)[1].splitlines()
    assert [line.split()[0] for line in listed] == _commands()
    for line in listed:
        assert not line.endswith("...") and line.endswith(".") and len(line) <= 80, line


def test_a_page_of_the_docs_cited_in_help_says_where_it_is():
    """A pip user has no docs/ folder: a help text that cites a page says it is in the source.
    `results` is left out: it works on a checkout's docs/ folder, which it names."""
    from lstmgraph_cli.main import main
    cited = 0
    for name in sorted(set(main.commands) - {"results"}):
        text = " ".join(run(name, "--help").stdout.split())
        for page, after in re.findall(r"(docs/[\w/.-]+\.md)(.{0,27})", text):
            assert after.startswith(" in the lstmgraph source"), (name, page, after)
            assert (REPO / page).is_file(), page
            cited += 1
    assert cited >= 9


# Runs the click command in process, then names the heavy modules it imported (last line).
_IMPORTS_SCRIPT = """
import sys
from lstmgraph_cli.main import main
code = main(sys.argv[1:], prog_name="lstmgraph", standalone_mode=False)
print("imported:", ",".join(m for m in ("numba", "llvmlite", "matplotlib") if m in sys.modules))
print("code:", code or 0)
"""


@pytest.mark.parametrize("command, printed", [
    (["--version"], "lstmgraph, version"), (["--help"], "Usage: lstmgraph"),
    (["validate", "{spec}"], "gers2000_cerg: valid"), (["render", "{spec}", "-o", "{out}"], "wrote"),
    (["validate", "gers2000_cerg"], "gers2000_cerg: valid"), (["specs"], "gers2000_cerg")])
def test_version_validate_and_render_import_neither_numba_nor_matplotlib(command, printed, tmp_path):
    args = [arg.format(spec=SPECS / "gers2000_cerg.yaml", out=tmp_path / "net.dot") for arg in command]
    result = subprocess.run([sys.executable, "-c", _IMPORTS_SCRIPT, *args], capture_output=True,
                            text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    *output, imported, code = result.stdout.splitlines()
    assert printed in "\n".join(output) and code == "code: 0", result.stdout
    assert imported == "imported: "


def test_validate_json_reports_the_cerg_count():
    result = run("validate", str(SPECS / "gers2000_cerg.yaml"), "--json")
    assert result.returncode == 0, result.stderr
    summary = json.loads(result.stdout)
    assert summary["parameters"] == 424
    assert summary["execution_order"][-1] == "prediction"


def test_validate_text_lists_order_gradient_and_total():
    result = run("validate", str(SPECS / "gers2002_timing.yaml"))
    assert result.returncode == 0
    assert "parameters: 17" in result.stdout
    assert "memory.forget_gate -> memory.input_gate -> memory.cell_input" in result.stdout
    assert "truncated" in result.stdout and "carries" in result.stdout
    assert "never change" not in result.stdout  # (every weight of a bundled spec learns)


def test_validate_names_the_weights_that_never_learn_and_how_to_make_them(tmp_path):
    (tmp_path / "stack.yaml").write_text(
        "version: 1\ngroups:\n  - {name: x, kind: input, size: 1}\n  - {name: h1, kind: hidden, size: 2}\n"
        "  - {name: h2, kind: hidden, size: 2}\n  - {name: y, kind: output, size: 1}\nconnections:\n"
        "  - {from: x, to: h1}\n  - {from: h1, to: h2, delay: 1}\n  - {from: h2, to: y}\n")
    printed = run("validate", "stack.yaml", cwd=tmp_path)
    assert printed.returncode == 0 and "note: the weights of these connections never change" in printed.stdout
    assert ("x->h1: outputs read their target only through truncated connections under truncated_rtrl; write "
            "gradient: true on the delayed connection on that path, or learn by exact rtrl") in printed.stdout
    assert "no output reads" not in printed.stdout
    assert json.loads(run("validate", "stack.yaml", "--json", cwd=tmp_path).stdout)["unlearned_connections"] == ["x->h1"]
    (tmp_path / "stack.yaml").write_text((tmp_path / "stack.yaml").read_text().replace(
        "delay: 1}", "delay: 1}\n  - {from: x, to: dead}").replace("  - {name: y,", "  - {name: dead, kind: hidden, size: 1}\n  - {name: y,"))
    printed = run("validate", "stack.yaml", cwd=tmp_path)
    assert "; x->dead: no output reads their target, by any path; connect it to an output" in printed.stdout, printed.stdout


def test_misspelt_key_exits_2_with_path_and_line_and_no_traceback(tmp_path):
    spec = tmp_path / "typo.yaml"
    spec.write_text((SPECS / "rnn.yaml").read_text().replace("  - {from: h, to: h, delay: 1",
                                                                "  - {from: h, to: h, dealy: 1"))
    line = spec.read_text().splitlines().index("  - {from: h, to: h, dealy: 1, gradient: true}") + 1
    result = run("validate", str(spec))
    assert result.returncode == 2
    assert f"typo.yaml:{line}:" in result.stderr and "connections[1].dealy" in result.stderr
    assert "did you mean 'delay'?" in result.stderr
    assert "Traceback" not in result.stderr + result.stdout


@pytest.mark.parametrize("text", ["version: 1\ngroups: [\n", "- not a mapping\n", ""])
def test_broken_files_exit_2_without_traceback(tmp_path, text):
    spec = tmp_path / "broken.yaml"
    spec.write_text(text)
    result = run("validate", str(spec))
    assert result.returncode == 2 and "broken.yaml" in result.stderr
    assert "Traceback" not in result.stderr


def test_missing_file_and_bad_usage_exit_2(tmp_path):
    result = run("validate", str(tmp_path / "absent.yaml"))
    assert result.returncode == 2 and "no such file" in result.stderr
    assert run("render", str(SPECS / "rnn.yaml")).returncode == 2  # -o is required
    bad = run("render", str(SPECS / "rnn.yaml"), "-o", str(tmp_path / "x.jpg"))
    assert bad.returncode == 2 and ".svg" in bad.stderr


def test_render_writes_svg_or_explains(tmp_path):
    result = run("render", str(SPECS / "gru.yaml"), "-o", str(tmp_path / "gru.svg"))
    if shutil.which("dot"):
        assert result.returncode == 0, result.stderr
        assert "<svg" in (tmp_path / "gru.svg").read_text()
    else:
        assert result.returncode == 1 and "apt-get install graphviz" in result.stderr
        assert (tmp_path / "gru.dot").exists()


def test_schema_is_json_schema_of_the_spec():
    result = run("schema")
    assert result.returncode == 0
    schema = json.loads(result.stdout)
    assert set(schema["properties"]) >= {"version", "groups", "connections", "init"}
    assert "from" in schema["$defs"]["ConnectionSpec"]["properties"]
    assert schema["additionalProperties"] is False


def test_schema_accepts_every_bundled_spec_and_rejects_a_typo():
    import jsonschema
    import yaml
    schema = json.loads(run("schema").stdout)
    validator = jsonschema.Draft202012Validator(schema)
    for path in SPECS.glob("*.yaml"):
        errors = list(validator.iter_errors(yaml.safe_load(path.read_text())))
        assert not errors, f"{path.name}: {errors[0].message}"
    data = yaml.safe_load((SPECS / "rnn.yaml").read_text())
    data["connections"][0]["dela"] = 1
    assert list(validator.iter_errors(data))


def test_validate_json_reports_errors_as_json(tmp_path):
    spec = tmp_path / "bad.yaml"
    spec.write_text("version: 1\ngroups:\n  - {name: x, kind: inptu, size: 1}\n")
    result = run("validate", str(spec), "--json")
    assert result.returncode == 2
    report = json.loads(result.stdout)
    assert report["valid"] is False
    assert report["errors"][0]["path"] == "groups[0].kind" and report["errors"][0]["line"] == 3


# -- bundled specs by name --------------------------------------------------------------------------

@pytest.mark.parametrize("argument", ["gers2002_timing", "gers2002_timing.yaml", "specs/gers2002_timing.yaml"])
def test_a_bundled_spec_is_taken_by_name_from_any_folder(tmp_path, argument):
    """In a folder without specs/, as after pip install: the name, with or without .yaml, and
    the checkout's relative path all find the bundled file."""
    result = run("validate", argument, "--json", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["parameters"] == 17
    for command in (["gradcheck", argument, "--steps", "3"], ["render", argument, "-o", str(tmp_path / "n.dot")]):
        assert run(*command, cwd=tmp_path).returncode == 0


def test_train_and_run_take_a_bundled_spec_by_name(tmp_path):
    out = tmp_path / "r"
    result = run("train", "gers2002_timing", "--steps", "30", "--engine", "numpy", "--out", str(out), cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    import numpy as np
    np.save(tmp_path / "x.npy", np.zeros((3, 1)))
    ran = run("run", "gers2002_timing", "--weights", str(out / "weights.npz"), "--inputs", str(tmp_path / "x.npy"),
              cwd=tmp_path)
    assert ran.returncode == 0 and len(ran.stdout.split()) == 3, ran.stderr


def test_run_takes_a_run_directory_for_its_spec_and_weights(tmp_path):
    import numpy as np

    out = tmp_path / "r"
    assert run("train", "gers2002_timing", "--steps", "30", "--engine", "numpy", "--out", str(out)).returncode == 0
    np.save(tmp_path / "x.npy", np.array([0.0, 1.0, 0.0]))
    by_spec = run("run", "gers2002_timing", "--weights", str(out / "weights.npz"), "--inputs", str(tmp_path / "x.npy"))
    by_run = run("run", str(out), "--inputs", str(tmp_path / "x.npy"))
    assert by_run.returncode == 0 and by_run.stdout == by_spec.stdout and len(by_run.stdout.split()) == 3
    (out / "weights.npz").unlink()  # an unfinished run: its checkpoint's weights, as evaluate takes them
    assert run("run", str(out), "--inputs", str(tmp_path / "x.npy")).stdout == by_spec.stdout
    no_weights = run("run", "gers2002_timing", "--inputs", str(tmp_path / "x.npy"))
    assert no_weights.returncode == 2 and "give its --weights, or a run directory" in no_weights.stderr
    not_a_run = run("run", str(tmp_path), "--inputs", str(tmp_path / "x.npy"))
    assert not_a_run.returncode == 2 and "is not a run directory (no spec.yaml" in not_a_run.stderr


def test_run_render_and_gradcheck_take_a_data_file_spec_once_its_training_file_is_gone(tmp_path):
    """Before: ``run SPEC --weights`` compiled SPEC as validate does, so a spec trained on a
    `data_file` task could not run forward once its training file was moved (exit 2)."""
    import numpy as np

    inputs = np.random.default_rng(0).uniform(-1, 1, (40, 1))
    np.savez(tmp_path / "d.npz", inputs=inputs, targets=(inputs > 0) * 1.0, starts=np.arange(0, 40, 4))
    np.save(tmp_path / "x.npy", inputs[:3])
    spec = (SPECS / "gers2002_timing.yaml").read_text().split("\ntraining:")[0]
    (tmp_path / "net.yaml").write_text(spec + "\ntraining:\n  learning_rate: 0.1\n  task: {name: data_file, path: d.npz}"
                                              "\n  steps: 20\n")
    assert run("train", "net.yaml", "--out", "r", "--quiet", cwd=tmp_path).returncode == 0
    before = run("run", "net.yaml", "--weights", "r/weights.npz", "--inputs", "x.npy", cwd=tmp_path)
    (tmp_path / "d.npz").unlink()
    after = run("run", "net.yaml", "--weights", "r/weights.npz", "--inputs", "x.npy", cwd=tmp_path)
    assert after.returncode == 0 and after.stdout == before.stdout and len(after.stdout.split()) == 3, after.stderr
    checked = run("validate", "net.yaml", cwd=tmp_path)  # (validate still reads the task's file)
    assert checked.returncode == 2 and "d.npz" in checked.stderr, checked.stderr
    for command in (["render", "net.yaml", "-o", "n.dot"], ["gradcheck", "net.yaml", "--steps", "3"]):
        drawn = run(*command, cwd=tmp_path)  # (neither reads data)
        assert drawn.returncode == 0, (command, drawn.stderr)


def test_a_file_beats_a_bundled_name(tmp_path):
    (tmp_path / "rnn.yaml").write_text((SPECS / "gers2002_timing.yaml").read_text())
    result = run("validate", "rnn.yaml", cwd=tmp_path)
    assert result.returncode == 0 and "gers2002_timing: valid (rnn.yaml)" in result.stdout


def test_a_folder_named_like_a_bundled_spec_does_not_hide_it(tmp_path):
    """After ``train gru --out gru`` the folder ``gru`` is a run directory; ``gru`` still names
    the bundled spec in every command that takes a SPEC (click refused a folder before), and
    `run` takes the run directory (its spec is the bundled one)."""
    (tmp_path / "gru").mkdir()
    trained = run("train", "gru", "--steps", "5", "--engine", "numpy", "--out", "gru", cwd=tmp_path)
    assert trained.returncode == 0, trained.stderr
    import numpy as np
    np.save(tmp_path / "x.npy", np.zeros((3, 4)))
    for command in (["validate", "gru"], ["gradcheck", "gru", "--steps", "3"], ["sweep", "gru", "--keys"],
                    ["run", "gru", "--weights", "gru/weights.npz", "--inputs", "x.npy"]):
        result = run(*command, cwd=tmp_path)
        assert result.returncode == 0, (command, result.stderr)
    assert run("validate", "gru", cwd=tmp_path).stdout.startswith("gru: valid (gru)")


@pytest.mark.parametrize("command", [["validate"], ["train"], ["gradcheck"], ["sweep"]])
def test_a_folder_that_is_no_bundled_spec_is_refused_with_what_to_give(tmp_path, command):
    (tmp_path / "runs").mkdir()
    result = run(*command, "runs", cwd=tmp_path)
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert "runs: is a folder, not a spec file" in result.stderr
    assert "a bundled spec's name ('lstmgraph specs' lists them)" in result.stderr


@pytest.mark.parametrize("argument, close", [
    ("gers2000_cer", "did you mean the bundled spec 'gers2000_cerg' or 'gers2000_cerg_no_shortcut'?"),
    ("spec/gru.yaml", "did you mean the bundled spec 'gru' or 'gru_torch'?"),
    ("timing", "did you mean the bundled spec 'gers2002_timing'?"),
    ("/nowhere/zzzz.yaml", None)])
def test_no_such_file_suggests_the_closest_bundled_specs(tmp_path, argument, close):
    result = run("train", argument, "--steps", "5", cwd=tmp_path)
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert result.stderr.startswith(f"error: {argument}: no such file\n")
    assert "a bundled spec's name ('lstmgraph specs' lists them)" in result.stderr
    assert (close in result.stderr) if close else ("did you mean" not in result.stderr)


def test_a_spec_named_without_its_suffix_or_a_paper_row_given_as_a_spec_is_pointed_to(tmp_path):
    """Before: `train mynet` beside mynet.yaml, and `sweep mynet`, said only "no such file";
    `train hochreiter1997-temporal-order-6a` offered bundled specs, not the row's command."""
    (tmp_path / "mynet.yaml").write_text((SPECS / "gru.yaml").read_text())
    for command in (["train", "mynet"], ["validate", "mynet"], ["sweep", "mynet", "--vary", "learning_rate=0.1"]):
        result = run(*command, cwd=tmp_path)
        assert result.returncode == 2 and "did you mean" in result.stderr and "mynet.yaml" in result.stderr, command
    row = run("train", "hochreiter1997-temporal-order-6a", cwd=tmp_path)
    assert row.returncode == 2 and ("hochreiter1997-temporal-order-6a is a paper row: `lstmgraph reproduce "
                                    "hochreiter1997-temporal-order-6a` runs it") in row.stderr


def test_specs_lists_every_bundled_spec_with_its_compiled_parameter_count():
    listed = json.loads(run("specs", "--json").stdout)
    assert [spec["name"] for spec in listed] == sorted(path.stem for path in SPECS.glob("*.yaml"))
    for spec in listed:
        assert spec["parameters"] == lstmgraph.compile_spec(SPECS / f"{spec['name']}.yaml").n_parameters
        # the description's own figure, where it gives one, is the compiled count
        assert f"({spec['parameters']} weights)" in spec["description"]
    cerg = next(spec for spec in listed if spec["name"] == "gers2000_cerg")
    assert cerg["paper"] == "Gers, Schmidhuber & Cummins 2000" and cerg["task"] == "continual_embedded_reber"
    text = run("specs").stdout
    assert f"{len(listed)} bundled specs" in text
    assert any(line.split()[:2] == ["gers2000_cerg", "424"] for line in text.splitlines())
    assert "seed 0" not in text  # the source documents' names in ../shared are ours, not a reader's


def test_specs_name_prints_that_spec_s_file_as_it_is():
    for name in ("gru", "gru.yaml", "specs/gru.yaml"):
        result = run("specs", name)
        assert result.returncode == 0 and result.stdout == (SPECS / "gru.yaml").read_text(), name
    wrong = run("specs", "gers2000_crg")
    assert wrong.returncode == 2 and "did you mean gers2000_cerg" in wrong.stderr and not wrong.stdout
    assert run("specs", "gru", "--json").returncode == 2


def test_overrides_on_a_spec_without_a_training_section_say_so(tmp_path):
    """Not 'training.learning_rate: missing required key' for a section the spec never had."""
    spec = tmp_path / "spec.json"
    spec.write_text(json.dumps({"version": 1, "groups": [{"name": "x", "kind": "input", "size": 2},
                                                         {"name": "y", "kind": "output", "size": 1}],
                                "connections": [{"from": "x", "to": "y"}]}))
    for options in (["--steps", "100"], ["--seed", "2", "--rule", "rtrl"], []):
        result = run("train", str(spec), *options, "--out", str(tmp_path / "r"))
        assert result.returncode == 2 and "Traceback" not in result.stderr
        assert "training: the spec has no training section" in result.stderr, result.stderr
        assert "learning_rate: ..." in result.stderr and "missing required key" not in result.stderr


def test_gradcheck_exits_1_on_a_planted_gradient_error(monkeypatch):
    """The finite differences' allowance covers their own error, not a wrong gradient: BPTT's
    gradient of one weight off by a relative 1e-4 fails the check and the command."""
    from click.testing import CliRunner

    import lstmgraph.engine.gradcheck as gradcheck_module
    from lstmgraph_cli.main import main
    exact = gradcheck_module.bptt_gradient

    def wrong(*args, **kwargs):
        loss, gradient, state = exact(*args, **kwargs)
        gradient = {name: values.copy() for name, values in gradient.items()}
        gradient["h->class"][0, 0, 0] *= 1 + 1e-4
        return loss, gradient, state

    monkeypatch.setattr(gradcheck_module, "bptt_gradient", wrong)
    result = CliRunner().invoke(main, ["gradcheck", "rnn"])
    assert result.exit_code == 1 and "FAILED" in result.output
    line = next(line for line in result.output.splitlines() if line.startswith("bptt_vs_finite_differences"))
    assert line.endswith("FAILED")


def test_gradcheck_draws_prints_a_json_line_a_seed_and_fails_when_one_draw_fails(monkeypatch):
    """--draws K checks seeds N..N+K-1, a JSON line each; one failing draw fails the command."""
    from click.testing import CliRunner

    import lstmgraph.engine.gradcheck as gradcheck_module
    from lstmgraph_cli.main import main
    result = CliRunner().invoke(main, ["gradcheck", "rnn", "--seed", "4", "--draws", "3", "--json", "--steps", "3"])
    assert result.exit_code == 0, result.output
    reports = [json.loads(line) for line in result.output.splitlines()]
    assert [report["seed"] for report in reports] == [4, 5, 6] and all(report["passed"] for report in reports)
    text = CliRunner().invoke(main, ["gradcheck", "rnn", "--draws", "2", "--steps", "3"]).output
    assert "random weights (seed 0)" in text and "random weights (seed 1)" in text
    exact = gradcheck_module.bptt_gradient
    calls = []

    def wrong_on_the_second_draw(*args, **kwargs):
        loss, gradient, state = exact(*args, **kwargs)
        calls.append(1)
        if len(calls) > 2:  # two BPTT runs a draw: the second draw's on
            gradient = {name: values * (1 + 1e-3) for name, values in gradient.items()}
        return loss, gradient, state

    monkeypatch.setattr(gradcheck_module, "bptt_gradient", wrong_on_the_second_draw)
    result = CliRunner().invoke(main, ["gradcheck", "rnn", "--draws", "2", "--json", "--steps", "3"])
    assert result.exit_code == 1
    assert [json.loads(line)["passed"] for line in result.output.splitlines()] == [True, False]
    calls.clear()
    text = CliRunner().invoke(main, ["gradcheck", "rnn", "--seed", "5", "--draws", "2", "--steps", "3"])
    assert text.exit_code == 1 and text.output.endswith("\n1 of 2 draws failed (seeds 6)\n")


def test_gradcheck_draws_past_the_largest_seed_exit_2():
    from click.testing import CliRunner

    from lstmgraph.limits import MAX_SEED
    from lstmgraph_cli.main import main
    result = CliRunner().invoke(main, ["gradcheck", "rnn", "--seed", str(MAX_SEED), "--draws", "2"])
    assert result.exit_code == 2 and "over the largest seed" in result.output


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full (Linux)")
@pytest.mark.parametrize("args", [("schema",), ("validate", str(SPECS / "gru.yaml"))])
def test_standard_output_on_a_full_disk_exits_2_without_a_traceback(args):
    """Output redirected to a full disk (/dev/full: every write fails with ENOSPC) is said so."""
    executable = str(SCRIPT) if SCRIPT.exists() else shutil.which("lstmgraph")
    with open("/dev/full", "w") as full:
        result = subprocess.run([executable, *args], stdout=full, stderr=subprocess.PIPE, text=True,
                                timeout=GUARD_SECONDS)  # a guard only
    assert result.returncode == 2, result.stderr
    assert result.stderr == ("error: cannot write the standard output: No space left on device "
                             "(redirected to a full disk?)\n")


@pytest.mark.parametrize("command", [["gradcheck"], ["train", "--rule", "rtrl", "--steps", "5"]])
def test_exact_rtrl_on_a_net_too_dense_for_it_exits_2_naming_the_limit(command, tmp_path):
    """A 100-unit fully recurrent net: exact RTRL's program would hold 10^8 multiply-adds a step
    (before: minutes and some 18 GB while it was built)."""
    from click.testing import CliRunner

    import yaml
    from lstmgraph_cli.main import main

    spec = tmp_path / "dense.yaml"
    spec.write_text(yaml.safe_dump({
        "version": 1, "name": "dense",
        "groups": [{"name": "x", "kind": "input", "size": 2},
                   {"name": "h", "kind": "hidden", "size": 100, "activation": "tanh"},
                   {"name": "y", "kind": "output", "size": 1}],
        "connections": [{"from": "x", "to": "h"}, {"from": "h", "to": "h", "delay": 1}, {"from": "h", "to": "y"}],
        "training": {"learning_rule": "truncated_rtrl", "learning_rate": 0.1,
                     "task": {"name": "adding", "length": 20}, "steps": 10}}))
    out = ["--out", str(tmp_path / "run")] if command[0] == "train" else []
    result = CliRunner().invoke(main, [command[0], str(spec), *command[1:], *out])
    assert result.exit_code == 2 and result.exception is None or isinstance(result.exception, SystemExit)
    assert "exact RTRL's traces would need more than 10,000,000 multiply-adds a step" in result.output
    assert "Traceback" not in result.output


def test_a_ctrl_c_in_any_command_exits_130_without_a_traceback(monkeypatch, tmp_path):
    """Ctrl-C (here while `evaluate` judges) ends a command with "interrupted" and 130, as a shell
    reports it, not with click's "Aborted!" and the exit code of a failure (1)."""
    import lstmgraph_cli.evaluate

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(lstmgraph_cli.evaluate, "evaluate_run", interrupted)
    result = run("evaluate", tmp_path)
    assert (result.returncode, result.stdout, result.stderr) == (130, "", "\ninterrupted\n")


# Put first on PYTHONPATH, it makes numpy's import raise KeyboardInterrupt: a Ctrl-C, without
# waiting for one, while the command line imports its heavy modules.
_CTRL_C_ON_NUMPY = """
import sys

class CtrlC:
    def find_spec(self, name, path=None, target=None):
        if name == "numpy":
            raise KeyboardInterrupt

sys.meta_path.insert(0, CtrlC())
"""


@pytest.mark.parametrize("how", ["script", "python -m"])
def test_a_ctrl_c_during_the_imports_exits_130_without_a_traceback(tmp_path, how):
    """A Ctrl-C in a command's first tenths of a second (numpy, numba, networkx, pydantic being
    imported) ends as one later does, from the console script and from `python -m lstmgraph_cli`."""
    (tmp_path / "sitecustomize.py").write_text(_CTRL_C_ON_NUMPY, encoding="utf-8")
    command = [str(SCRIPT)] if how == "script" else [sys.executable, "-m", "lstmgraph_cli"]
    result = subprocess.run([*command, "validate", "gru"], capture_output=True, text=True, timeout=120,
                            env={**os.environ, "PYTHONPATH": str(tmp_path)})
    assert (result.returncode, result.stdout, result.stderr) == (130, "", "\ninterrupted\n"), result.stderr


def test_the_console_scripts_module_imports_nothing_heavy():
    """The module pyproject.toml names as the `lstmgraph` script's imports none of the modules
    whose import a Ctrl-C could interrupt before it handles one (the test above)."""
    target = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]["scripts"]["lstmgraph"]
    module = target.split(":")[0]
    heavy = ("numpy", "numba", "networkx", "pydantic", "click", "yaml", "lstmgraph")
    script = f"import sys, {module}; print(sorted(m for m in {heavy!r} if m in sys.modules))"
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert (result.returncode, result.stdout) == (0, "[]\n"), result.stderr


def test_running_out_of_memory_without_a_message_names_the_limits_and_where_they_are(monkeypatch, tmp_path):
    """numpy's MemoryError says what it could not allocate; a bare one gets the command's own
    message, which cites the limits' page in the source (a pip user has no docs/ folder)."""
    import lstmgraph_cli.evaluate

    def out_of_memory(*args, **kwargs):
        raise MemoryError

    monkeypatch.setattr(lstmgraph_cli.evaluate, "evaluate_run", out_of_memory)
    result = run("evaluate", tmp_path)
    assert (result.returncode, result.stdout) == (2, ""), result.stderr
    assert result.stderr == ("error: not enough memory for this network "
                             "(docs/spec.md in the lstmgraph source, Limits)\n")


def test_a_name_a_suffix_makes_too_long_is_no_such_file_not_a_long_name_error(tmp_path):
    """Before: a 252-character SPEC was reported by its '.yaml' candidate: 'a name in the path is
    longer than the file system allows' of a file never typed."""
    result = run("validate", "x" * 252, cwd=tmp_path)
    assert result.returncode == 2 and f"error: {'x' * 252}: no such file" in result.stderr
    assert "longer than" not in result.stderr
