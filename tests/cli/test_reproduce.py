"""`lstmgraph reproduce` as a user runs it."""

from __future__ import annotations

import json

import pytest

from lstmgraph.experiments import EXPERIMENTS

from conftest import SPECS, invoke, with_a_ctrl_c
from test_commands import run


def test_list_names_every_experiment_with_its_paper_and_figures():
    result = run("reproduce", "--list")
    assert result.returncode == 0, result.stderr
    for name in EXPERIMENTS:
        assert f"{name}\n" in result.stdout
    assert "Table 1; 30 trials" in result.stdout and "mean to success 8,440" in result.stdout
    # spec names that `train` takes after pip install, not paths into a checkout
    assert "; 30 trials; spec hochreiter1997_erg" in result.stdout and "specs/" not in result.stdout
    listed = json.loads(run("reproduce", "--list", "--json").stdout)
    assert [entry["name"] for entry in listed] == list(EXPERIMENTS)


def test_list_with_an_experiment_describes_that_one_as_the_options_change_it():
    result = run("reproduce", "gers2002-gts-peephole", "--list", "--task-option", "cue=delay")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == "gers2002-gts-peephole" and sum(not line.startswith(" ") for line in lines) == 1
    assert "cue delay" in result.stdout and "    protocol: continual streams" in result.stdout
    assert "    the committed run of the row: " in result.stdout  # (tests run in the checkout)
    (listed,) = json.loads(run("reproduce", "gers2002-gts-peephole", "--list", "--json").stdout)
    assert listed == EXPERIMENTS["gers2002-gts-peephole"].describe()
    wrong = run("reproduce", "gers2002-gts-peephol", "--list")
    assert wrong.returncode == 2 and "did you mean gers2002-gts-peephole" in wrong.stderr


def test_list_of_every_experiment_refuses_options_that_change_one():
    """Before: --list --task-option cue=delay listed every row as it is, the option unread (exit 0)."""
    for option in ("--task-option", "--protocol-option"):
        code, output = invoke("reproduce", "--list", option, "cue=delay")
        assert code == 2 and f"{option} changes one experiment: name it" in output, output


def test_print_spec_prints_the_network_a_row_runs_as_a_spec_that_compiles_to_its_plan(tmp_path):
    import lstmgraph

    result = run("reproduce", "gers2000-cnto-forget", "--print-spec", "--task-option", "idle_target=null")
    assert result.returncode == 0, result.stderr
    (tmp_path / "row.yaml").write_text(result.stdout)
    plan = lstmgraph.compile_spec(tmp_path / "row.yaml")
    row = EXPERIMENTS["gers2000-cnto-forget"].with_task_options({"idle_target": None})
    assert plan.n_parameters == row.plan().n_parameters and plan.training == row.plan().training
    assert "idle_target" not in result.stdout


def test_a_printed_spec_trains_as_the_row_runs_under_the_row_s_name():
    """Before: an NTO row's printed spec kept the CERG spec it borrows: its name, its description
    ("continual embedded Reber grammar") and ``reset: never``, so `train` ran one long stream of
    temporal-order sequences that the row starts each from zero activations. A row on its spec's
    own task keeps the spec's name (a sweep of a file printed before resumes)."""
    import yaml

    result = run("reproduce", "gers2000-nto-forget-bias5", "--print-spec")
    assert result.returncode == 0, result.stderr
    data = yaml.safe_load(result.stdout)
    assert data["name"] == "gers2000-nto-forget-bias5" and "Reber" not in data["description"]
    assert data["training"]["reset"] == "sequence" and data["training"]["task"]["name"] == "temporal_order"
    row_data = EXPERIMENTS["gers2000-nto-forget-bias5"].spec_data()[0]
    assert row_data["training"]["reset"] == "never"  # what the trials run, unchanged: the protocol resets
    assert {key: value for key, value in data.items() if key not in ("name", "description", "training")} == \
        {key: value for key, value in row_data.items() if key not in ("name", "description", "training")}
    own_task = yaml.safe_load(run("reproduce", "gers2000-cerg-forget", "--print-spec").stdout)
    assert own_task["name"] == "gers2000_cerg" and own_task["training"]["reset"] == "never"  # a stream's


def test_print_spec_says_which_protocol_keys_give_a_sweep_of_the_file_the_row_s_protocol():
    """Before: the printed spec said nothing of the row's protocol, and a sweep of it ran under a
    spec's default one (for the adding rows, solved without their mean squared error below 0.01)."""
    result = run("reproduce", "hochreiter1997-adding-t100", "--print-spec")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[2] == "#   --vary protocol.max_error=0.01 --vary protocol.max_sequences=2000000", lines[:3]
    assert lines[3] == "version: 1"


def test_print_spec_reports_a_specs_folder_s_missing_or_broken_spec(tmp_path):
    """Before: --print-spec with --specs DIR let the spec's SpecError escape as a traceback (exit 1)."""
    code, output = invoke("reproduce", "gers2002-gts-peephole", "--print-spec", "--specs", tmp_path)
    assert code == 2 and f"{tmp_path / 'gers2002_timing.yaml'}: no such file" in output, output
    (tmp_path / "gers2002_timing.yaml").write_text("version: 1\nversion: 1\n")
    code, output = invoke("reproduce", "gers2002-gts-peephole", "--print-spec", "--specs", tmp_path)
    assert code == 2 and "key 'version' appears more than once" in output, output


def test_an_unknown_experiment_is_a_usage_error_with_a_suggestion():
    result = run("reproduce", "gers2000-cerg-forgett")
    assert result.returncode == 2
    assert "did you mean gers2000-cerg-forget" in result.stderr and "Traceback" not in result.stderr
    assert run("reproduce").returncode == 2


@pytest.mark.parametrize("name, is_spec", [("mylstm.yaml", True), ("net.JSON", True), ("notes", True),
                                            ("gers2000_cerg", True), ("gers2000-cerg-forgett", False)])
def test_a_spec_given_to_reproduce_is_told_how_specs_run(tmp_path, name, is_spec):
    """A spec file's name, an existing file or a bundled spec's name: sweep or train runs it."""
    (tmp_path / "notes").write_text("")
    result = run("reproduce", name, cwd=tmp_path)
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert f"no experiment named '{name}'" in result.stderr
    told = f"`lstmgraph sweep {name} --vary KEY=V1,V2` (a grid of settings, many trials each) or " \
           f"`lstmgraph train {name}` (one run)"
    assert (told in result.stderr) == is_spec, result.stderr


def test_two_short_trials_print_the_table_and_write_json_and_csv(tmp_path):
    out = tmp_path / "results"
    result = run("reproduce", "gers2000-cerg-forget", "--trials", "2", "--jobs", "2", "--max-steps", "2000",
                 "--until-settled", "--out", str(out))  # (capped trials never settle: both run)
    assert result.returncode == 0, result.stderr
    assert "settled at" not in result.stdout
    assert "; 2 trials on 2 workers -> " in result.stdout
    assert "% perfect" in result.stdout and "18,889" in result.stdout
    # a quick look: its figures, and why there is no verdict (issue 34)
    assert "\n2 of 100 trials, capped at 2,000 training steps: no verdict" in result.stdout
    assert "% perfect, 95 % interval" in result.stdout
    assert "reproduced" not in result.stdout and "differs" not in result.stdout
    # stdout is not a terminal here: one line per finished trial, as a log file needs
    assert "trial 0: not solved in " in result.stdout and "training streams (" in result.stdout
    assert "[2/2]" in result.stdout
    results = json.loads((out / "results.json").read_text())
    assert [row["seed"] for row in results["trials"]] == [0, 1]
    assert (out / "trials.csv").read_text().startswith("seed,")
    assert (out / "results.png").read_bytes().startswith(b"\x89PNG")
    other = run("reproduce", "gers2000-cerg-forget", "--trials", "2", "--max-steps", "3000", "--out", str(out))
    assert other.returncode == 2 and "other settings" in other.stderr
    # --json: results.json's content and the verdict the table says (before: no verdict at all)
    again = json.loads(run("reproduce", "gers2000-cerg-forget", "--trials", "2", "--max-steps", "2000", "--json",
                           "--out", str(out)).stdout)
    assert again.pop("verdict") == "none for a run of 2 of 100 trials, capped at 2,000 training steps"
    assert again == json.loads((out / "results.json").read_text())


def test_a_task_option_set_otherwise_is_run_recorded_and_checked(tmp_path):
    out = tmp_path / "no-idle-target"
    result = run("reproduce", "gers2000-cnto-forget", "--task-option", "idle_target=null", "--trials", "1",
                 "--jobs", "1", "--max-steps", "3000", "--out", str(out))
    assert result.returncode == 0, result.stderr
    assert 'task options: idle_target null (set with --task-option)' in result.stdout  # the option given, unset
    settings = json.loads((out / "experiment.json").read_text())
    assert settings["task_options"] == {"variant": "6b", "continual": True}
    assert "idle_target" not in settings["spec_data"]["training"]["task"]
    assert json.loads((out / "results.json").read_text())["experiment"]["task_options"] == settings["task_options"]
    plain = run("reproduce", "gers2000-cnto-forget", "--trials", "1", "--max-steps", "3000", "--out", str(out))
    assert plain.returncode == 2 and "other settings" in plain.stderr  # the row's coding is not mixed in
    again = run("reproduce", "gers2000-cnto-forget", "--task-option", "idle_target=null", "--trials", "1",
                "--max-steps", "3000", "--out", str(out))
    assert again.returncode == 0 and "[1/1]" in again.stdout  # the same settings: the trial is kept
    for option, message in (("idle=0", "has no option 'idle'"), ("idle_target", "takes KEY=VALUE"),
                            ("idle_target=zero", "idle_target must be a finite number"),
                            ("idle_target=" + "[" * 5000, "idle_target must be a finite number")):  # (JSON too deep)
        wrong = run("reproduce", "gers2000-cnto-forget", "--task-option", option, "--out", str(tmp_path / "x"))
        assert wrong.returncode == 2 and message in wrong.stderr and "Traceback" not in wrong.stderr
        assert not (tmp_path / "x").exists()


def test_a_protocol_setting_set_otherwise_is_run_recorded_and_checked(tmp_path):
    out = tmp_path / "most-active"
    result = run("reproduce", "gers2000-cnto-forget", "--protocol-option", "success=most_active", "--trials", "1",
                 "--jobs", "1", "--max-steps", "3000", "--out", str(out))
    assert result.returncode == 0, result.stderr
    assert "; 1 trial on 1 worker -> " in result.stdout
    assert "(the target's unit not the most active)" in result.stdout
    assert 'success "most_active" (set with --protocol-option: not the row\'s)' in result.stdout
    settings = json.loads((out / "experiment.json").read_text())
    assert settings["protocol_options"] == {"success": "most_active"}
    plain = run("reproduce", "gers2000-cnto-forget", "--trials", "1", "--max-steps", "3000", "--out", str(out))
    assert plain.returncode == 2 and "other settings" in plain.stderr  # the row's protocol is not mixed in
    again = run("reproduce", "gers2000-cnto-forget", "--protocol-option", "success=most_active", "--trials", "1",
                "--max-steps", "3000", "--out", str(out))
    assert again.returncode == 0 and "[1/1]" in again.stdout  # the same settings: the trial is kept
    for option, message in (("success=winner", "success is one of 'tolerance', 'most_active'"),
                            ("tolerence=0.2", "did you mean 'tolerance'"), ("success", "takes KEY=VALUE")):
        wrong = run("reproduce", "gers2000-cnto-forget", "--protocol-option", option, "--out", str(tmp_path / "x"))
        assert wrong.returncode == 2 and message in wrong.stderr and "Traceback" not in wrong.stderr
        assert not (tmp_path / "x").exists()


@pytest.mark.parametrize("options, message", [
    (["tolerance=-1"], "--protocol-option: tolerance must be a finite number >= 0, not -1.0"),
    (["tolerance=NaN"], "--protocol-option: tolerance takes a finite number"),
    (["tolerance=0.2"], "--protocol-option: tolerance: this sequences protocol judges by most_active, which reads "
                        "no tolerance; leave it out, or give success=tolerance with it"),
])
def test_a_protocol_option_the_row_would_not_read_or_cannot_take_exits_2_writing_nothing(tmp_path, options, message):
    arguments = [part for option in options for part in ("--protocol-option", option)]
    result = run("reproduce", "hochreiter1997-erg-3x2-lr0.5", *arguments, "--trials", "1", "--max-steps", "500",
                 "--jobs", "1", "--out", str(tmp_path / "x"))
    assert result.returncode == 2 and message in result.stderr and "Traceback" not in result.stderr
    assert not (tmp_path / "x").exists()


def test_status_says_what_a_results_folder_holds_and_writes_nothing(tmp_path):
    out = tmp_path / "results"
    row = ("reproduce", "gers2002-gts-peephole", "--max-steps", "3000", "--out", str(out))
    assert run(*row, "--trials", "1", "--jobs", "1").returncode == 0
    before = {path: path.read_bytes() for path in out.rglob("*") if path.is_file()}
    status = run(*row, "--trials", "3", "--status")
    assert status.returncode == 0, status.stderr
    assert "gers2002-gts-peephole in " in status.stdout
    assert "1 of 3 trials finished, 0 checkpointed, 2 not started" in status.stdout
    assert "this command resumes it" in status.stdout and "not started: trials 1-2" in status.stdout
    assert "% perfect, 95 % interval" in status.stdout
    assert "every trial is finished: this command runs none" in run(*row, "--trials", "1", "--status").stdout
    assert "\nverdict: none for a run of 3 of 10 trials, capped at 3,000 training steps" in status.stdout
    assert "reproduced" not in status.stdout and "differs" not in status.stdout
    assert {path: path.read_bytes() for path in out.rglob("*") if path.is_file()} == before
    listed = json.loads(run(*row, "--trials", "3", "--status", "--json").stdout)
    assert listed["resumes"] and listed["waiting"] == [1, 2] and listed["results"]["summary"]["trials"] == 1
    other = run("reproduce", "gers2002-gts-peephole", "--max-steps", "2999", "--out", str(out), "--status")
    assert other.returncode == 0 and "this command would not run there" in other.stdout
    assert "(budget_steps (--max-steps): 3,000 in the folder, 2,999 in this command)" in other.stdout
    missing = run("reproduce", "gers2002-gts-peephole", "--out", str(tmp_path / "none"), "--status")
    assert missing.returncode == 2 and "no such folder" in missing.stderr and "Traceback" not in missing.stderr
    assert not (tmp_path / "none").exists()


def test_a_log_file_gets_a_line_on_the_running_trials_as_often_as_asked(tmp_path):
    # three or more pieces (the first is 20,000 steps): a report with the trial running after each
    result = run("reproduce", "gers2000-cerg-forget", "--trials", "1", "--jobs", "1", "--max-steps", "60000",
                 "--checkpoint-seconds", "1", "--log-every", "0", "--out", str(tmp_path / "results"))
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    running = [line for line in lines if line.startswith("  0 of 1 done, 1 running, 0 waiting; trial 0: ")]
    assert running and all("training streams" in line for line in running)
    assert lines.index(running[-1]) < next(i for i, line in enumerate(lines) if line.startswith("  trial 0: "))


def _workers(pid: int) -> list[int]:
    """The pool's worker processes of ``pid`` (spawned: their command line runs spawn_main)."""
    from pathlib import Path
    workers = []
    for listing in Path(f"/proc/{pid}/task").glob("*/children"):
        for child in listing.read_text().split():
            try:
                command = Path(f"/proc/{child}/cmdline").read_bytes()
            except OSError:  # it has just ended
                continue
            if b"spawn_main" in command and b"resource_tracker" not in command:
                workers.append(int(child))
    return workers


def _gone(pid: int) -> bool:
    from pathlib import Path
    status = Path(f"/proc/{pid}/status")
    return not status.exists() or "State:\tZ" in status.read_text()


@pytest.mark.parametrize("stop", ["SIGINT", "SIGTERM", "SIGHUP"])
def test_ctrl_c_sigterm_or_sighup_stops_the_workers_and_says_how_to_resume(tmp_path, stop):
    """Ctrl-C, the SIGTERM of `kill` or a batch scheduler, or the SIGHUP of a closed terminal: the
    workers are ended, the run says how to resume and exits 128 + the signal's number, with
    nothing left behind (no leaked semaphores reported by multiprocessing's resource tracker)."""
    import signal
    import subprocess

    from test_commands import SCRIPT, wait_for
    out = tmp_path / "out"
    process = subprocess.Popen([str(SCRIPT), "reproduce", "gers2000-cerg-forget", "--trials", "4", "--jobs", "2",
                                "--out", str(out)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    # Stop it once the workers run (no fixed wait: however long the kernel takes to compile).
    wait_for(lambda: _workers(process.pid) or process.poll() is not None)
    workers = _workers(process.pid)
    number = getattr(signal, stop)
    process.send_signal(number)
    _, err = process.communicate(timeout=600)  # a guard only: the run stops at once
    assert process.returncode == 128 + number, err
    assert "run the same command to resume" in err and "Traceback" not in err
    assert "leaked" not in err
    assert workers
    wait_for(lambda: all(_gone(worker) for worker in workers))  # terminated, not left running


def test_a_ctrl_c_while_the_results_are_written_waits_for_them(tmp_path, monkeypatch):
    """A Ctrl-C inside the import of matplotlib for results.png once made the stop write the
    results again on the half-loaded module: exit 1, a traceback. Now it waits for the files."""
    from lstmgraph.experiments import folder_run

    monkeypatch.setattr(folder_run, "results_figure", with_a_ctrl_c(folder_run.results_figure, cut_short=True))
    out = tmp_path / "out"
    result = run("reproduce", "gers2002-msd-f10-peephole", "--trials", "1", "--jobs", "1", "--max-steps", "3000",
                 "--out", str(out))
    assert result.returncode == 130 and "Traceback" not in result.stderr, result.stderr
    assert "summarised so far in results.json" in result.stderr
    assert json.loads((out / "results.json").read_text())["summary"]["trials"] == 1
    assert (out / "results.png").stat().st_size


def test_a_specs_folder_with_a_net_of_the_wrong_width_exits_2_naming_its_file_and_line(tmp_path):
    """The plan is compiled before any folder or worker (it once broke the worker pool)."""
    specs = tmp_path / "specs"
    specs.mkdir()
    text = (SPECS / "gers2002_timing.yaml").read_text(encoding="utf-8")
    (specs / "gers2002_timing.yaml").write_text(text.replace("kind: input, size: 1", "kind: input, size: 3"))
    out = tmp_path / "out"
    result = run("reproduce", "gers2002-msd-f10-peephole", "--trials", "1", "--jobs", "1", "--max-steps", "100",
                 "--specs", str(specs), "--out", str(out))
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert f"{specs / 'gers2002_timing.yaml'}:" in result.stderr and "the network 3 and 1" in result.stderr
    assert not out.exists()


def test_task_options_too_large_to_draw_exit_2_not_a_lost_worker(tmp_path):
    """Delays of 10^12 are beyond a task integer's limit; 10^7 are within it but a stream's refill
    would need hundreds of GiB: both exit 2 naming the cause, no traceback."""
    for delays, message in (("[0,1000000000000]", "option delays: 1000000000000 is beyond 10,000,000"),
                            ("[0,10000000]", "more than the limit of 2 GiB")):
        result = run("reproduce", "gers2002-msd-f10-peephole", "--task-option", f"delays={delays}", "--trials", "1",
                     "--jobs", "1", "--max-steps", "200", "--out", str(tmp_path / delays.strip("[]").replace(",", "-")))
        assert result.returncode == 2 and message in result.stderr and "Traceback" not in result.stderr, result.stderr


@pytest.mark.parametrize("command", [
    ["reproduce", "gers2002-gts-peephole"],
    ["sweep", "gers2002-gts-peephole", "--vary", "learning_rate=1e-5"],
])
def test_a_first_run_on_an_installation_says_it_compiles_first(tmp_path, monkeypatch, command):
    """The first trial waits for the compiled engine (10-60 s): said before, on standard error,
    as `train` says it; not where the trials run elsewhere, nor once compiled."""
    from lstmgraph.engine.compiled import interpreter

    monkeypatch.setattr(interpreter, "function_compiled", lambda function: False)
    result = run(*command, "--trials", "1", "--max-steps", "200", "--out", tmp_path / "first")
    assert result.returncode == 0, result.stderr
    assert "and the driver of its streams protocol (once per installation" in result.stderr  # (its kernel: auto's)
    monkeypatch.setattr(interpreter, "function_compiled", lambda function: True)
    result = run(*command, "--trials", "1", "--max-steps", "200", "--out", tmp_path / "again")
    assert result.returncode == 0 and "note: compiling" not in result.stderr



def test_the_header_names_the_task_options_given_and_which_are_the_row_s_own(tmp_path):
    """Not every option of the task (6a's variant, which no one gave), and a value equal to the
    row's is said to be the row's own, not another coding."""
    result = run("reproduce", "hochreiter1997-temporal-order-6a", "--task-option", "idle_target=0",
                 "--task-option", "variant=6a", "--trials", "1", "--max-steps", "100", "--out", tmp_path / "to")
    assert result.returncode == 0, result.stderr
    (line,) = [line for line in result.stdout.splitlines() if line.startswith("task options: ")]
    assert line == 'task options: idle_target 0, variant "6a" (the row\'s own) (set with --task-option)'
    other = run("reproduce", "hochreiter1997-temporal-order-6a", "--task-option", "idle_target=0", "--trials", "1",
                "--max-steps", "100", "--out", tmp_path / "other")
    assert "variant" not in [line for line in other.stdout.splitlines() if line.startswith("task options: ")][0]


def test_a_resumed_run_says_which_trials_an_earlier_run_finished(tmp_path):
    out = tmp_path / "gts"
    assert run("reproduce", "gers2002-gts-peephole", "--trials", "1", "--out", out).returncode == 0
    result = run("reproduce", "gers2002-gts-peephole", "--trials", "2", "--out", out)
    lines = [line for line in result.stdout.splitlines() if line.lstrip().startswith("trial ")]
    assert [line.endswith("(finished in an earlier run of the folder) [1/2]") for line in lines] == [True, False]


def test_a_spec_from_another_folder_is_named_in_the_header_and_the_tables(tmp_path):
    """`--specs DIR`: the header names the file, and `lstmgraph results` labels the folder."""
    import shutil

    from lstmgraph.experiments.results_table import coding_note, collect

    specs = tmp_path / "specs"
    shutil.copytree(SPECS, specs)
    path = specs / "gers2002_timing.yaml"
    path.write_text(path.read_text().replace("uniform: 0.1", "uniform: 0.2"))
    out = tmp_path / "results" / "gts"
    result = run("reproduce", "gers2002-gts-peephole", "--specs", specs, "--trials", "1", "--max-steps", "2000",
                 "--out", out)
    assert result.returncode == 0, result.stderr
    assert f"spec: {path} (set with --specs: not the bundled one)" in result.stdout
    assert run("reproduce", "gers2002-gts-peephole", "--trials", "1", "--max-steps", "2000",
               "--out", tmp_path / "results" / "plain").returncode == 0
    notes = {row.folder: coding_note(row) for row in collect(tmp_path / "results")}
    assert notes == {"gts": " (spec: not the row's)", "plain": ""}


def test_a_run_refused_before_it_starts_prints_no_plan_and_writes_nothing(tmp_path, monkeypatch):
    """Before: the plan (row, protocol, workers) was printed, then the error, as if the run had begun."""
    import lstmgraph.engine.gpu as gpu

    def no_gpu(allow_simulator=True):
        raise gpu.GpuUnavailable("no CUDA GPU is available")
    monkeypatch.setattr(gpu, "cuda_module", no_gpu)
    code, output = invoke("reproduce", "gers2002-gts-peephole", "--trials", 1, "--device", "cuda",
                          "--out", tmp_path / "out")
    assert code == 2 and output.startswith("error: --device cuda: no CUDA GPU is available"), output
    assert "protocol:" not in output and not (tmp_path / "out").exists()


def test_a_folder_of_other_settings_is_refused_before_the_plan_is_printed(tmp_path):
    """Before: the row, protocol and workers were printed, then the conflict."""
    out = str(tmp_path / "out")
    assert run("reproduce", "gers2002-gts-peephole", "--trials", "1", "--max-steps", "200", "--out", out).returncode == 0
    result = run("reproduce", "gers2002-gts-peephole", "--trials", "1", "--max-steps", "300", "--out", out)
    assert result.returncode == 2 and result.stdout == ""
    assert "budget_steps (--max-steps): 200 in the folder, 300 in this command" in result.stderr


def test_a_ctrl_c_during_the_checks_says_interrupted_and_promises_nothing_kept(tmp_path, monkeypatch):
    """Before anything ran, the message "finished trials are kept in OUT/trials.jsonl ... run the
    same command to resume" would name files that were never written."""
    import lstmgraph.experiments.run_checks as run_checks
    import lstmgraph.training.engines as engines

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(run_checks, "check_program", interrupted)  # (reproduce)
    monkeypatch.setattr(engines, "check_program", interrupted)  # (sweep_run.check_plans)
    for command in (["reproduce", "gers2002-gts-peephole"],
                    ["sweep", "gers2002-gts-peephole", "--vary", "learning_rate=0.5"]):
        result = run(*command, "--trials", "1", "--out", tmp_path / command[0])
        assert (result.returncode, result.stdout, result.stderr) == (130, "", "\ninterrupted\n")
        assert not (tmp_path / command[0]).exists()


FULL_DISK_COMMANDS = [(["reproduce", "hochreiter1997-adding-t100"], "experiment.json"),
                      (["sweep", "hochreiter1997-adding-t100", "--vary", "learning_rate=0.5,0.4"],
                       "settings/0/experiment.json")]


@pytest.mark.parametrize("command,written", FULL_DISK_COMMANDS, ids=["reproduce", "sweep"])
def test_a_full_disk_exits_2_naming_the_file_and_saying_to_run_the_same_command_again(tmp_path, monkeypatch,
                                                                                     command, written):
    """A results folder that finds no room: the file named, and what to do (the rerun resumes)."""
    import errno

    from lstmgraph.experiments.folder import ResultsFolder
    from lstmgraph.files import OutputError

    def full(folder, settings):
        raise OutputError(folder.file(folder.SETTINGS), OSError(errno.ENOSPC, "No space left on device"))

    monkeypatch.setattr(ResultsFolder, "write_settings", full)
    out = tmp_path / "out"
    code, output = invoke(*command, "--trials", "1", "--max-steps", "1000", "--out", out)
    assert code == 2 and (f"error: cannot write {out}/{written}: No space left on device; once it can be "
                          "written, run the same command again: it resumes") in output, output
    assert not out.exists()  # made for this command and left empty (a sweep's settings folders too): removed


@pytest.mark.parametrize("command", [command for command, _ in FULL_DISK_COMMANDS], ids=["reproduce", "sweep"])
def test_a_lock_the_full_disk_refuses_leaves_no_folder_the_command_made(tmp_path, monkeypatch, command):
    """The folders made for --out (and its missing parents) go again when the disk refuses the
    lock, the first thing written; a folder that was there stays."""
    import errno

    import lstmgraph.folder_lock as folder_lock

    def full(*args):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(folder_lock.os, "pwrite", full)
    out = tmp_path / "made" / "out"
    code, output = invoke(*command, "--trials", "1", "--max-steps", "1000", "--out", out)
    assert code == 2 and f"error: cannot write {out}/.lock: No space left on device" in output, output
    assert not (tmp_path / "made").exists()
    (tmp_path / "there").mkdir()
    code, output = invoke(*command, "--trials", "1", "--max-steps", "1000", "--out", tmp_path / "there")
    assert code == 2 and (tmp_path / "there").is_dir()


@pytest.mark.parametrize("command", [command for command, _ in FULL_DISK_COMMANDS], ids=["reproduce", "sweep"])
def test_standard_output_on_a_full_disk_is_named_as_such_and_nothing_is_written(tmp_path, monkeypatch, command):
    """The plan printed to a full disk (ENOSPC, no file named): said to be the standard output,
    as every other command says it, not a bare "[Errno 28]"; the folder is not made."""
    import errno

    import click

    echo = click.echo

    def full(message=None, file=None, nl=True, err=False, color=None):
        if not err:
            raise OSError(errno.ENOSPC, "No space left on device")
        echo(message, file, nl, err, color)

    monkeypatch.setattr(click, "echo", full)
    out = tmp_path / "out"
    code, output = invoke(*command, "--trials", "1", "--max-steps", "1000", "--out", out)
    assert code == 2 and output == ("error: cannot write the standard output: No space left on device "
                                    "(redirected to a full disk?)\n"), output
    assert not out.exists()


@pytest.mark.parametrize("command", [["reproduce"], ["sweep", "--vary", "learning_rate=0.1"]])
def test_status_and_a_run_check_the_cluster_option_first(tmp_path, command):
    """Before: --status --cluster with a malformed address said "this command resumes it", and
    --jobs beside --cluster was dropped without a word."""
    status = run(command[0], "gers2002-gts-peephole", *command[1:], "--status", "--cluster", "tcp://h",
                 "--out", tmp_path / "out")
    assert status.returncode == 2 and "not a Dask scheduler address: 'tcp://h'" in status.stderr
    empty = run(command[0], "gers2002-gts-peephole", *command[1:], "--status", "--cluster", "", "--out", tmp_path / "out")
    assert empty.returncode == 2 and "not a Dask scheduler address" in empty.stderr  # (not taken as no cluster)
    both = run(command[0], "gers2002-gts-peephole", *command[1:], "--jobs", "2", "--cluster", "tcp://127.0.0.1:8786",
               "--out", tmp_path / "out")
    assert both.returncode == 2 and "with --cluster the cluster's workers run the trials: leave out --jobs" in both.stderr
    assert not (tmp_path / "out").exists()


def test_a_task_option_the_row_s_net_cannot_take_is_named_as_the_row_s_task_not_the_file_s():
    """Before: "specs/gers2000_cerg.yaml is not a valid spec" at the file's own task's line (a
    valid spec), and --print-spec printed a spec that `validate` refuses, exit 0."""
    for extra in (["--print-spec"], ["--trials", "1", "--max-steps", "1000"]):
        result = run("reproduce", "gers2000-nto-forget-bias5", "--task-option", "variant=6a", *extra)
        assert result.returncode == 2 and "Traceback" not in result.stderr and not result.stdout
        assert ("gers2000_cerg.yaml cannot run with gers2000-nto-forget-bias5's task (temporal_order, variant \"6a\")"
                in result.stderr) and "has 8 inputs and 4 outputs, the network 8 and 8" in result.stderr


def test_a_task_option_of_the_wrong_type_or_given_twice_is_refused_naming_it():
    """Before: 'unhashable type: list' for variant=[[[]]], and the last of two variant= silently won."""
    listed = run("reproduce", "gers2000-nto-standard", "--task-option", "variant=[[[]]]", "--trials", "1")
    assert listed.returncode == 2 and "variant must be one of '6a', '6b', got [[[]]]" in listed.stderr
    for flag, first, second in (("--task-option", "variant=6b", "variant=6a"),
                                ("--protocol-option", "tolerance=0.3", "tolerance=0.4")):
        twice = run("reproduce", "gers2000-nto-standard", flag, first, flag, second, "--trials", "1")
        assert twice.returncode == 2 and f"{flag} {first.split('=')[0]} is given 2 times" in twice.stderr
