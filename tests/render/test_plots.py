"""`lstmgraph plot`: the traced signals are the simulator's, the figure is a valid file, and a
bad run directory is a clear error (exit 2), never a traceback."""

from __future__ import annotations

import dataclasses
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ElementTree
from pathlib import Path

import numpy as np
import pytest
import yaml
from click.testing import CliRunner

from lstmgraph.engine import Simulator, load_weights
from lstmgraph.render.plots import (DEFAULT_PANELS, draw_figure, moving_average, panel_groups, plot_runs,
                                    save_figure, window_quantiles)
from lstmgraph.render.tracing import PlotError, trace_run
from lstmgraph.training.trained import Metrics, load_run, read_metrics
from lstmgraph.tasks import concatenated, make_task
from lstmgraph_cli.main import main

from conftest import SPECS

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def _train(directory: Path, spec: str | Path, steps: int, *extra: str) -> Path:
    """A short run written by `lstmgraph train` (in process)."""
    out = directory / Path(spec).stem
    result = CliRunner().invoke(main, ["train", str(spec), "--steps", str(steps), "--out", str(out),
                                       "--quiet", *extra])
    assert result.exit_code == 0, result.output
    return out


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> dict[str, Path]:
    """CERG, CERG without forget gates, the timing net with 2 trials, the adding problem."""
    base = tmp_path_factory.mktemp("runs")
    no_forget = yaml.safe_load((SPECS / "gers2000_cerg.yaml").read_text())
    no_forget["name"] = "cerg_no_forget"
    no_forget["groups"][1]["gates"] = ["input", "output"]
    for connection in no_forget["connections"]:
        if isinstance(connection["to"], list):
            connection["to"] = [t for t in connection["to"] if t != "memory.forget_gate"]
    no_forget["connections"] = [c for c in no_forget["connections"] if c["to"] != "memory.forget_gate"]
    (base / "cerg_no_forget.yaml").write_text(yaml.safe_dump(no_forget))
    return {"cerg": _train(base, SPECS / "gers2000_cerg.yaml", 150),
            "no_forget": _train(base, base / "cerg_no_forget.yaml", 150),
            "timing": _train(base, SPECS / "gers2002_timing.yaml", 100, "--trials", "2"),
            "adding": _train(base, SPECS / "hochreiter1997_adding.yaml", 250)}


def test_trace_of_a_continual_task_is_what_the_simulator_computes(runs):
    run = load_run(runs["cerg"])
    trace = trace_run(run, steps=60, seed=5)
    task = run.plan.training.task
    inputs, targets = concatenated(make_task(task.name, task.options), 60, np.random.default_rng(5))
    np.testing.assert_array_equal(trace.inputs, inputs)
    np.testing.assert_array_equal(trace.targets, targets)
    weights = load_weights(runs["cerg"] / "weights.npz", run.plan)
    sim = Simulator(run.plan)
    records, _ = sim.run(weights, inputs)  # continual: one stream, no reset
    expected = sim.signals(records)
    assert set(expected) <= set(trace.signals) and "symbols" in trace.signals
    for name, values in expected.items():
        np.testing.assert_array_equal(trace.signals[name], values, err_msg=name)
    assert trace.signals["memory.state"].shape == (60, 1, 8) and not trace.reset
    assert trace.loss.shape == (60, 1) and np.all(trace.loss >= 0)


def test_trace_of_independent_sequences_resets_at_each_start(runs):
    run = load_run(runs["adding"])
    trace = trace_run(run, steps=250, seed=1)
    assert trace.reset and len(trace.starts) >= 2 and trace.starts[0] == 0
    sim = Simulator(run.plan)
    bounds = [*trace.starts, trace.steps]
    for start, stop in zip(bounds[:-1], bounds[1:]):
        records, _ = sim.run(run.weights, trace.inputs[start:stop])  # from zero activations
        for name, values in sim.signals(records).items():
            np.testing.assert_array_equal(trace.signals[name][start:stop], values, err_msg=name)


def test_population_runs_give_one_curve_and_one_trace_per_trial(runs):
    run = load_run(runs["timing"])
    assert run.trials == 2 and run.metrics.loss_trials.shape == (len(run.metrics), 2)
    np.testing.assert_allclose(run.metrics.curves(per_step=True).mean(axis=1), run.metrics.loss_per_step)
    np.testing.assert_allclose(run.metrics.curves(per_step=False).mean(axis=1), run.metrics.loss)
    trace = trace_run(run, steps=20)
    assert trace.signals["memory.state"].shape == (20, 2, 1)
    assert not np.array_equal(trace.signals["target"][:, 0], trace.signals["target"][:, 1])
    np.testing.assert_allclose(trace.targets[:10], trace.targets[10:20])  # the wave, period 10
    figure = draw_figure([run], [trace], trial=1)
    curve = figure.axes[0]
    assert [line.get_label() for line in curve.get_lines() if not line.get_label().startswith("_")] \
        == ["trial 0", "trial 1"]


def test_side_by_side_runs_share_rows_and_show_what_is_missing(runs):
    pair = [load_run(runs["cerg"]), load_run(runs["no_forget"])]
    traces = [trace_run(run, steps=40) for run in pair]
    rows = panel_groups([run.plan for run in pair])
    assert [panel for panel, _ in rows] == ["cell_state", "input_gate", "forget_gate", "output_gate",
                                            "output"]
    assert dict(rows)["forget_gate"] == [["memory.forget_gate"], []]
    figure = draw_figure(pair, traces)
    grid = np.array(figure.axes[:2 * (1 + len(rows))]).reshape(1 + len(rows), 2)
    assert grid[1, 0].get_ylim() == grid[1, 1].get_ylim()  # cell states on one scale
    assert any(text.get_text() == "no forget gate units" for text in grid[3, 1].texts)


def test_a_learning_curve_of_many_steps_keeps_a_few_short_step_labels(runs):
    """Three runs side by side: their 20,000-step axes ran "15000" and "17500" together."""
    paths = [runs["cerg"], runs["no_forget"], runs["adding"]]
    loaded = [load_run(path) for path in paths]
    figure = draw_figure(loaded, [trace_run(run, steps=20) for run in loaded], panels=["output"])
    for ax in figure.axes[:3]:
        ax.set_xlim(0, 20008)
    figure.canvas.draw()
    for ax in figure.axes[:3]:
        labels = [label.get_text() for label in ax.get_xticklabels() if label.get_text()]
        assert 2 <= len(labels) <= 6 and "20k" in labels, labels
        assert all(len(label) <= 5 for label in labels), labels


def test_a_task_s_unit_symbols_label_the_steps_and_the_output_units(runs):
    run = load_run(runs["cerg"])
    trace = trace_run(run, steps=40)
    assert trace.input_symbols == trace.output_symbols == tuple("BTPSXVE")  # the task names them
    figure = draw_figure([run], [trace], panels=["cell_state", "output"])
    outputs = figure.axes[2]  # below the learning curve and the cell states
    assert [label.get_text() for label in outputs.get_yticklabels()] == list("BTPSXVE")
    steps = [label.get_text() for label in outputs.get_xticklabels()]
    assert steps == ["BTPSXVE"[i] for i in trace.inputs.argmax(axis=1)] and steps[0] == "B"
    adding = load_run(runs["adding"])
    trace = trace_run(adding, steps=40)
    assert trace.input_symbols is None and trace.output_symbols is None
    figure = draw_figure([adding], [trace], panels=["output"])
    assert not {label.get_text() for label in figure.axes[1].get_xticklabels()} & set("BTPSXVE")


def test_plot_writes_valid_png_svg_and_pdf(runs, tmp_path):
    written, lines = plot_runs([runs["cerg"], runs["no_forget"]], tmp_path / "both.png", steps=30)
    assert written.read_bytes()[:8] == PNG_MAGIC and len(lines) == 2
    assert "cell states in [" in lines[0] and "30 fresh steps of continual_embedded_reber" in lines[0]
    run = load_run(runs["timing"])
    figure = draw_figure([run], [trace_run(run, steps=25)], panels=["cell_state", "target"])
    svg = save_figure(figure, tmp_path / "timing.svg")
    assert ElementTree.parse(svg).getroot().tag.endswith("svg")
    assert save_figure(figure, tmp_path / "timing.pdf").read_bytes()[:5] == b"%PDF-"
    with pytest.raises(PlotError, match="no known extension"):
        save_figure(figure, tmp_path / "timing.gif")


def test_cli_writes_run_dir_plots_png_by_default(runs, tmp_path):
    run_dir = tmp_path / "copy"
    shutil.copytree(runs["timing"], run_dir)
    result = CliRunner().invoke(main, ["plot", str(run_dir), "--steps", "30", "--trial", "1",
                                       "--units", "cell_state,forget_gate,target", "--x", "sequence",
                                       "--loss", "per_sequence", "--dpi", "50"])
    assert result.exit_code == 0, result.output
    assert (run_dir / "plots.png").read_bytes()[:8] == PNG_MAGIC
    assert f"wrote {run_dir / 'plots.png'}" in result.output and "trial 1" in result.output


def test_an_unfinished_run_is_drawn_from_its_checkpoint(runs, tmp_path):
    run_dir = tmp_path / "unfinished"
    shutil.copytree(runs["cerg"], run_dir)
    (run_dir / "weights.npz").unlink()
    with (run_dir / "metrics.jsonl").open("a") as stream:
        stream.write('{"sequence": 99, "st')  # a row cut short by a running trainer
    run = load_run(run_dir)
    finished = load_run(runs["cerg"])
    assert run.weights_file == "checkpoint.npz" and len(run.metrics) == len(finished.metrics)
    for name, values in finished.weights.items():  # the final checkpoint holds the final weights
        np.testing.assert_array_equal(run.weights[name], values)


@pytest.mark.parametrize("setup, message", [
    ("missing", "no such run directory"),
    ("empty", "is not a run directory (no spec.yaml;"),
    ("no_weights", "holds no weights.npz or checkpoint.npz"),
    ("bad_metrics", "metrics.jsonl: line 1 is not a metrics row"),
    ("bad_spec", "is not a valid spec"),
])
def test_bad_run_directory_exits_2_with_a_clear_message(runs, tmp_path, setup, message):
    run_dir = tmp_path / "run"
    if setup != "missing":
        run_dir.mkdir()
    if setup in ("no_weights", "bad_metrics", "bad_spec"):
        shutil.copy(runs["cerg"] / "spec.yaml", run_dir)
        shutil.copy(runs["cerg"] / "metrics.jsonl", run_dir)
    if setup == "bad_metrics":
        shutil.copy(runs["cerg"] / "weights.npz", run_dir)
        (run_dir / "metrics.jsonl").write_text("not json\n{}\n")
    if setup == "bad_spec":
        (run_dir / "spec.yaml").write_text("version: 1\ngroups: 3\n")
    result = CliRunner().invoke(main, ["plot", str(run_dir)])
    assert result.exit_code == 2, result.output
    assert message in result.output and "Traceback" not in result.output


@pytest.mark.parametrize("args, message", [
    (["--units", "cell_stat"], "did you mean 'cell_state'?"),
    (["--units", "hidden"], "no run has hidden units"),
    (["--trial", "1"], "has 1 trial(s); there is no trial 1"),
    (["-o", "out.gif"], "no known extension"),
    # every step's values are kept: 12 GiB, refused before a step is drawn (not a memory error after)
    (["--steps", "1000000"], "1,000,000 steps of 1 network of gers2000_cerg would keep 11.9 GiB"),
])
def test_bad_options_exit_2(runs, args, message):
    result = CliRunner().invoke(main, ["plot", str(runs["cerg"]), *args])
    assert result.exit_code == 2 and message in result.output


def test_installed_command_has_help_and_no_traceback(tmp_path):
    script = Path(sys.executable).with_name("lstmgraph")
    help_text = subprocess.run([str(script), "plot", "--help"], capture_output=True, text=True, timeout=600)
    assert help_text.returncode == 0 and "RUN_DIR..." in help_text.stdout
    result = subprocess.run([str(script), "plot", str(tmp_path / "nowhere")], capture_output=True,
                            text=True, timeout=600)  # guards only
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert result.stderr.strip() == f"error: {tmp_path / 'nowhere'}: no such run directory"


def test_unwritable_output_exits_2_naming_the_file(runs, tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("")
    result = CliRunner().invoke(main, ["plot", str(runs["timing"]), "--steps", "5",
                                       "-o", str(blocker / "x.png")])
    assert result.exit_code == 2, result.output
    assert result.output == f"error: cannot write {blocker / 'x.png'}: {blocker} is a file, not a folder\n"


def test_default_panels_and_helpers():
    assert DEFAULT_PANELS[0] == "cell_state"
    np.testing.assert_allclose(moving_average(np.arange(5.0), 2), [0.5, 1.5, 2.5, 3.5])


def test_titles_do_not_repeat_and_the_loss_sits_in_the_title_row(runs):
    run = load_run(runs["cerg"])  # folder and network both named gers2000_cerg
    figure = draw_figure([run], [trace_run(run, steps=30)], panels=["output"])
    curve, outputs = figure.axes[0], figure.axes[1]
    assert curve.get_title() == f"gers2000_cerg, {run.steps_trained} steps"
    renamed = dataclasses.replace(run, path=run.path.with_name("peep"))
    figure = draw_figure([renamed], [trace_run(run, steps=30)], panels=["output"])
    assert figure.axes[0].get_title() == f"peep: gers2000_cerg, {run.steps_trained} steps"
    assert outputs.get_title(loc="right").startswith("loss/step ") and not outputs.texts


def test_a_run_that_records_no_learning_curve_gets_no_curve_row(runs, tmp_path):
    """A `reproduce` trial folder keeps weights but no metrics.jsonl: no empty curve panel; the
    run's title moves onto its first trace panel. A run with a curve beside it keeps the row."""
    run = load_run(runs["cerg"])
    bare = dataclasses.replace(run, path=tmp_path / "trial", metrics=read_metrics(None))
    trace = trace_run(run, steps=30)
    figure = draw_figure([bare], [trace], panels=["cell_state", "output"])
    assert len(figure.axes) == 2
    assert figure.axes[0].get_title() == f"trial: gers2000_cerg, {run.steps_trained} steps"
    assert figure.axes[0].get_title(loc="left") == "cell state s_c" and figure.axes[0].get_lines()
    beside = draw_figure([run, bare], [trace, trace], panels=["output"])
    assert len(beside.axes) == 4 and beside.axes[1].texts[0].get_text() == "no learning curve recorded"


def test_window_quantiles_give_each_window_its_spread():
    x = np.arange(1, 11) * 10
    ends, low, high = window_quantiles(x, np.arange(10.0), 4)
    np.testing.assert_array_equal(ends, [10, 40, 80, 100])  # windows rows 0-3, 4-7, 8-9
    np.testing.assert_allclose(low, [0.3, 0.3, 4.3, 8.1])
    np.testing.assert_allclose(high, [2.7, 2.7, 6.7, 8.9])


def test_a_few_tiny_losses_do_not_stretch_the_learning_curve(runs):
    run = load_run(runs["adding"])
    rows = 400
    rng = np.random.default_rng(0)
    per_step = 10.0 ** (np.linspace(-1, -3, rows) + rng.uniform(-0.3, 0.3, rows))
    per_step[::37] = 1e-12  # now and then a sequence with almost no loss
    steps = np.arange(1, rows + 1) * 10
    metrics = Metrics(np.arange(1, rows + 1), steps, per_step * 10, per_step, None)
    figure = draw_figure([dataclasses.replace(run, metrics=metrics)], [trace_run(run, steps=20)],
                         panels=["output"])
    curve = figure.axes[0]
    assert curve.get_yscale() == "log"
    assert curve.get_ylim()[0] > 1e-4  # the band is clipped to the mean curve's decades
    (band,) = curve.collections
    assert band.get_label() == "10-90 % of each window"


# -- one panel per gate; held-out data -------------------------------------------------------------

def _untrained(spec: str) -> "TrainedRun":
    """A bundled spec's initial weights as a run (no training needed to see its panels)."""
    import lstmgraph
    from lstmgraph.engine import initial_weights
    from lstmgraph.training.trained import TrainedRun

    plan = lstmgraph.compile_spec(SPECS / f"{spec}.yaml")
    return TrainedRun(SPECS / spec, plan, initial_weights(plan, [0]), "weights.npz", 0, read_metrics(None))


def _legend_labels(ax) -> list[str]:
    legend = ax.get_legend()
    return [text.get_text() for text in legend.get_texts()] if legend is not None else []


def test_a_gru_gets_a_panel_per_gate_and_hidden_group_each_with_a_legend():
    run = _untrained("gru")
    rows = panel_groups([run.plan])
    assert [panel for panel, _ in rows] == ["reset", "update", "candidate", "h", "output"]
    figure = draw_figure([run], [trace_run(run, steps=20)])
    titles = [ax.get_title(loc="left") for ax in figure.axes]
    assert titles == ["reset (gate)", "update (gate)", "candidate (hidden)", "h (hidden)", "output vs target"]
    assert _legend_labels(figure.axes[0]) == [f"reset[{i}]" for i in range(8)]
    assert _legend_labels(figure.axes[1]) == [f"update[{i}]" for i in range(8)]
    assert [len(_legend_labels(ax)) for ax in figure.axes[:4]] == [8, 8, 8, 8]


def test_a_modern_lstm_gets_a_panel_per_gate_each_with_a_legend():
    run = _untrained("modern_lstm")
    figure = draw_figure([run], [trace_run(run, steps=20)])
    by_title = {ax.get_title(loc="left"): ax for ax in figure.axes}
    for gate in ("input", "forget", "output"):
        assert _legend_labels(by_title[f"{gate} gate"]) == [f"lstm.{gate}_gate[{i}]" for i in range(8)]


def test_asking_for_the_gate_kind_gives_a_row_per_gate_and_side_by_side_runs_share_them():
    gru, lstm = _untrained("gru"), _untrained("modern_lstm")
    assert [panel for panel, _ in panel_groups([gru.plan], ["gate"])] == ["reset", "update"]
    rows = dict(panel_groups([gru.plan, lstm.plan], ["gate", "input_gate"]))
    assert rows["reset"] == [["reset"], []] and rows["input_gate"] == [[], ["lstm.input_gate"]]
    with pytest.raises(PlotError, match="no run has gate units"):
        panel_groups([lstm.plan], ["gate"])


def test_many_units_get_a_legend_in_columns():
    """Up to 24 lines a legend (two columns past 12); beyond, a count of the units."""
    from matplotlib.figure import Figure

    from lstmgraph.render.plots import _lines
    from lstmgraph.render.tracing import Trace

    for size, entries in ((16, 16), (30, 0)):
        trace = Trace(np.zeros((5, 1)), np.zeros((5, 1)), {"h": np.zeros((5, 1, size))}, np.zeros((5, 1)),
                      (0,), True, 0, "adding")
        ax = Figure().subplots()
        _lines(ax, trace, ["h"], 0)
        assert len(_legend_labels(ax)) == entries
        if entries:
            assert ax.get_legend()._ncols == 2
        else:
            assert [text.get_text() for text in ax.texts] == ["30 units"]


def _recall_file(path: Path, seed: int, count: int) -> Path:
    """Sequences of recall_first (gru's and rnn's task) in the training data format."""
    task = make_task("recall_first", {"n_inputs": 4, "n_classes": 3, "length": 8})
    rng = np.random.default_rng(seed)
    sequences = [task.sample(rng) for _ in range(count)]
    np.savez(path, inputs=np.concatenate([s.inputs for s in sequences]),
             targets=np.concatenate([s.targets for s in sequences]),
             starts=np.arange(count) * 8)
    return path


def test_held_out_data_is_traced_and_named(tmp_path):
    run = _untrained("gru")
    held_out = _recall_file(tmp_path / "held_out.npz", 7, 4)
    trace = trace_run(run, steps=20, data=held_out)
    with np.load(held_out) as arrays:
        np.testing.assert_array_equal(trace.inputs, arrays["inputs"][:20])
    assert trace.kind == "held-out data" and trace.starts == (0, 8, 16)
    figure = draw_figure([run], [trace])
    assert figure.axes[-1].get_xlabel() == f"step of 20 steps of held-out data {held_out}"


def test_a_run_trained_on_a_data_file_says_so_not_fresh(tmp_path):
    import lstmgraph
    from lstmgraph.engine import initial_weights
    from lstmgraph.render.tracing import describe
    from lstmgraph.training.trained import TrainedRun

    spec = yaml.safe_load((SPECS / "rnn.yaml").read_text())
    spec["training"].pop("task")
    spec["training"]["data"] = str(_recall_file(tmp_path / "train.npz", 1, 3))
    plan = lstmgraph.compile_plan(lstmgraph.spec_from_data(spec))
    run = TrainedRun(tmp_path, plan, initial_weights(plan, [0]), "weights.npz", 0, read_metrics(None))
    trace = trace_run(run, steps=30)  # the file's 24 steps, then again from its start
    assert trace.kind == "training data" and trace.starts == (0, 8, 16, 24)
    assert "30 steps of the run's training data train.npz (not held out)" in describe(run, trace)
    label = draw_figure([run], [trace]).axes[-1].get_xlabel()
    assert label == "step of 30 steps of the run's training data train.npz (not held out)"
    assert "fresh" not in label and "seed" not in label


def test_the_cli_plots_held_out_data(runs, tmp_path):
    import lstmgraph

    held_out = tmp_path / "held_out.npz"
    task = lstmgraph.compile_spec(SPECS / "gers2002_timing.yaml").training.task
    sequence = make_task(task.name, task.options).sample(np.random.default_rng(3))
    np.savez(held_out, inputs=sequence.inputs, targets=sequence.targets)
    result = CliRunner().invoke(main, ["plot", str(runs["timing"]), "--data", str(held_out), "--steps", "10",
                                       "-o", str(tmp_path / "p.png")])
    assert result.exit_code == 0, result.output
    assert f"10 steps of held-out data {held_out}" in result.output and "fresh" not in result.output
    bad = CliRunner().invoke(main, ["plot", str(runs["timing"]), "--data", str(tmp_path / "none.npz")])
    assert bad.exit_code == 2 and f"error: {tmp_path / 'none.npz'}: no such file" in bad.output


def test_a_reproduce_trial_is_named_by_its_seed_and_refuses_another_trial(runs, tmp_path):
    import json

    trial = tmp_path / "trials" / "5"
    shutil.copytree(runs["cerg"], trial)
    summary = json.loads((trial / "summary.json").read_text())
    (trial / "summary.json").write_text(json.dumps({**summary, "seed": 5}))
    _, (line,) = plot_runs([trial], tmp_path / "p.png", steps=20)
    assert ", trial 5;" in line
    with pytest.raises(PlotError, match="holds one network, trial 5 of its reproduce run: leave out --trial"):
        plot_runs([trial], tmp_path / "q.png", steps=20, trial=5)


def test_traced_steps_without_a_target_say_so_not_a_loss_of_0():
    """Before: 40 steps of the adding task (its one target at a sequence's end, 100 steps on)
    were described and titled "loss per step 0", as a perfect net would be."""
    from lstmgraph.render.tracing import describe

    run = _untrained("hochreiter1997_adding")
    trace = trace_run(run, steps=40)
    assert not trace.judged and "no targets in these steps, so no loss" in describe(run, trace)
    outputs = draw_figure([run], [trace], panels=["output"]).axes[-1]
    assert outputs.get_title(loc="right") == "no targets here"
    assert trace_run(run, steps=400).judged


def test_one_run_or_one_panel_given_alone_is_not_read_letter_by_letter(runs, tmp_path):
    """Before: plot_runs("runs/x") looked for the run directory "r", and panels="output"
    for the panel "o"."""
    written, lines = plot_runs(str(runs["timing"]), tmp_path / "one.png", steps=20, panels="output")
    assert written.read_bytes()[:8] == PNG_MAGIC and len(lines) == 1
    run = load_run(runs["timing"])
    figure = draw_figure([run], [trace_run(run, steps=20)], panels="output")
    assert len(figure.axes) == len(draw_figure([run], [trace_run(run, steps=20)], panels=["output"]).axes)


def test_trace_run_takes_a_loaded_run_and_says_how_to_load_one(runs):
    with pytest.raises(TypeError, match=r"trace_run takes a TrainedRun, not a str: trace_run\(load_run\(path\), ...\)"):
        trace_run(str(runs["timing"]), steps=10)
    for arguments, words in (({"steps": None}, "steps must be a whole number"), ({"seed": -1}, "seed must be at least 0")):
        with pytest.raises(PlotError, match=words):
            trace_run(load_run(runs["timing"]), **arguments)
