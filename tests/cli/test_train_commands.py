"""`lstmgraph train`, `run` and `gradcheck` as a user runs them, including kill and resume."""

from __future__ import annotations

import json
import signal
import subprocess

import numpy as np
import yaml

from conftest import EXPLODING, SPECS
from test_commands import SCRIPT, run, wait_for


def _short_spec(tmp_path, name: str = "gers2000_cerg", **training) -> str:
    data = yaml.safe_load((SPECS / f"{name}.yaml").read_text())
    data["training"].update(training)
    path = tmp_path / f"{name}.yaml"
    path.write_text(yaml.safe_dump(data))
    return str(path)


def test_train_writes_a_complete_run_directory(tmp_path):
    spec = _short_spec(tmp_path, "gers2002_timing", steps=400, checkpoint_every=100)
    out = tmp_path / "run"
    result = run("train", spec, "--out", str(out))
    assert result.returncode == 0, result.stderr
    assert "trained gers2002_timing: 400 steps" in result.stdout
    for name in ("spec.yaml", "run.json", "metrics.jsonl", "metrics.csv", "checkpoint.npz",
                 "weights.npz", "summary.json"):
        assert (out / name).exists(), name
    rows = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    assert rows[-1]["step"] == 400 and len((out / "metrics.csv").read_text().splitlines()) == len(rows) + 1
    resolved = yaml.safe_load((out / "spec.yaml").read_text())
    assert resolved["training"]["task"] == {"name": "periodic_function", "shape": "cosine", "period": 10}
    again = run("train", spec, "--out", str(out))
    assert again.returncode == 2 and "--resume" in again.stderr


def test_a_killed_run_resumes_bit_identical(tmp_path):
    # The compiled engine (the default here) trains the CERG net at tens of thousands of steps
    # per second: a long run with early checkpoints leaves time to kill it in the middle.
    spec = _short_spec(tmp_path, steps=100_000, checkpoint_every=2000)
    whole, broken = tmp_path / "whole", tmp_path / "broken"
    assert run("train", spec, "--out", str(whole), "--quiet").returncode == 0
    assert json.loads((whole / "run.json").read_text())["engine"] == "compiled"
    process = subprocess.Popen([str(SCRIPT), "train", spec, "--out", str(broken), "--quiet"])
    checkpoint = broken / "checkpoint.npz"
    wait_for(lambda: checkpoint.exists() or process.poll() is not None)
    first = checkpoint.stat().st_ino
    # Kill once a later checkpoint has replaced the first (a rename: a new inode), with rows
    # appended since: whatever the machine's speed, about 48 of 50 checkpoints are still to come.
    wait_for(lambda: checkpoint.stat().st_ino != first or process.poll() is not None)
    process.send_signal(signal.SIGKILL)
    process.wait()
    assert not (broken / "weights.npz").exists(), "the run finished before it could be killed"
    resumed = run("train", "--resume", str(broken), "--quiet")
    assert resumed.returncode == 0, resumed.stderr
    _assert_same_results(whole, broken)


def _assert_same_results(a_dir, b_dir) -> None:
    with np.load(a_dir / "weights.npz") as a, np.load(b_dir / "weights.npz") as b:
        assert sorted(a.files) == sorted(b.files)
        for name in a.files:
            if name != "__meta__":
                assert np.array_equal(a[name], b[name]), name
    for name in ("metrics.csv", "metrics.jsonl"):
        assert (a_dir / name).read_bytes() == (b_dir / name).read_bytes(), name


def test_the_numpy_engine_trains_and_resumes_with_the_engine_it_started_with(tmp_path):
    spec = _short_spec(tmp_path, "gers2002_timing", steps=800, checkpoint_every=100)
    whole, part = tmp_path / "whole", tmp_path / "part"
    result = run("train", spec, "--engine", "numpy", "--out", str(whole))
    assert result.returncode == 0, result.stderr
    assert "(stopped by steps; numpy engine)" in result.stdout
    assert json.loads((whole / "summary.json").read_text())["engine"] == "numpy"
    assert run("train", spec, "--engine", "numpy", "--steps", "400", "--out", str(part),
               "--quiet").returncode == 0
    # Lengthen the finished run and continue it: it goes on with the engine in run.json, and
    # with numpy where run.json names none (runs from before there was a choice).
    resolved = yaml.safe_load((part / "spec.yaml").read_text())
    resolved["training"]["steps"] = 800
    (part / "spec.yaml").write_text(yaml.safe_dump(resolved, sort_keys=False))
    info = json.loads((part / "run.json").read_text())
    assert info.pop("engine") == "numpy"
    (part / "run.json").write_text(json.dumps(info))
    assert run("train", "--resume", str(part), "--quiet").returncode == 0
    assert json.loads((part / "summary.json").read_text())["engine"] == "numpy"
    _assert_same_results(whole, part)


def test_engine_choice_is_explained(tmp_path):
    spec = _short_spec(tmp_path, "rnn", steps=30, learning_rule="rtrl", update="sequence")
    result = run("train", spec, "--out", str(tmp_path / "auto"))
    assert result.returncode == 0, result.stderr
    assert "note: training with the numpy engine: the compiled engine updates RTRL online only" in result.stderr
    refused = run("train", spec, "--engine", "compiled", "--out", str(tmp_path / "compiled"))
    assert refused.returncode == 2
    assert "error: the compiled engine cannot train this spec" in refused.stderr
    assert "Traceback" not in refused.stderr
    assert run("train", "--resume", str(tmp_path / "auto"), "--engine", "numpy").returncode == 2


def test_resume_refuses_extra_options_and_empty_directories(tmp_path):
    assert run("train", "--resume", str(tmp_path), "--steps", "5").returncode == 2
    result = run("train", "--resume", str(tmp_path))
    assert result.returncode == 2 and "holds no run" in result.stderr


def test_a_spec_without_a_name_is_named_after_its_file_in_its_run_and_resumes(tmp_path):
    """Before: the run's spec.yaml had no name, so read back it was called 'spec' (its own
    file's stem): resume refused the run's own checkpoint (its network 'my_net'), and evaluate
    and plot titled the run 'spec'. The README's spec has no name."""
    data = yaml.safe_load((SPECS / "gers2002_timing.yaml").read_text())
    del data["name"]
    data["training"].update(steps=40, checkpoint_every=20)
    (tmp_path / "my net.yaml").write_text(yaml.safe_dump(data))
    out = tmp_path / "run"
    assert run("train", str(tmp_path / "my net.yaml"), "--out", str(out), "--quiet").returncode == 0
    resolved = yaml.safe_load((out / "spec.yaml").read_text())
    assert resolved["name"] == "my_net", resolved  # (a file's stem made a name: validate accepts it)
    resolved["training"]["steps"] = 80
    (out / "spec.yaml").write_text(yaml.safe_dump(resolved, sort_keys=False))
    resumed = run("train", "--resume", str(out), "--quiet")
    assert resumed.returncode == 0, resumed.stderr
    steps = json.loads((out / "summary.json").read_text())["steps"]
    assert steps >= 80
    judged = run("evaluate", str(out), "--sequences", "2")
    assert judged.returncode == 0 and f"{out}: my_net, {steps} steps trained" in judged.stdout, judged.stdout


def test_a_run_an_older_lstmgraph_started_without_a_name_in_its_spec_yaml_resumes(tmp_path):
    """Such a run's spec.yaml read back as 'spec', its checkpoint 'mynet': run.json's spec names it."""
    import dataclasses

    import lstmgraph
    from lstmgraph.training import start_run

    data = yaml.safe_load((SPECS / "gers2002_timing.yaml").read_text())
    del data["name"]
    data["training"].update(steps=40, checkpoint_every=20)
    (tmp_path / "mynet.yaml").write_text(yaml.safe_dump(data))
    plan = lstmgraph.compile_spec(tmp_path / "mynet.yaml")
    older = {key: value for key, value in plan.resolved_spec.items() if key != "name"}  # (as written before)
    out = tmp_path / "run"
    start_run(dataclasses.replace(plan, resolved_json=json.dumps(older)), out, spec=str(tmp_path / "mynet.yaml")).train()
    assert "name" not in yaml.safe_load((out / "spec.yaml").read_text())
    resolved = yaml.safe_load((out / "spec.yaml").read_text())
    resolved["training"]["steps"] = 80
    (out / "spec.yaml").write_text(yaml.safe_dump(resolved, sort_keys=False))
    resumed = run("train", "--resume", str(out), "--quiet")
    assert resumed.returncode == 0, resumed.stderr
    judged = run("evaluate", str(out), "--sequences", "2")  # (named so by evaluate and plot too)
    assert judged.returncode == 0 and f"{out}: mynet, " in judged.stdout, judged.stdout
    built = lstmgraph.compile_plan(lstmgraph.spec_from_data(data))  # (built in Python: it was 'network')
    older = {key: value for key, value in built.resolved_spec.items() if key != "name"}
    start_run(dataclasses.replace(built, resolved_json=json.dumps(older)), tmp_path / "built").train()
    assert json.loads((tmp_path / "built" / "run.json").read_text())["spec"] == "<dict>"
    (tmp_path / "built" / "spec.yaml").write_text((tmp_path / "built" / "spec.yaml").read_text().replace(
        "steps: 40", "steps: 80"))
    resumed = run("train", "--resume", str(tmp_path / "built"), "--quiet")
    assert resumed.returncode == 0, resumed.stderr


def test_a_run_with_no_checkpoint_resumes_from_step_0_to_the_same_weights(tmp_path):
    spec, out = _short_spec(tmp_path, steps=100), tmp_path / "run"
    assert run("train", spec, "--out", str(out), "--quiet").returncode == 0
    weights = (out / "weights.npz").read_bytes()
    for name in ("checkpoint.npz", "weights.npz", "summary.json"):  # as a run killed before its first checkpoint
        (out / name).unlink()
    again = run("train", spec, "--out", str(out))
    assert again.returncode == 2 and f"continue it with --resume {out}" in again.stderr, again.stderr
    resumed = run("train", "--resume", str(out), "--quiet")
    assert resumed.returncode == 0, resumed.stderr
    assert (out / "weights.npz").read_bytes() == weights


def test_divergence_exits_1_naming_the_step(tmp_path):
    spec = tmp_path / "explode.yaml"
    spec.write_text(yaml.safe_dump(EXPLODING))
    result = run("train", str(spec), "--out", str(tmp_path / "run"), "--quiet")
    assert result.returncode == 1
    assert "training diverged: non-finite values at step" in result.stderr
    assert "Traceback" not in result.stderr


def test_spec_without_training_section_is_a_spec_error(tmp_path):
    spec = tmp_path / "plain.yaml"
    data = yaml.safe_load((SPECS / "rnn.yaml").read_text())
    del data["training"]
    spec.write_text(yaml.safe_dump(data))
    result = run("train", str(spec), "--out", str(tmp_path / "run"))
    assert result.returncode == 2 and "training: the spec has no training section" in result.stderr


def test_unknown_task_option_is_located(tmp_path):
    spec = _short_spec(tmp_path, "hochreiter1997_adding", task={"name": "adding", "lenght": 100})
    result = run("train", spec, "--out", str(tmp_path / "run"))
    assert result.returncode == 2
    assert "training.task" in result.stderr and "lenght" in result.stderr


def test_run_prints_outputs_and_records_signals(tmp_path):
    spec = _short_spec(tmp_path, "gers2002_timing", steps=200, checkpoint_every=100)
    assert run("train", spec, "--out", str(tmp_path / "run"), "--quiet").returncode == 0
    np.save(tmp_path / "x.npy", np.array([[1.0], [0.0], [0.0], [1.0]]))
    result = run("run", spec, "--weights", str(tmp_path / "run" / "weights.npz"),
                 "--inputs", str(tmp_path / "x.npy"), "--record", str(tmp_path / "rec.npz"))
    assert result.returncode == 0, result.stderr
    outputs = [float(line) for line in result.stdout.split()]
    assert len(outputs) == 4 and all(0 < value < 1 for value in outputs)
    with np.load(tmp_path / "rec.npz") as record:
        assert record["memory.state"].shape == (4, 1)
        np.testing.assert_allclose(record["target"][:, 0], outputs, rtol=1e-9)
    bad = run("run", spec, "--weights", str(tmp_path / "x.npy"), "--inputs", str(tmp_path / "x.npy"))
    assert bad.returncode == 2 and "Traceback" not in bad.stderr


def test_run_refuses_an_input_too_long_to_keep_before_running_it(tmp_path):
    """Every step keeps all of the network's slot values: 500,000 steps of the GRU would keep
    4.6 GiB, refused naming the input file (exit 2) as it is read, not run until memory runs out."""
    spec = str(SPECS / "gru.yaml")
    assert run("train", spec, "--steps", "8", "--out", str(tmp_path / "run"), "--quiet").returncode == 0
    np.save(tmp_path / "long.npy", np.zeros((500_000, 4)))
    result = run("run", spec, "--weights", str(tmp_path / "run" / "weights.npz"),
                 "--inputs", str(tmp_path / "long.npy"))
    assert result.returncode == 2 and result.stdout == "", result.stderr
    assert result.stderr.startswith(f"error: {tmp_path / 'long.npy'}: more than 430,530 rows (steps); a forward "
                                    "run of the network keeps at most 4 GiB of values")


def test_gradcheck_json_and_text():
    result = run("gradcheck", str(SPECS / "gers2000_cerg.yaml"), "--json")
    assert result.returncode == 0
    report = json.loads(result.stdout)
    assert report["max_rel_error"] < 1e-6 and report["passed"]
    text = run("gradcheck", str(SPECS / "gru.yaml"))
    assert text.returncode == 0 and "truncated_rtrl_vs_bptt" in text.stdout


def test_gradcheck_exits_1_above_tolerance(monkeypatch):
    from click.testing import CliRunner

    import lstmgraph.engine.gradcheck as gradcheck_module
    from lstmgraph_cli.main import main
    monkeypatch.setitem(gradcheck_module.TOLERANCES, "rtrl_vs_bptt", -1.0)  # no difference passes
    result = CliRunner().invoke(main, ["gradcheck", str(SPECS / "rnn.yaml")])
    assert result.exit_code == 1 and "FAILED" in result.output


def test_gradcheck_json_prints_nothing_on_stdout_for_a_bad_spec(tmp_path):
    """As every command's --json but validate's (whose report says whether a spec is valid): a
    spec error goes to stderr alone, exit 2, so stdout never holds an object that is no report."""
    bad = tmp_path / "bad.yaml"
    bad.write_text("version: 1\ngroups:\n  - {name: x, kind: inptu, size: 1}\n")
    for spec, said in ((bad, "groups[0].kind"), (tmp_path / "missing.yaml", "missing.yaml")):
        result = run("gradcheck", spec, "--json")
        assert (result.returncode, result.stdout) == (2, ""), result.stdout
        assert result.stderr.startswith("error: ") and said in result.stderr, result.stderr


def test_an_unknown_kernel_in_the_environment_is_a_usage_error(tmp_path):
    from click.testing import CliRunner
    from cli.main import main
    result = CliRunner().invoke(main, ["train", str(SPECS / "gers2002_timing.yaml"), "--steps", "10", "--out",
                                       str(tmp_path / "run")], env={"LSTMGRAPH_KERNEL": "fast"})
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert "LSTMGRAPH_KERNEL must be one of auto, interpreter, specialised, not 'fast'" in result.output
    assert not (tmp_path / "run").exists()


def test_a_run_logged_to_a_file_shows_its_progress_in_lines(tmp_path):
    """Standard error not a terminal (a log file): a line at each tenth of the steps, not nothing."""
    result = run("train", SPECS / "gers2002_timing.yaml", "--steps", "2000", "--out", tmp_path / "run")
    assert result.returncode == 0, result.stderr
    lines = [line for line in result.stderr.splitlines() if line.startswith("training gers2002_timing: ")]
    assert len(lines) == 10 and lines[0].startswith("training gers2002_timing: 200/2,000 steps, loss per step ")
    assert lines[-1].startswith("training gers2002_timing: 2,000/2,000 steps")
    assert "training" not in run("train", SPECS / "gers2002_timing.yaml", "--steps", "2000", "--quiet",
                                 "--out", tmp_path / "quiet").stderr


def test_a_ctrl_c_says_how_to_resume_and_exits_130(tmp_path, monkeypatch):
    """Not click's bare "Aborted!" and exit code 1: the run directory and the command that continues it."""
    from lstmgraph.training.trainer import Trainer

    trained = Trainer.run

    def stopped(self, *args, **kwargs):  # the Ctrl-C after the run's last checkpoint
        trained(self, *args, **kwargs)
        raise KeyboardInterrupt

    monkeypatch.setattr(Trainer, "run", stopped)
    out = tmp_path / "run"
    result = run("train", "gers2002_timing", "--steps", "200", "--out", out)
    assert result.returncode == 130 and "Traceback" not in result.stderr and "Aborted" not in result.stderr
    assert result.stderr.endswith(f"\ninterrupted: continue from its last checkpoint with lstmgraph train "
                                  f"--resume {out}\n"), result.stderr
    assert (out / "checkpoint.npz").exists() and not (out / "weights.npz").exists()


def test_a_sigterm_stops_a_run_as_ctrl_c_does_saying_how_to_resume(tmp_path):
    """A batch scheduler's SIGTERM (or `kill`) ended a run with exit 143 and no word."""
    spec = _short_spec(tmp_path, steps=2_000_000, checkpoint_every=2000)
    out = tmp_path / "run"
    process = subprocess.Popen([str(SCRIPT), "train", spec, "--out", str(out), "--quiet"], stderr=subprocess.PIPE,
                               text=True)
    wait_for(lambda: (out / "checkpoint.npz").exists() or process.poll() is not None)
    process.send_signal(signal.SIGTERM)
    _, stderr = process.communicate(timeout=600)
    assert process.returncode == 143 and "Traceback" not in stderr, stderr
    assert stderr.endswith(f"\ninterrupted: continue from its last checkpoint with lstmgraph train --resume {out}\n")
    assert not (out / "weights.npz").exists()


def test_a_run_of_one_sequence_says_sequence_not_1_sequences(tmp_path):
    result = run("train", "gers2002_timing", "--steps", "50", "--quiet", "--out", tmp_path / "quiet")
    assert (result.returncode, result.stdout, result.stderr) == (0, "", "")
    lines = run("train", "gers2002_timing", "--steps", "50", "--out", tmp_path / "run").stdout.splitlines()
    assert lines[0] == "trained gers2002_timing: 100 steps, 1 sequence (stopped by steps; compiled engine)"
    assert lines[1].startswith("mean loss per step: first sequence 0.06") and ", last 0.06" in lines[1]


def test_train_json_prints_the_summary_alone_on_stdout(tmp_path):
    """As validate, gradcheck, evaluate, reproduce and sweep: one JSON object, no progress lines."""
    out = tmp_path / "run"
    result = run("train", "gers2002_timing", "--steps", "200", "--out", out, "--json")
    assert result.returncode == 0 and "training" not in result.stderr, result.stderr
    assert json.loads(result.stdout) == json.loads((out / "summary.json").read_text())
    assert json.loads(result.stdout)["steps"] == 200
    (out / "weights.npz").unlink()
    resumed = run("train", "--resume", out, "--json")  # (its checkpoint is the run's end: it writes the end again)
    assert resumed.returncode == 0, resumed.stderr
    assert json.loads(resumed.stdout)["steps"] == 200


def test_a_spec_refused_for_an_option_or_for_want_of_training_is_not_called_invalid(tmp_path):
    """`validate` passes both specs; the headline says what stops the run instead."""
    spec = _short_spec(tmp_path, "gers2002_timing", steps=10)
    data = tmp_path / "wide.npz"
    np.savez(data, inputs=np.zeros((5, 1)), targets=np.zeros((5, 2)))
    result = run("train", spec, "--data", str(data), "--out", str(tmp_path / "a"))
    assert result.returncode == 2
    assert result.stderr.startswith(f"error: {spec} cannot run with --data {data} (1 problem)\n")
    untrained = tmp_path / "untrained.yaml"
    document = yaml.safe_load(open(spec))
    del document["training"]
    untrained.write_text(yaml.safe_dump(document))
    assert run("validate", str(untrained)).returncode == 0
    result = run("train", str(untrained), "--out", str(tmp_path / "b"))
    assert result.returncode == 2
    assert result.stderr.startswith(f"error: {untrained} is a valid spec, but cannot be trained (1 problem)\n")
    result = run("train", spec, "--epochs", "3", "--out", str(tmp_path / "c"))  # (set inside the section)
    assert result.returncode == 2 and result.stderr.startswith(f"error: {spec} cannot run with --epochs 3 (1 problem)\n")
    document["training"] = {"learning_rate": 0.1, "task": {"name": "periodic_function"}}  # (no steps: no length)
    untrained.write_text(yaml.safe_dump(document))
    result = run("train", str(untrained), "--learning-rate", "0.2", "--out", str(tmp_path / "d"))  # (not the cause)
    assert result.returncode == 2
    assert result.stderr.startswith(f"error: {untrained} is a valid spec, but cannot be trained (1 problem)\n")
