"""`lstmgraph sweep` as a user runs it: refusals by name, a run, its rerun, its status."""

from __future__ import annotations

import json
import shutil

import pytest

from conftest import SPECS, with_a_ctrl_c
from test_commands import run

ROW = "gers2002-msd-f10-peephole"
STEPS = "3000"


def _trials(path) -> list[dict]:
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    for row in rows:
        row.pop("seconds")
    return sorted(rows, key=lambda row: row["seed"])


@pytest.mark.parametrize("arguments, named", [
    (["--vary", "no_such_key=1,2"], "no_such_key"),
    (["--vary", "learning_rat=1,2"], "did you mean learning_rate"),
    (["--vary", "learning_rate=0,1"], "learning_rate takes a finite number > 0, not 0"),
    (["--vary", "momentum=0.9,1"], "momentum takes a finite number >= 0 and < 1, not 1"),
    (["--vary", "variant.forget_open=yes"], "variant.forget_open takes true or false"),
    (["--vary", "task.delays=[0,1],7"], "task.delays"),
    (["--vary", "protocol.test_streams=0,1"], "protocol.test_streams"),
    (["--vary", "init.bias->memory.forget_gate={\"uniform\":-1}"], "init.bias->memory.forget_gate"),
    (["--vary", "learning_rate"], "--vary takes KEY=V1,V2"),
    (["--vary", "learning_rate=1,1"], "learning_rate: the value 1 twice"),
    (["--vary", "learning_rate=1e-5", "--vary", "learning_rate=1e-4"], "learning_rate: given twice"),
    ([], "name at least one --vary"),
    (["--vary", "learning_rate=1e-5", "--trials", "0"], "--trials"),
])
def test_bad_input_exits_2_naming_the_key_or_option_without_a_traceback(arguments, named):
    result = run("sweep", ROW, *arguments)
    assert result.returncode == 2, result.stdout + result.stderr
    assert named in result.stderr and "Traceback" not in result.stderr


def test_a_key_the_row_s_net_lacks_exits_2_naming_it():
    result = run("sweep", "hochreiter1997-erg-3x2-lr0.5", "--vary", "forget_gate_bias=1")  # no forget gate
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert "forget_gate_bias: the row's net has no bias -> forget_gate" in result.stderr


def test_a_subject_that_is_nothing_or_a_spec_without_a_task_exits_2_naming_it(tmp_path):
    result = run("sweep", "gers2002-gts-peepholes", "--vary", "learning_rate=1e-5")
    assert result.returncode == 2 and "did you mean gers2002-gts-peephole" in result.stderr
    broken = tmp_path / "broken.yaml"
    broken.write_text("version: 1\ngroups: [")
    result = run("sweep", str(broken), "--vary", "learning_rate=1e-5")
    assert result.returncode == 2 and "broken.yaml" in result.stderr and "Traceback" not in result.stderr


def test_a_setting_equal_to_the_row_runs_reproduce_s_trials_and_a_rerun_changes_nothing(tmp_path):
    reproduced, swept = tmp_path / "reproduce", tmp_path / "sweep"
    result = run("reproduce", ROW, "--trials", "2", "--jobs", "1", "--max-steps", STEPS, "--out", str(reproduced))
    assert result.returncode == 0, result.stderr
    command = ["sweep", ROW, "--vary", "learning_rate=1e-5,1e-4", "--trials", "2", "--jobs", "1", "--max-steps",
               STEPS, "--out", str(swept)]
    result = run(*command)
    assert result.returncode == 0, result.stderr
    assert "setting 0: learning_rate=1e-05 (the own setting: the paired tests' reference)" in result.stdout
    assert "0 (own)" in result.stdout[result.stdout.index("p speed"):]
    assert f"each trial capped at {int(STEPS):,} training steps (--max-steps)" in result.stdout
    assert _trials(swept / "settings" / "0" / "trials.jsonl") == _trials(reproduced / "trials.jsonl")
    assert _trials(swept / "settings" / "1" / "trials.jsonl") != _trials(reproduced / "trials.jsonl")
    document = json.loads((swept / "sweep.json").read_text())
    assert [s["values"] for s in document["settings"]] == [{"learning_rate": 1e-5}, {"learning_rate": 1e-4}]
    assert document["settings"][1]["paired_with_own"]["pairs"] == 2 and (swept / "sweep.png").stat().st_size
    assert (swept / "sweep.csv").read_text().startswith("index,learning_rate,own,trials,solved,rate_percent")
    before = {name: (swept / name).read_bytes() for name in ("sweep.json", "sweep.csv")}
    lines = [(swept / "settings" / str(i) / "trials.jsonl").read_bytes() for i in (0, 1)]
    again = run(*command, "--until-settled")  # (capped trials never settle: it would run on)
    assert again.returncode == 0, again.stderr
    assert {name: (swept / name).read_bytes() for name in before} == before
    assert [(swept / "settings" / str(i) / "trials.jsonl").read_bytes() for i in (0, 1)] == lines  # no trial added
    status = run(*command, "--status", "--json")
    assert status.returncode == 0, status.stderr
    listed = json.loads(status.stdout)
    assert listed["finished"] == listed["total"] == 4 and not listed["in_use_by"]
    assert run(*command, "--status").stdout.rstrip().endswith(
        "every trial is finished: this command runs none (it writes the summary files again)")
    elsewhere = run("sweep", ROW, "--vary", "learning_rate=1e-5,1e-3", "--trials", "2", "--jobs", "1", "--max-steps",
                    STEPS, "--out", str(swept), "--status")
    assert "this command would not run there: 1 setting (above) holds trials of other settings" in elsewhere.stdout
    # (not reproduce's advice to name the experiment the folder holds)
    assert "holds another setting's trials (a sweep numbers its settings in the order of its --vary values" in \
        elsewhere.stdout
    other = run("sweep", ROW, "--vary", "learning_rate=1e-5,1e-3", "--trials", "2", "--jobs", "1", "--max-steps",
                STEPS, "--out", str(swept))
    assert other.returncode == 2 and "settings/1 holds trials of" in other.stderr
    assert {name: (swept / name).read_bytes() for name in before} == before
    foreign = tmp_path / "a run"
    foreign.mkdir()
    (foreign / "metrics.csv").write_text("step,loss\n")  # (before: --status read it as a sweep it would resume)
    refused = run(*command[:-1], str(foreign), "--status")
    assert refused.returncode == 2 and "not a folder lstmgraph sweep writes" in refused.stderr, refused.stdout


def test_a_user_s_spec_is_swept_under_a_default_protocol_it_names(tmp_path):
    spec = tmp_path / "mine.yaml"
    shutil.copy(SPECS / "gers2002_timing.yaml", spec)
    out = tmp_path / "out"
    result = run("sweep", str(spec), "--vary", "forget_gate_bias=-2,2", "--trials", "1", "--jobs", "1",
                 "--max-steps", "500", "--out", str(out), "--json")
    assert result.returncode == 0, result.stderr
    document = json.loads(result.stdout)
    assert document["subject"]["kind"] == "spec" and "stream protocol" in document["subject"]["judged_by"]
    assert [s["own"] for s in document["settings"]] == [True, False]
    assert json.loads((out / "sweep.json").read_text()) == document
    again = run("sweep", str(spec), "--vary", "forget_gate_bias=-2,2", "--trials", "1", "--jobs", "1",
                "--max-steps", "500", "--out", str(out))  # (finished: its table and notes, no trial run)
    assert "(--max-steps): a rate is a quick look, no verdict" in again.stdout  # a spec has no published rate


def test_keys_lists_every_key_of_the_subject_with_its_value_now():
    result = run("sweep", "gers2002-gts-peephole", "--keys", "--json")
    assert result.returncode == 0, result.stderr
    listed = json.loads(result.stdout)
    assert listed["learning_rate"] == 1e-5 and listed["forget_gate_bias"] == -2.0
    assert listed["task.cue"] == "length" and listed["variant.without_peepholes"] is False
    assert listed["init.bias->memory.output_gate"] == 2.0


def test_keys_of_a_spec_that_is_not_valid_are_refused(tmp_path):
    """Before: `sweep SPEC --keys` listed the keys of a spec `validate` refuses, exit 0."""
    from conftest import SPECS

    spec = tmp_path / "dup.yaml"
    spec.write_text((SPECS / "gru_torch.yaml").read_text().replace("name: b_hr}", "name: b_ir}"))
    result = run("sweep", str(spec), "--keys")
    assert result.returncode == 2 and "a connection named 'b_ir' already exists" in result.stderr


def test_a_log_file_shows_each_running_trial_with_its_setting_and_each_finished_one(tmp_path):
    """Output to a file, not a terminal: a line on the running trials (named by setting) after
    each piece with --log-every 0, and a line per finished trial; 60,000 steps are at least
    three pieces (the first is 20,000)."""
    result = run("sweep", "gers2000-cerg-standard", "--vary", "learning_rate=0.1", "--no-own-setting", "--trials", "1",
                 "--jobs", "1", "--max-steps", "60000", "--log-every", "0", "--out", str(tmp_path))
    assert result.returncode == 0, result.stderr
    assert "setting 0: learning_rate=0.1 -> " in result.stdout  # one setting: not called a reference
    table = result.stdout[result.stdout.index("p speed"):]
    assert "(own)" not in table and "\n  0 " in table  # nor marked so in the table
    assert "0 of 1 done, 1 running, 0 waiting; setting 0, trial 0: " in result.stdout
    assert "  setting 0, trial 0: not solved in " in result.stdout and "[1/1]" in result.stdout


def test_a_long_list_of_settings_shows_its_ends_and_says_where_the_rest_are():
    from lstmgraph_cli.sweep import LISTED, shortened

    lines = [f"setting {index}" for index in range(1000)]
    short = shortened(lines, "settings: all in sweep.json")
    assert short[:10] == lines[:10] and short[-5:] == lines[-5:]
    assert short[10] == "  ... 985 more settings: all in sweep.json" and len(short) == 16
    assert shortened(lines[:LISTED], "x") == lines[:LISTED]


def test_a_reader_that_closes_the_pipe_ends_the_sweep_quietly(tmp_path):
    """`lstmgraph sweep ... | head -2`: the sweep's progress lines meet a closed pipe. That is
    click's quiet exit 1, not an unwritable folder's "error: [Errno 32] Broken pipe" (exit 2)."""
    import subprocess

    from test_commands import SCRIPT, GUARD_SECONDS

    command = [str(SCRIPT), "sweep", "gers2002_timing", "--vary", "learning_rate=0.1,0.2", "--trials", "1",
               "--max-steps", "200", "--jobs", "1", "--out", str(tmp_path / "sweep")]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    for _ in range(2):  # the header and the protocol line, written before the sweep starts
        process.stdout.readline()
    process.stdout.close()  # as `head -2` does: the sweep's own lines meet a closed pipe
    _, errors = process.communicate(timeout=GUARD_SECONDS)
    assert process.returncode == 1 and "error" not in errors.lower(), errors


def test_a_ctrl_c_while_a_setting_s_results_are_written_waits_for_them_and_the_sweep_ends_as_interrupted(
        tmp_path, monkeypatch):
    """An auditor's Ctrl-C arrived inside the import of matplotlib for a setting's results.png; the
    stop then wrote the results again on the half-loaded module and exited 1 with a traceback,
    without sweep.json. Now the signal waits until the results are written, then stops the sweep."""
    from lstmgraph.experiments import folder_run

    monkeypatch.setattr(folder_run, "results_figure", with_a_ctrl_c(folder_run.results_figure, cut_short=True))
    out = tmp_path / "sweep"
    command = ["sweep", ROW, "--vary", "learning_rate=1e-5,1e-4", "--trials", "1", "--jobs", "1", "--max-steps",
               STEPS, "--out", str(out)]
    result = run(*command)
    assert result.returncode == 130, result.stderr
    assert "interrupted:" in result.stderr and "Traceback" not in result.stderr
    assert json.loads((out / "settings" / "0" / "results.json").read_text())["summary"]["trials"] == 1
    assert [entry["trials"] for entry in json.loads((out / "sweep.json").read_text())["settings"]] == [1, 0]
    assert (out / "sweep.png").stat().st_size
    monkeypatch.undo()
    resumed = run(*command)
    assert resumed.returncode == 0, resumed.stderr
    assert [entry["trials"] for entry in json.loads((out / "sweep.json").read_text())["settings"]] == [1, 1]


@pytest.mark.parametrize("stopped_before", [True, False])
def test_a_ctrl_c_while_sweep_json_is_written_waits_for_its_files(tmp_path, monkeypatch, stopped_before):
    """A Ctrl-C while the sweep's own files are written, at a stop (a second Ctrl-C: dropped) or
    at the end (the sweep then ends as interrupted): sweep.json, sweep.csv and sweep.png whole."""
    from lstmgraph.experiments import folder_run, sweep_run

    if stopped_before:  # the first Ctrl-C: as a setting's results are written
        monkeypatch.setattr(folder_run, "results_figure", with_a_ctrl_c(folder_run.results_figure))
    monkeypatch.setattr(sweep_run, "sweep_figure", with_a_ctrl_c(sweep_run.sweep_figure))
    out = tmp_path / "sweep"
    result = run("sweep", ROW, "--vary", "learning_rate=1e-5,1e-4", "--trials", "1", "--jobs", "1", "--max-steps",
                 STEPS, "--out", str(out))
    assert result.returncode == 130, result.stderr
    assert "interrupted:" in result.stderr and "Traceback" not in result.stderr
    document = json.loads((out / "sweep.json").read_text())
    assert [entry["trials"] for entry in document["settings"]] == ([1, 0] if stopped_before else [1, 1])
    assert (out / "sweep.csv").read_text().startswith("index,") and (out / "sweep.png").stat().st_size


def test_a_closed_terminal_s_sighup_stops_a_sweep_as_ctrl_c_does(tmp_path):
    """SIGHUP (a closed terminal, a dropped ssh session): the workers ended, sweep.json written,
    exit 129 with the resume hint; once it killed the sweep and leaked its semaphores."""
    import signal
    import subprocess

    from test_commands import SCRIPT, wait_for
    from test_reproduce import _gone, _workers

    out = tmp_path / "sweep"
    process = subprocess.Popen([str(SCRIPT), "sweep", "gers2000-cerg-forget", "--vary", "learning_rate=0.5,0.2",
                                "--trials", "2", "--jobs", "2", "--out", str(out)],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    wait_for(lambda: _workers(process.pid) or process.poll() is not None)
    workers = _workers(process.pid)
    process.send_signal(signal.SIGHUP)
    _, err = process.communicate(timeout=600)  # a guard only: the sweep stops at once
    assert process.returncode == 128 + signal.SIGHUP, err
    assert "run the same command to resume" in err and "Traceback" not in err and "leaked" not in err
    assert json.loads((out / "sweep.json").read_text())["settings"]
    assert workers
    wait_for(lambda: all(_gone(worker) for worker in workers))


def test_a_setting_over_a_limit_exits_2_before_the_plan_is_printed_or_a_folder_made(tmp_path):
    """Before: the sweep printed its plan and wrote the setting's experiment.json, then failed
    when the trial was built; a rerun with other values was refused as 'other settings'."""
    from conftest import dense_spec

    out = tmp_path / "sweep"
    result = run("sweep", str(dense_spec(tmp_path, "truncated_rtrl")), "--vary", "learning_rule=rtrl",
                 "--trials", "1", "--out", str(out))
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert 'setting 0 (learning_rule="rtrl"): dense: exact RTRL\'s traces would need more than' in result.stderr
    assert result.stdout == "" and not out.exists()


def test_a_setting_s_folder_of_other_settings_is_refused_before_the_plan_is_printed(tmp_path):
    out = str(tmp_path / "sweep")
    first = run("sweep", "gers2002-gts-peephole", "--vary", "learning_rate=0.5", "--no-own-setting", "--trials", "1",
                "--max-steps", "200", "--jobs", "1", "--out", out)
    assert first.returncode == 0, first.stderr
    result = run("sweep", "gers2002-gts-peephole", "--vary", "learning_rate=0.5", "--no-own-setting", "--trials", "1",
                 "--max-steps", "300", "--out", out)
    assert result.returncode == 2 and result.stdout == ""
    assert "settings/0 holds trials of" in result.stderr and "200 in the folder, 300 in this command" in result.stderr


def _data_spec(folder, training: dict, seed: int = 0, opposite: str | None = None) -> None:
    """In ``folder``: d.npz, 10 sequences of 4 steps (target: the input above 0), the timing net's
    spec net.yaml trained as ``training`` says; and ``opposite``, if named, a file of the opposite rule."""
    import numpy as np
    import yaml

    rng = np.random.default_rng(seed)
    for name, rule in (("d.npz", np.greater), (opposite, np.less)):
        if name is not None:
            inputs = rng.uniform(-1, 1, (40, 1))
            np.savez(folder / name, inputs=inputs, targets=rule(inputs, 0) * 1.0, starts=np.arange(0, 40, 4))
    data = yaml.safe_load((SPECS / "gers2002_timing.yaml").read_text())
    data["training"] = training
    (folder / "net.yaml").write_text(yaml.safe_dump(data))


def test_a_spec_trained_on_a_data_file_is_swept_on_its_sequences_drawn_at_random(tmp_path):
    """Workers build the data_file task from the absolute path and digest each setting records."""
    import hashlib

    _data_spec(tmp_path, {"learning_rate": 0.1, "data": "d.npz", "epochs": 2})
    result = run("sweep", str(tmp_path / "net.yaml"), "--vary", "learning_rate=0.1,0.5", "--vary",
                 "protocol.max_sequences=300", "--trials", "2", "--no-own-setting", "--out", str(tmp_path / "out"))
    assert result.returncode == 0, result.stderr
    assert "the sequences of d.npz drawn at random" in result.stdout
    digest = hashlib.sha256((tmp_path / "d.npz").read_bytes()).hexdigest()
    for index in (0, 1):
        described = json.loads((tmp_path / "out" / "settings" / str(index) / "results.json").read_text())
        assert described["experiment"]["task_options"] == {"path": str(tmp_path / "d.npz"), "sha256": digest}
        assert len(_trials(tmp_path / "out" / "settings" / str(index) / "trials.jsonl")) == 2


def test_a_spec_sweep_resumes_where_its_spec_data_and_folder_have_moved(tmp_path):
    """Before: the spec's absolute path (and the data file's) were among the settings compared, so
    a committed sweep refused to resume from another checkout ('run with other settings'); and a
    varied data file's absolute path in its setting's name did the same."""
    here = tmp_path / "here"
    here.mkdir()
    _data_spec(here, {"learning_rate": 0.1, "data": "d.npz", "epochs": 2}, seed=1, opposite="d2.npz")
    sweep = ("sweep", "net.yaml", "--vary", "task.path=d.npz,d2.npz", "--vary", "protocol.max_sequences=300",
             "--no-own-setting", "--out", "out")
    first = run(*sweep, "--trials", "1", cwd=here)
    assert first.returncode == 0, first.stderr
    there = here.rename(tmp_path / "there")
    status = run(*sweep, "--trials", "2", "--status", cwd=there)
    assert status.stdout.rstrip().endswith("this command resumes it") and "1 finished" in status.stdout, status.stdout
    more = run(*sweep, "--trials", "2", cwd=there)
    assert more.returncode == 0, more.stderr
    from_above = run("sweep", "there/net.yaml", "--vary", "task.path=there/d.npz,there/d2.npz", "--vary",
                     "protocol.max_sequences=300", "--no-own-setting", "--out", "there/out", "--trials", "3", cwd=tmp_path)
    assert from_above.returncode == 0, from_above.stderr
    for index in (0, 1):
        assert [row["seed"] for row in _trials(there / "out" / "settings" / str(index) / "trials.jsonl")] == [0, 1, 2]
    recorded = json.loads((there / "out" / "settings" / "0" / "experiment.json").read_text())
    assert recorded["spec"] == str(there / "net.yaml") and recorded["task_options"]["path"] == str(there / "d.npz")
    judged = run("evaluate", "out/settings/0/trials/0", "--sequences", "5", cwd=there)  # (its spec.yaml: here's)
    assert judged.returncode == 0 and "of the run's training data" in judged.stdout, judged.stderr


def test_a_held_out_data_file_is_what_a_sweep_s_trials_are_tested_on(tmp_path):
    """``--vary task.test_path``: the test set drawn from held-out sequences, here of the opposite
    rule, so every test sequence is wrong there and not on the training file."""
    _data_spec(tmp_path, {"learning_rate": 0.5, "data": "d.npz"}, opposite="held.npz")
    result = run("sweep", "net.yaml", "--vary", "task.test_path=null,held.npz", "--vary", "protocol.max_sequences=3000",
                 "--trials", "2", "--jobs", "1", "--out", "out", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    own, held = (_trials(tmp_path / "out" / "settings" / str(index) / "trials.jsonl") for index in (0, 1))
    assert [row["test_wrong"] for row in held] == [2560, 2560]
    assert all(row["test_wrong"] < 2560 for row in own)
    recorded = json.loads((tmp_path / "out" / "settings" / "1" / "experiment.json").read_text())
    assert recorded["task_options"]["test_path"] == str(tmp_path / "held.npz") and "test_sha256" in recorded["task_options"]
