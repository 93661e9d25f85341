"""`lstmgraph reproduce` as a user runs it."""

from __future__ import annotations

import json

from lstmgraph.experiments import EXPERIMENTS

from test_commands import run


def test_list_names_every_experiment_with_its_paper_and_figures():
    result = run("reproduce", "--list")
    assert result.returncode == 0, result.stderr
    for name in EXPERIMENTS:
        assert f"{name}\n" in result.stdout
    assert "Table 1; 30 trials" in result.stdout and "mean to success 8,440" in result.stdout
    listed = json.loads(run("reproduce", "--list", "--json").stdout)
    assert [entry["name"] for entry in listed] == list(EXPERIMENTS)


def test_an_unknown_experiment_is_a_usage_error_with_a_suggestion():
    result = run("reproduce", "gers2000-cerg-forgett")
    assert result.returncode == 2
    assert "did you mean gers2000-cerg-forget" in result.stderr and "Traceback" not in result.stderr
    assert run("reproduce").returncode == 2


def test_two_short_trials_print_the_table_and_write_json_and_csv(tmp_path):
    out = tmp_path / "results"
    result = run("reproduce", "gers2000-cerg-forget", "--trials", "2", "--jobs", "2", "--max-steps", "2000",
                 "--out", str(out))
    assert result.returncode == 0, result.stderr
    assert "% perfect" in result.stdout and "18,889" in result.stdout
    assert "capped at 2,000 training steps" in result.stdout
    # stdout is not a terminal here: one line per finished trial, as a log file needs
    assert "trial 0: not solved in " in result.stdout and "training streams (" in result.stdout
    assert "[2/2]" in result.stdout
    results = json.loads((out / "results.json").read_text())
    assert [row["seed"] for row in results["trials"]] == [0, 1]
    assert (out / "trials.csv").read_text().startswith("seed,")
    assert (out / "results.png").read_bytes().startswith(b"\x89PNG")
    other = run("reproduce", "gers2000-cerg-forget", "--trials", "2", "--max-steps", "3000", "--out", str(out))
    assert other.returncode == 2 and "other settings" in other.stderr


def test_ctrl_c_stops_the_workers_and_says_how_to_resume(tmp_path):
    import signal
    import subprocess
    import time

    from test_commands import SCRIPT
    process = subprocess.Popen([str(SCRIPT), "reproduce", "gers2000-cerg-forget", "--trials", "4", "--out",
                                str(tmp_path / "out")], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    time.sleep(6)
    process.send_signal(signal.SIGINT)
    _, err = process.communicate(timeout=60)
    assert process.returncode == 130
    assert "run the same command to resume" in err and "Traceback" not in err
