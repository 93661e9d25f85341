"""Figures of training runs, like the papers': learning curves and internal-state traces.

`load_run` reads a run directory (training.md: resolved spec, metrics, weights), every kind of
damage a `PlotError` naming the file; `trace_run` runs the trained weights forward with the
numpy engine on fresh steps of the run's own task, on its training data file, or on a held-out
data file (`sequence_source`); `draw_figure` lays the panels out, one column per run and one
row per panel (a gate or hidden group: a row each, with a legend); `plot_runs` does all of it
and writes one .png, .svg or .pdf. matplotlib is imported only to draw (its Agg
renderer, through `Figure`; pyplot and its global state are never touched).
"""

from __future__ import annotations

import io
import math
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Literal, Sequence

import numpy as np

from ..engine.simulator import Simulator
from ..arrays import ArrayFileError, numbers, read_npz
from ..engine.weights import Weights, WeightsError, load_weights
from ..errors import did_you_mean
from ..files import NotAFile, own_file_exists, write_atomically
from ..plan import Plan
from ..tasks import Sequence as TaskSequence
from ..tasks import TaskError, make_task, unit_symbols
from ..training.data import DataError, DataFile
from ..training.rundir import RunDirectory, RunDirectoryError, read_metric_rows
from ..training.run import compile_spec_bytes
from ..training.trainer import training_section

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

#: Panel kinds for ``--units``: each shows every unit group with one of these roles.
PANELS: dict[str, tuple[str, ...]] = {
    "cell_state": ("state",),
    "input_gate": ("input_gate",),
    "forget_gate": ("forget_gate",),
    "output_gate": ("output_gate",),
    "cell_input": ("cell_input",),
    "squashed_state": ("squashed_state",),
    "cell_output": ("cell_output",),
    "gate": ("gate",),
    "hidden": ("hidden",),
    "input": ("input",),
    "output": ("output",),
}
#: Drawn when no panels are asked for; rows that no run has are left out.
DEFAULT_PANELS: tuple[str, ...] = (
    "cell_state", "input_gate", "forget_gate", "output_gate", "gate", "hidden", "output")
#: Panel kinds drawn as one row per unit group (a GRU's reset and update gates apart), where
#: the memory-block kinds gather every block's port of that kind in one row.
PER_GROUP: tuple[str, ...] = ("gate", "hidden")
FORMATS: tuple[str, ...] = (".png", ".svg", ".pdf")
_TITLES = {"cell_state": "cell state s_c", "input_gate": "input gate", "forget_gate": "forget gate",
           "output_gate": "output gate", "cell_input": "cell input g", "squashed_state": "h(s_c)",
           "cell_output": "cell output", "gate": "gate", "hidden": "hidden", "input": "input",
           "output": "output vs target"}
_MAX_LINES_WITH_LEGEND = 24    # in columns of at most 12
_LEGEND_COLUMN = 12
_MAX_LINE_OUTPUTS = 4          # more outputs are drawn as a heat map
_MAX_LABELLED_STEPS = 120      # input symbols under the steps up to this length
_MAX_MARKED_STEPS = 300        # heat maps mark the targets up to this length


class PlotError(Exception):
    """A run directory that cannot be plotted, or a request that does not fit it."""


#: Where traced or judged sequences come from: the run's task (fresh draws from a seed), the
#: run's own training data file, or a data file given for the purpose (held out).
DataKind = Literal["task", "training data", "held-out data"]


@dataclass(frozen=True)
class SequenceSource:
    """`sequence_source`'s answer: ``draw()`` gives the next sequence (None after a data
    file's last), whether they form one continual stream, the task's name or the data file,
    which kind of data it is, and the task's `unit_symbols` ((None, None) for a file)."""

    draw: Callable[[], TaskSequence | None]
    continual: bool
    source: str
    kind: DataKind
    symbols: tuple


def describe_data(kind: DataKind, source: str, seed: int, count: int, unit: str) -> str:
    """``count`` ``unit``s (e.g. 200 steps) of the data, in words that say which data it is."""
    if kind == "task":
        return f"{count} fresh {unit} of {source} (seed {seed})"
    if kind == "training data":
        return f"{count} {unit} of the run's training data {source} (not held out)"
    return f"{count} {unit} of held-out data {source}"


@dataclass(frozen=True)
class Metrics:
    """The metric rows of a run (metrics.jsonl), one per trained sequence."""

    sequence: np.ndarray        # (rows,)
    step: np.ndarray            # (rows,) steps trained at the end of the sequence
    loss: np.ndarray            # (rows,) summed over the sequence, mean over the trials
    loss_per_step: np.ndarray   # (rows,)
    loss_trials: np.ndarray | None  # (rows, trials) summed loss of each trial; None for one

    def __len__(self) -> int:
        return len(self.step)

    def curves(self, per_step: bool = True) -> np.ndarray:
        """Loss per row and trial (rows, trials): per step, or summed over the sequence."""
        values = self.loss[:, None] if self.loss_trials is None else self.loss_trials
        if not per_step:
            return values
        lengths = np.diff(np.concatenate([[0], self.step])) if len(self.step) else self.step
        return values / np.maximum(lengths, 1)[:, None]


@dataclass(frozen=True)
class Run:
    """A run directory, read: the compiled resolved spec, its weights and metrics."""

    path: Path
    plan: Plan
    weights: Weights            # connection -> (trials, *shape)
    weights_file: str           # "weights.npz", or "checkpoint.npz" for an unfinished run
    steps_trained: int
    metrics: Metrics

    @property
    def trials(self) -> int:
        return next(iter(self.weights.values())).shape[0]


@dataclass(frozen=True)
class Trace:
    """The trained network run forward on fresh data; every array has a trial axis."""

    inputs: np.ndarray                # (T, n_inputs)
    targets: np.ndarray               # (T, n_outputs), NaN where there is no target
    signals: dict[str, np.ndarray]    # unit group (inputs included) -> (T, trials, size)
    loss: np.ndarray                  # (T, trials) loss of each step
    starts: tuple[int, ...]           # first step of each sequence
    reset: bool                       # activations set to zero at each start (else only at 0)
    seed: int
    source: str                       # task name, or the data file's name
    input_symbols: tuple[str, ...] | None = None   # the task's names of its input units
    output_symbols: tuple[str, ...] | None = None  # and of its output units (all output groups)
    kind: DataKind = "task"           # which data the source is (`describe_data`)

    @property
    def steps(self) -> int:
        return len(self.inputs)


# -- reading a run --------------------------------------------------------------------------------
def load_run(path: str | Path) -> Run:
    """Read a run directory. `PlotError` naming the file if it is not one, or a file is
    missing, a symbolic link, damaged, of another network or holds NaN or infinite weights;
    `SpecError` if its spec.yaml does not compile."""
    path = Path(path)
    if not path.is_dir():
        raise PlotError(f"{path}: no such run directory")
    directory = RunDirectory(path)
    if not _own_file(path / "spec.yaml"):
        raise PlotError(f"{path} is not a run directory (no spec.yaml; 'lstmgraph train SPEC --out DIR' "
                        f"writes one, 'lstmgraph reproduce' one per trial in OUT/trials/SEED)")
    try:
        spec_bytes = directory.read_spec()
    except RunDirectoryError as error:
        raise PlotError(str(error)) from None
    plan = compile_spec_bytes(path / "spec.yaml", spec_bytes)
    if _own_file(path / "weights.npz"):
        try:
            weights = load_weights(path / "weights.npz", plan)
        except WeightsError as error:
            raise PlotError(str(error)) from None
        weights_file = "weights.npz"
    elif _own_file(path / "checkpoint.npz"):
        weights = _checkpoint_weights(path / "checkpoint.npz", plan)
        weights_file = "checkpoint.npz"
    else:
        raise PlotError(f"{path} holds no weights.npz or checkpoint.npz: the run has saved no weights yet")
    for name, values in weights.items():
        try:
            numbers(path / weights_file, f"'{name}'", values)
        except ArrayFileError as error:
            raise PlotError(f"{error} (damaged: a run saves no such weights)") from None
    # A reproduce trial keeps no learning curve, only its result row (summary.json).
    metrics_file = path / "metrics.jsonl"
    trials = next(iter(weights.values())).shape[0]
    metrics = read_metrics(metrics_file, trials) if _own_file(metrics_file) else read_metrics(None)
    return Run(path, plan, weights, weights_file, _steps_trained(directory, metrics), metrics)


def _own_file(path: Path) -> bool:
    """Whether ``path``, a file of a run directory, exists; a symbolic link (never followed out
    of the folder) or anything but a regular file (a FIFO would block a reader) is refused."""
    try:
        return own_file_exists(path)
    except NotAFile as refused:
        raise PlotError(f"{path}: {refused.strerror}") from None
    except OSError as error:
        raise PlotError(f"{path}: cannot read it ({error.strerror or error})") from None


def read_metrics(path: str | Path | None, trials: int | None = None) -> Metrics:
    """Read metrics.jsonl (None: no rows), each row checked as a resume checks it
    (`rundir.read_metric_rows`; ``trials``, if known, is how many losses a row holds); a last
    line cut short by a running trainer is skipped. `PlotError` naming the file and line."""
    try:
        rows = read_metric_rows(Path(path), trials) if path is not None else []
    except RunDirectoryError as error:
        raise PlotError(str(error)) from None
    columns = [[row[key] for row in rows] for key in ("sequence", "step", "loss", "loss_per_step")]
    per_trial = [row.get("loss_trials") for row in rows]
    loss_trials = (np.array(per_trial, dtype=np.float64)
                   if per_trial and all(t is not None for t in per_trial) else None)
    return Metrics(np.array(columns[0], dtype=np.int64), np.array(columns[1], dtype=np.int64),
                   np.array(columns[2], dtype=np.float64), np.array(columns[3], dtype=np.float64),
                   loss_trials)


def _checkpoint_weights(path: Path, plan: Plan) -> Weights:
    try:
        stored = {name[len("weights/"):]: array for name, array in read_npz(path).items()
                  if name.startswith("weights/")}
    except ArrayFileError as error:
        raise PlotError(str(error)) from None
    missing = [c.name for c in plan.connections if c.name not in stored]
    if missing:
        raise PlotError(f"{path}: does not fit network '{plan.name}'; missing: {_listed(missing)}")
    for name in (c.name for c in plan.connections):
        if stored[name].dtype.kind not in "biuf":
            raise PlotError(f"{path}: '{name}' holds {stored[name].dtype} values, not real numbers")
    weights = {c.name: np.asarray(stored[c.name], dtype=np.float64) for c in plan.connections}
    if len({values.shape[0] if values.ndim else 0 for values in weights.values()}) != 1:
        raise PlotError(f"{path}: its weight arrays disagree on the number of trials")
    for connection in plan.connections:
        if weights[connection.name].shape[1:] != connection.shape:
            raise PlotError(f"{path}: '{connection.name}' has shape {weights[connection.name].shape}, "
                            f"expected (trials, {', '.join(map(str, connection.shape))})")
    return weights


def _listed(names: list[str], shown: int = 5) -> str:
    """The first ``shown`` names, and how many more."""
    return ", ".join(names[:shown]) + (f" and {len(names) - shown} more" if len(names) > shown else "")


def _steps_trained(directory: RunDirectory, metrics: Metrics) -> int:
    """The steps summary.json says were trained (a finished run's, or a reproduce trial's row),
    read with the run directory's bounds; without one, the last metrics row's."""
    path = directory.path / "summary.json"
    if not _own_file(path):
        return int(metrics.step[-1]) if len(metrics) else 0
    try:
        summary = directory.read_json("summary.json")
    except RunDirectoryError as error:
        raise PlotError(str(error)) from None
    steps = summary.get("steps") if isinstance(summary, dict) else None
    if type(steps) is not int or steps < 0:
        raise PlotError(f"{path}: 'steps' is missing or not an integer >= 0; expected the steps trained "
                        "(restore the file, or delete it to count the steps from metrics.jsonl)")
    return steps


# -- running it forward -----------------------------------------------------------------------------
def trace_run(run: Run, steps: int = 200, seed: int = 0, data: str | Path | None = None) -> Trace:
    """Run the trained weights (every trial) over ``steps`` steps of the run's data, or of the
    data file ``data`` (held-out data in the training data format, lstmgraph/training/data.py).

    A task's sequences are drawn from ``numpy.random.default_rng(seed)``, laid end to end as
    `lstmgraph.tasks.concatenated` does (a stream other than the training stream, which is
    seeded with ``[seed, 2000]``); a data file's sequences are taken from its start, in order.
    Activations start at zero and are reset at each sequence as in training (the spec's
    ``reset``, else only for tasks that are not continual).
    """
    if steps < 1:
        raise PlotError(f"steps must be at least 1, not {steps}")
    training = training_section(run.plan)
    sim = Simulator(run.plan)
    sequences, origin = _fresh_sequences(run, sim, steps, seed, data)
    continual = origin.continual
    reset = training.reset == "sequence" if training.reset else not continual
    state, records, losses, starts, done = None, [], [], [], 0
    with np.errstate(over="ignore", invalid="ignore"):  # a diverging net is drawn, not refused
        for sequence in sequences:
            if reset or state is None:
                state = sim.zero_state(run.trials)
            part, state = sim.run(run.weights, sequence.inputs, state)
            for record, target in zip(part, sequence.targets):
                losses.append(sim.loss(record, target, training.loss))
            records.extend(part)
            starts.append(done)
            done += len(sequence)
    inputs = np.concatenate([s.inputs for s in sequences])
    targets = np.concatenate([s.targets for s in sequences])
    signals = {unit.name: np.stack([r.y[unit.name] for r in records]) for unit in sim.inputs}
    signals.update(sim.signals(records))
    return Trace(inputs, targets, signals, np.array(losses), tuple(starts), reset, seed, origin.source,
                 *origin.symbols, kind=origin.kind)


def sequence_source(run: Run, sim: Simulator, seed: int, epochs: int | None = None,
                    data: str | Path | None = None) -> SequenceSource:
    """Where a run's sequences come from: the file ``data`` if given (held-out data, in the
    training data format), else fresh sequences of the run's task from
    ``numpy.random.default_rng(seed)``, else the run's own training data file. A file's
    sequences come in order from its start, ``epochs`` passes (None for no end; `draw` returns
    None after the last). `PlotError` for a file that cannot be read or does not fit the net."""
    training = training_section(run.plan)
    if data is None and training.task is not None:
        try:
            task = make_task(training.task.name, training.task.options)
        except TaskError as error:
            raise PlotError(f"{run.path / 'spec.yaml'}: {error}") from None
        rng = np.random.default_rng(seed)
        return SequenceSource(lambda: task.sample(rng), task.continual, task.name, "task", unit_symbols(task))
    # The run's own file was joined to the folder of its spec.yaml when that was compiled.
    path, kind = (Path(data), "held-out data") if data is not None else (Path(training.data), "training data")
    try:
        file = DataFile(path, sim.n_inputs, sim.n_outputs, epochs=epochs)
    except DataError as error:
        raise PlotError(str(error)) from None
    continual = file.continual
    if training.task is not None:  # held-out data of a task: a stream if the task's is one
        try:
            continual = make_task(training.task.name, training.task.options).continual
        except TaskError as error:
            raise PlotError(f"{run.path / 'spec.yaml'}: {error}") from None
    return SequenceSource(file.next, continual, str(path) if data is not None else path.name, kind, (None, None))


def _fresh_sequences(run: Run, sim: Simulator, steps: int, seed: int, data: str | Path | None = None
                     ) -> tuple[list[TaskSequence], SequenceSource]:
    """Sequences of the run's task or data file (or ``data``), cut to ``steps`` steps in all,
    and where they come from."""
    origin = sequence_source(run, sim, seed, data=data)
    sequences, count = [], 0
    while count < steps:
        sequence = origin.draw()
        keep = min(len(sequence), steps - count)
        if keep < len(sequence):
            sequence = TaskSequence(sequence.inputs[:keep], sequence.targets[:keep])
        sequences.append(sequence)
        count += keep
    return sequences, origin


# -- choosing the panels ----------------------------------------------------------------------------
def panel_groups(plans: Sequence[Plan], panels: Sequence[str] | None = None
                 ) -> list[tuple[str, list[list[str]]]]:
    """The trace rows: (panel, the unit groups it shows in each plan).

    A panel is a kind of `PANELS` or a unit group's name; a kind of `PER_GROUP` gives a row
    per group of that kind (named by the group). With ``panels=None`` the `DEFAULT_PANELS` are
    used and rows that no plan has are left out; a panel asked for by name that no plan has
    raises `PlotError`.
    """
    strict = panels is not None
    names = {unit.name for plan in plans for unit in plan.units if unit.role != "bias"}
    rows = []
    for panel in (DEFAULT_PANELS if panels is None else panels):
        if panel in PER_GROUP:  # a row per group of that kind, in the order the plans give them
            found = list(dict.fromkeys(u.name for plan in plans for u in plan.units if u.role in PANELS[panel]))
            if not found and strict:
                raise PlotError(f"no run has {panel} units")
            rows += [(name, [[name] if name in plan.unit else [] for plan in plans]) for name in found]
            continue
        if panel in PANELS:
            groups = [[u.name for u in plan.units if u.role in PANELS[panel]] for plan in plans]
        elif panel in names:
            groups = [[panel] if panel in plan.unit else [] for plan in plans]
        else:
            close = did_you_mean(panel, [*PANELS, *names])
            raise PlotError(f"unknown panel {panel!r}: give one of {', '.join(PANELS)} or a unit "
                            f"group's name" + (f"; did you mean {close!r}?" if close else ""))
        if any(groups):
            rows.append((panel, groups))
        elif strict:
            raise PlotError(f"no run has {panel} units")
    return rows


# -- drawing --------------------------------------------------------------------------------------------
def draw_figure(runs: Sequence[Run], traces: Sequence[Trace], panels: Sequence[str] | None = None,
                trial: int = 0, curve_x: str = "step", per_step: bool = True) -> "Figure":
    """One column per run: its learning curve on top, then a row per trace panel. Line panels
    of a row share their y range, so runs compare at a glance."""
    from matplotlib.figure import Figure

    if len(runs) != len(traces) or not runs:
        raise ValueError("give one trace per run, and at least one run")
    for run in runs:
        if not 0 <= trial < run.trials:
            raise PlotError(f"{run.path} has {run.trials} trial(s); there is no trial {trial}")
    rows = panel_groups([run.plan for run in runs], panels)
    # A row of learning curves unless no run records one (a `reproduce` trial keeps only its
    # weights): then each column's title sits on its first trace panel.
    curves = int(any(len(run.metrics) or (run.path / "metrics.jsonl").is_file() for run in runs))
    figure = Figure(figsize=(1.5 + 5.5 * len(runs), 1.0 + 2.1 * (curves + len(rows))), layout="constrained")
    axes = figure.subplots(curves + len(rows), len(runs), squeeze=False)
    for column, (run, trace) in enumerate(zip(runs, traces)):
        if curves:
            _learning_curve(axes[0, column], run, curve_x, per_step)
        else:
            axes[0, column].set_title(_run_title(run), fontsize=10)
        drawn: list[Axes] = []  # the column's trace panels with data; they share one x axis
        for row, (panel, groups) in enumerate(rows, start=curves):
            ax = axes[row, column]
            ax.set_title(_panel_title(panel, runs), fontsize=9, loc="left")
            if not groups[column]:
                ax.text(0.5, 0.5, f"no {panel.replace('_', ' ')} units", ha="center", va="center",
                        transform=ax.transAxes, color="grey")
                ax.tick_params(left=False, bottom=False, labelleft=False, labelbottom=False)
                continue
            if drawn:
                ax.sharex(drawn[0])
            if all(run.plan.unit[g].role == "output" for g in groups[column]):
                _outputs(ax, run, trace, groups[column], trial)
            else:
                _lines(ax, trace, groups[column], trial)
            _sequence_marks(ax, trace)
            drawn.append(ax)
        for ax in drawn[:-1]:
            ax.tick_params(labelbottom=False)
        if drawn:
            drawn[-1].set_xlabel("step of " + describe_data(trace.kind, trace.source, trace.seed, trace.steps, "steps"))
            if _symbol_ticks(drawn[-1], trace):
                for ax in drawn:
                    ax.grid(False, axis="x")  # a grid line per step would hide the sequence marks
    for row in range(len(axes)):
        _share_line_limits(list(axes[row]))
    return figure


def _panel_title(panel: str, runs: Sequence[Run]) -> str:
    """A kind's title (`_TITLES`), or a group's name with its kind: "reset (gate)"."""
    if panel in _TITLES:
        return _TITLES[panel]
    role = next((run.plan.unit[panel].role for run in runs if panel in run.plan.unit), None)
    return panel if role is None or role == panel else f"{panel} ({role.replace('_', ' ')})"


def _run_title(run: Run) -> str:
    """The run folder's name (and the network's where the folder does not already say it),
    the steps trained, the trials."""
    trial_note = "" if run.trials == 1 else f", {run.trials} trials"
    name = run.path.name if run.plan.name in run.path.name else f"{run.path.name}: {run.plan.name}"
    return (f"{name}, {run.steps_trained} steps{trial_note}"
            + ("" if run.weights_file == "weights.npz" else " (unfinished: checkpoint weights)"))


def _learning_curve(ax: "Axes", run: Run, curve_x: str, per_step: bool) -> None:
    metrics = run.metrics
    ax.set_title(_run_title(run), fontsize=10)
    ax.set_xlabel("steps" if curve_x == "step" else "sequences")
    ax.set_ylabel("loss per step" if per_step else "loss per sequence")
    if not len(metrics):
        note = "no metric rows yet" if (run.path / "metrics.jsonl").is_file() else "no learning curve recorded"
        ax.text(0.5, 0.5, note, ha="center", va="center", transform=ax.transAxes)
        return
    x = metrics.step if curve_x == "step" else metrics.sequence
    values = metrics.curves(per_step)
    window = max(1, len(x) // 50)
    curves = [moving_average(values[:, index], window) for index in range(values.shape[1])]
    finite = np.concatenate(curves)
    finite = finite[np.isfinite(finite)]
    log = bool(finite.size and finite.min() > 0 and finite.max() / finite.min() > 10)
    for index, curve in enumerate(curves):
        label = (f"trial {index}" if values.shape[1] > 1
                 else "each sequence" if window == 1 else f"mean of {window} sequences")
        line = ax.plot(x[window - 1:], curve, linewidth=1.4, zorder=3, label=label)[0]
        if window > 1 and values.shape[1] == 1:
            ends, low, high = window_quantiles(x, values[:, index], window)
            if log:  # a sequence with a loss of 1e-12 would stretch the axis over the curve
                low = np.maximum(low, 10.0 ** np.floor(np.log10(finite.min())))
            ax.fill_between(ends, low, high, step="pre", alpha=0.2, linewidth=0,
                            color=line.get_color(), label="10-90 % of each window")
    if log:
        ax.set_yscale("log")
    if values.shape[1] <= _MAX_LINES_WITH_LEGEND:
        ax.legend(fontsize=6, loc="upper left", bbox_to_anchor=(1.0, 1.0), frameon=False)  # off the curve
    ax.grid(True, which="major", alpha=0.3)


def window_quantiles(x: np.ndarray, values: np.ndarray, window: int, quantiles=(0.1, 0.9)
                     ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The spread of the values in consecutive windows of ``window`` rows (the last one
    shorter): x at each window's start and end, and the two quantiles of each window; drawn as
    steps, one per window, from its first x to its last."""
    starts = np.arange(0, len(values), window)
    low = np.array([np.nanquantile(values[a:a + window], quantiles[0]) for a in starts])
    high = np.array([np.nanquantile(values[a:a + window], quantiles[1]) for a in starts])
    ends = x[np.minimum(starts + window, len(values)) - 1]
    return np.concatenate([[x[0]], ends]), np.concatenate([low[:1], low]), np.concatenate([high[:1], high])


def moving_average(values: np.ndarray, window: int) -> np.ndarray:
    """Means of ``window`` consecutive values (len(values) - window + 1 of them)."""
    sums = np.cumsum(np.concatenate([[0.0], np.asarray(values, dtype=np.float64)]))
    return (sums[window:] - sums[:-window]) / window


def _lines(ax: "Axes", trace: Trace, groups: list[str], trial: int) -> None:
    steps = np.arange(trace.steps)
    count = 0
    for group in groups:
        values = trace.signals[group][:, trial, :]
        for unit in range(values.shape[1]):
            ax.plot(steps, values[:, unit], linewidth=1.0, label=f"{group}[{unit}]")
            count += 1
    if count <= _MAX_LINES_WITH_LEGEND:
        ax.legend(fontsize=6, loc="upper left", bbox_to_anchor=(1.0, 1.0), frameon=False,
                  ncols=-(-count // _LEGEND_COLUMN))
    else:
        ax.text(1.01, 1.0, f"{count} units", transform=ax.transAxes, fontsize=6, va="top")
    ax.grid(True, alpha=0.3)
    ax.margins(x=0)


def _outputs(ax: "Axes", run: Run, trace: Trace, groups: list[str], trial: int) -> None:
    """Outputs against targets: lines for a few outputs, else a heat map with target dots; the
    task's output symbols, if it names them, label the units."""
    outputs = [u for u in run.plan.units if u.role == "output"]
    first = dict(zip((u.name for u in outputs), np.cumsum([0] + [u.size for u in outputs])))
    values = np.concatenate([trace.signals[g][:, trial, :] for g in groups], axis=1)
    targets = np.concatenate([trace.targets[:, first[g]:first[g] + run.plan.unit[g].size]
                              for g in groups], axis=1)
    units = [(g, i) for g in groups for i in range(run.plan.unit[g].size)]
    symbols = trace.output_symbols
    if symbols is not None and len(symbols) != trace.targets.shape[1]:
        symbols = None
    names = [f"{g}[{i}]" + (f" {symbols[first[g] + i]}" if symbols else "") for g, i in units]
    steps = np.arange(trace.steps)
    loss = float(np.mean(trace.loss[:, trial]))
    if values.shape[1] <= _MAX_LINE_OUTPUTS:
        for index, name in enumerate(names):
            line = ax.plot(steps, values[:, index], linewidth=1.2, label=name)[0]
            target = targets[:, index]
            dense = np.isfinite(target).mean() >= 0.5
            ax.plot(steps, target, linestyle="--" if dense else "none", marker=None if dense else "x",
                    color=line.get_color(), linewidth=1.0, alpha=0.8, label=f"{name} target")
        ax.legend(fontsize=6, loc="upper left", bbox_to_anchor=(1.0, 1.0), frameon=False)
        ax.grid(True, alpha=0.3)
        ax.margins(x=0)
    else:
        image = ax.imshow(values.T, aspect="auto", interpolation="nearest", cmap="viridis",
                          origin="lower", extent=(-0.5, trace.steps - 0.5, -0.5, values.shape[1] - 0.5))
        ax.figure.colorbar(image, cax=ax.inset_axes((1.01, 0.0, 0.015, 1.0)))
        if trace.steps <= _MAX_MARKED_STEPS:  # beyond, the marks hide the outputs
            hot = np.argwhere(np.nan_to_num(targets, nan=0.0) >= 0.5)
            ax.scatter(hot[:, 0], hot[:, 1], s=6, facecolors="none", edgecolors="red",
                       linewidths=0.6, label="target 1")
        labels = [symbols[first[g] + i] for g, i in units] if symbols else [str(i) for i in range(len(units))]
        ax.set_yticks(range(len(units)), labels, fontsize=6)
    # In the title row, where it covers neither the curves nor a legend.
    ax.set_title(f"loss/step {loss:.4g}", fontsize=8, loc="right")


def _sequence_marks(ax: "Axes", trace: Trace) -> None:
    """Vertical lines where sequences begin: solid where activations were reset."""
    if len(trace.starts) > 60:
        return
    for start in trace.starts[1:]:
        ax.axvline(start - 0.5, color="grey", linewidth=0.6 if trace.reset else 0.4,
                   linestyle="-" if trace.reset else ":", alpha=0.7)


def _symbol_ticks(ax: "Axes", trace: Trace) -> bool:
    """For a task that names its input symbols and a short trace, write each step's symbol under it."""
    symbols = trace.input_symbols
    if symbols is None or len(symbols) != trace.inputs.shape[1] or trace.steps > _MAX_LABELLED_STEPS:
        return False
    ax.set_xticks(range(trace.steps), [symbols[int(i)] for i in trace.inputs.argmax(axis=1)], fontsize=5)
    return True


def _share_line_limits(axes: list["Axes"]) -> None:
    """Give line panels of one row the same y range (heat maps and empty panels keep theirs)."""
    lined = [ax for ax in axes if ax.get_lines() and not ax.get_images()]
    if len(lined) < 2:
        return
    if len({ax.get_yscale() for ax in lined}) > 1:
        lowest = [np.nanmin(np.concatenate([line.get_ydata() for line in ax.get_lines()])) for ax in lined]
        if min(lowest) <= 0:
            return
        for ax in lined:
            ax.set_yscale("log")
    lows, highs = zip(*(ax.get_ylim() for ax in lined))
    low, high = min(lows), max(highs)
    if all(math.isfinite(v) for v in (low, high)):
        for ax in lined:
            ax.set_ylim(low, high)


def save_figure(figure: "Figure", path: str | Path, dpi: int = 100) -> Path:
    """Write the figure atomically; its extension (.png, .svg, .pdf) picks the format."""
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix not in FORMATS:
        raise PlotError(f"'{path}' has no known extension; use {', '.join(FORMATS)}")
    buffer = io.BytesIO()
    metadata = {"png": {"Software": None}, "svg": {"Date": None}, "pdf": {"CreationDate": None}}
    figure.savefig(buffer, format=suffix[1:], dpi=dpi, metadata=metadata[suffix[1:]])
    write_atomically(path, buffer.getvalue())
    return path


def describe(run: Run, trace: Trace, trial: int = 0) -> str:
    """One line on what the trace shows: the loss and the range of the cell states."""
    states = [trace.signals[u.name][:, trial] for u in run.plan.units if u.role == "state"]
    text = (f"{run.path}: {run.plan.name}, {run.steps_trained} steps trained, trial {trial}; "
            + describe_data(trace.kind, trace.source, trace.seed, trace.steps, "steps")
            + f": loss per step {float(np.mean(trace.loss[:, trial])):.4g}")
    if states:
        values = np.concatenate(states, axis=1)
        text += f", cell states in [{np.min(values):.3g}, {np.max(values):.3g}]"
    if run.weights_file != "weights.npz":
        text += f" (unfinished run: weights of {run.weights_file})"
    return text


def plot_runs(paths: Sequence[str | Path], output: str | Path | None = None, steps: int = 200,
              seed: int = 0, panels: Sequence[str] | None = None, trial: int = 0,
              curve_x: str = "step", per_step: bool = True, dpi: int = 100, data: str | Path | None = None
              ) -> tuple[Path, list[str]]:
    """Load, trace (on ``data``, a held-out data file, if given) and draw the runs; write the
    figure (default: the first run's plots.png). Returns the file written and a `describe`
    line per run."""
    if not paths:
        raise PlotError("give at least one run directory")
    output = Path(output) if output is not None else Path(paths[0]) / "plots.png"
    if output.suffix.lower() not in FORMATS:
        raise PlotError(f"'{output}' has no known extension; use {', '.join(FORMATS)}")
    runs = [load_run(path) for path in paths]
    panel_groups([run.plan for run in runs], panels)  # unknown panels fail before the slow part
    for run in runs:
        if not 0 <= trial < run.trials:
            raise PlotError(f"{run.path} has {run.trials} trial(s); there is no trial {trial}")
    traces = [trace_run(run, steps, seed, data) for run in runs]
    figure = draw_figure(runs, traces, panels, trial, curve_x, per_step)
    return save_figure(figure, output, dpi), [describe(run, trace, trial) for run, trace in zip(runs, traces)]
