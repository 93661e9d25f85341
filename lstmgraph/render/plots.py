"""Figures of training runs, like the papers': learning curves and internal-state traces.

`load_run` (`training.trained`) reads a run directory, every kind of damage a `TrainedRunError`
naming the file; `trace_run` (`tracing`) runs the trained weights forward; `draw_figure` lays
the panels out, one column per run and one row per panel (a gate or hidden group: a row each,
with a legend); `plot_runs` does all of it and writes one .png, .svg or .pdf. matplotlib is
imported only to draw (its Agg renderer, through `Figure`; pyplot and its global state are
never touched).
"""

from __future__ import annotations

import io
import os
import math
from pathlib import Path
from typing import TYPE_CHECKING, Sequence

import numpy as np

from ..errors import did_you_mean
from ..files import write_atomically
from ..layouts import check_not_own_file
from ..plan import Plan
from ..training.trained import TrainedRun, describe_data, load_run
from ..training.rundir import RunDirectory
from .tracing import PlotError, Trace, describe, trace_run

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


# -- choosing the panels ----------------------------------------------------------------------------
def panel_groups(plans: Sequence[Plan], panels: Sequence[str] | None = None
                 ) -> list[tuple[str, list[list[str]]]]:
    """The trace rows: (panel, the unit groups it shows in each plan).

    A panel is a kind of `PANELS` or a unit group's name; a kind of `PER_GROUP` gives a row
    per group of that kind (named by the group). With ``panels=None`` the `DEFAULT_PANELS` are
    used and rows that no plan has are left out; a panel asked for by name that no plan has
    raises `PlotError`. One panel may be given as a string.
    """
    strict = panels is not None
    panels = [panels] if isinstance(panels, str) else panels  # (not its letters)
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
def draw_figure(runs: Sequence[TrainedRun], traces: Sequence[Trace], panels: Sequence[str] | None = None,
                trial: int = 0, curve_x: str = "step", per_step: bool = True) -> "Figure":
    """One column per run: its learning curve on top, then a row per trace panel. Line panels
    of a row share their y range, so runs compare at a glance."""
    from matplotlib.figure import Figure

    if len(runs) != len(traces) or not runs:
        raise ValueError("give one trace per run, and at least one run")
    for run in runs:
        check_trial(run, trial)
    rows = panel_groups([run.plan for run in runs], panels)
    # A row of learning curves unless no run records one (a `reproduce` trial keeps only its
    # weights): then each column's title sits on its first trace panel.
    curves = int(any(len(run.metrics) or (run.path / RunDirectory.METRICS_JSONL).is_file() for run in runs))
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


def _panel_title(panel: str, runs: Sequence[TrainedRun]) -> str:
    """A kind's title (`_TITLES`), or a group's name with its kind: "reset (gate)"."""
    if panel in _TITLES:
        return _TITLES[panel]
    role = next((run.plan.unit[panel].role for run in runs if panel in run.plan.unit), None)
    return panel if role is None or role == panel else f"{panel} ({role.replace('_', ' ')})"


def _run_title(run: TrainedRun) -> str:
    """The run folder's name (and the network's where the folder does not already say it),
    the steps trained, the trials."""
    trial_note = "" if run.trials == 1 else f", {run.trials} trials"
    name = (f"trial {run.seed}: {run.plan.name}" if run.seed is not None else run.path.name
            if run.plan.name in run.path.name else f"{run.path.name}: {run.plan.name}")
    return (f"{name}, {run.steps_trained} steps{trial_note}"
            + ("" if run.weights_file == RunDirectory.WEIGHTS else " (unfinished: checkpoint weights)"))


def _learning_curve(ax: "Axes", run: TrainedRun, curve_x: str, per_step: bool) -> None:
    from matplotlib.ticker import EngFormatter, MaxNLocator

    metrics = run.metrics
    ax.set_title(_run_title(run), fontsize=10)
    ax.set_xlabel("steps" if curve_x == "step" else "sequences")
    # At most 6 short labels ("17.5k"): a narrow column of several runs ran "15000" and "17500" together.
    ax.xaxis.set_major_locator(MaxNLocator(nbins=5, integer=True))
    ax.xaxis.set_major_formatter(EngFormatter(sep=""))
    ax.set_ylabel("loss per step" if per_step else "loss per sequence")
    if not len(metrics):
        recorded = (run.path / RunDirectory.METRICS_JSONL).is_file()
        note = "no metric rows yet" if recorded else "no learning curve recorded"
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


def _outputs(ax: "Axes", run: TrainedRun, trace: Trace, groups: list[str], trial: int) -> None:
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
    ax.set_title(f"loss/step {loss:.4g}" if trace.judged else "no targets here", fontsize=8, loc="right")


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


def check_figure_path(path: Path) -> str:
    """The figure file's extension, one of `FORMATS`, which picks its format; else `PlotError`."""
    suffix = path.suffix.lower()
    if suffix not in FORMATS:
        raise PlotError(f"'{path}' has no known extension; use {', '.join(FORMATS)}")
    return suffix


def save_figure(figure: "Figure", path: str | Path, dpi: int = 100) -> Path:
    """Write the figure atomically; its extension (.png, .svg, .pdf) picks the format."""
    path = Path(path)
    suffix = check_figure_path(path)
    buffer = io.BytesIO()
    metadata = {"png": {"Software": None}, "svg": {"Date": None}, "pdf": {"CreationDate": None}}
    figure.savefig(buffer, format=suffix[1:], dpi=dpi, metadata=metadata[suffix[1:]])
    write_atomically(path, buffer.getvalue())
    return path


def check_trial(run: TrainedRun, trial: int) -> None:
    """`PlotError` unless ``trial`` is the place of one of the run's networks."""
    if 0 <= trial < run.trials:
        return
    if run.seed is not None:
        raise PlotError(f"{run.path} holds one network, trial {run.seed} of its reproduce run: leave out --trial")
    raise PlotError(f"{run.path} has {run.trials} trial(s); there is no trial {trial}")



def plot_runs(paths: Sequence[str | Path], output: str | Path | None = None, steps: int = 200,
              seed: int = 0, panels: Sequence[str] | None = None, trial: int = 0,
              curve_x: str = "step", per_step: bool = True, dpi: int = 100, data: str | Path | None = None
              ) -> tuple[Path, list[str]]:
    """Load, trace (on ``data``, a held-out data file, if given) and draw the runs; write the
    figure (default: the first run's plots.png). Returns the file written and a `describe`
    line per run. One run directory may be given alone (a string or a path)."""
    paths = [paths] if isinstance(paths, (str, os.PathLike)) else paths  # (not its letters)
    if not paths:
        raise PlotError("give at least one run directory")
    output = Path(output) if output is not None else Path(paths[0]) / "plots.png"
    check_figure_path(output)  # (before the slow part)
    check_not_own_file(output)  # (results.png of a results folder, ...)
    runs = [load_run(path) for path in paths]
    panel_groups([run.plan for run in runs], panels)  # unknown panels fail before the slow part
    for run in runs:
        check_trial(run, trial)
    traces = [trace_run(run, steps, seed, data) for run in runs]
    figure = draw_figure(runs, traces, panels, trial, curve_x, per_step)
    return save_figure(figure, output, dpi), [describe(run, trace, trial) for run, trace in zip(runs, traces)]
