"""Figures of results against the papers.

`results_figure`, the results.png of a results folder. Left: sequences (or training streams)
to success of every solved trial, on a log axis, with our mean and the published mean marked.
Right: the share of trials solved (perfect / good / rest for stream experiments) beside the
published shares. Its title names the row, the trials and the cap; its caption defines its words.
It records a digest of what it draws (`results_digest`), so `lstmgraph results --write` redraws a
committed folder's figure when the catalogue's reading of its row or the drawing changes.

`draw_summary`, the figure of docs/results.md's summary table (`lstmgraph results --write`): every results folder's success rate and mean to success
with their 95 % intervals against the published values, coloured by the verdict on each.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from ..files import write_atomically
from .verdict import DIFFERS, REFERENCE, REPRODUCED

#: The PNG text key under which `draw_summary` records `points_digest` of what it drew.
DIGEST_KEY = "lstmgraph-summary"
#: The PNG text key under which `results_figure` records `results_digest` of what it drew.
RESULTS_DIGEST_KEY = "lstmgraph-results"
#: Raised whenever `results_figure` draws otherwise: every folder's figure is then stale.
RESULTS_FIGURE_VERSION = 2
#: The most bytes of a results.png read for its digest (the figures are about 40 KB).
MAX_FIGURE_BYTES = 1 << 24
VERDICT_COLOURS = {REPRODUCED: "#2a9d3f", DIFFERS: "#d62728", None: "#8c8c8c"}


def results_digest(results: dict[str, Any]) -> str:
    """A digest of what `results_figure` draws of ``results``: equal digests, the same figure.
    The other row's trials a published ratio reads (`verdict.REFERENCE`) are not drawn."""
    drawn = {key: value for key, value in results.items() if key != REFERENCE}
    text = json.dumps({"version": RESULTS_FIGURE_VERSION, "results": drawn}, sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()


def png_digest(content: bytes | None, key: str = RESULTS_DIGEST_KEY) -> str | None:
    """The digest a figure's PNG bytes record under ``key``; None for none, or for bytes that
    are no PNG."""
    import io

    from PIL import Image, UnidentifiedImageError  # matplotlib's own dependency

    if content is None:
        return None
    try:
        with Image.open(io.BytesIO(content)) as image:
            found = image.info.get(key)
    except (OSError, UnidentifiedImageError, ValueError):
        return None
    return found if isinstance(found, str) else None


def results_figure(results: dict[str, Any]) -> bytes:
    """The PNG of ``results`` (as `schedule.run_experiment` returns them) that `reproduce`
    writes beside them: titled with the row, the trials finished against the paper's and the
    cap; a caption defines its words; its `results_digest` recorded."""
    import io
    import textwrap

    from matplotlib.figure import Figure

    from .protocols import protocol_counting

    experiment, summary = results["experiment"], results["summary"]
    protocol = protocol_counting(experiment["unit"])
    published = experiment["published"]
    figure = Figure(figsize=(9, 4.2), layout="constrained")
    left, right = figure.subplots(1, 2, width_ratios=[2, 1])
    solved = [row["to_success"] for row in results["trials"] if row["solved"]]
    if solved:
        left.plot(solved, [0] * len(solved), "o", alpha=0.6, label=f"our trials ({len(solved)} {protocol.success_word})")
        left.axvline(summary["mean_to_success"], color="C0", label="our mean")
    if isinstance(published.get("mean_to_success"), (int, float)):
        left.axvline(published["mean_to_success"], color="C3", linestyle="--", label="published mean")
    left.set_xscale("log")
    left.set_yticks([])
    left.set_xlabel(f"{experiment['unit']} to success")
    if left.get_legend_handles_labels()[0]:
        left.legend(loc="upper left", fontsize=8)
    if not solved:  # (the published mean alone left the panel looking empty)
        left.text(0.5, 0.5, f"no trial {protocol.success_word}", ha="center", va="center", transform=left.transAxes)
    count = summary["trials"]
    budget = results.get("budget_steps")
    figure.suptitle(f"{experiment['name']}: {count:,} of the paper's {experiment['trials']:,} trials"
                    + (f", each capped at {budget:,} training steps" if budget else ""), fontsize=10)
    labels = list(protocol.classes) or [protocol.success_word]
    ours = [summary.get(f"{label}_percent") if protocol.classes else summary.get(protocol.rate_key,
                                                                                 summary.get("success_percent"))
            for label in labels]
    theirs = [published.get(f"{label}_percent") if protocol.classes else published.get(protocol.rate_key)
              for label in labels]
    positions = range(len(labels))
    right.bar([p - 0.2 for p in positions], [value or 0 for value in ours], width=0.4, label="lstmgraph")
    right.bar([p + 0.2 for p in positions], [t if isinstance(t, (int, float)) else 0 for t in theirs], width=0.4,
              label="published", color="C3")
    right.set_xticks(list(positions), labels)
    right.set_ylabel("% of trials")
    right.set_ylim(0, 100)
    right.legend(fontsize=8)
    caption = protocol.terms + f" Protocol: {experiment.get('protocol', '')}."
    figure.supxlabel("\n".join(textwrap.wrap(caption.strip(), 150)), fontsize=7, ha="left", x=0.01)
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=100,
                   metadata={"Software": None, RESULTS_DIGEST_KEY: results_digest(results)})
    return buffer.getvalue()


@dataclass(frozen=True)
class SummaryPoint:
    """One results folder in the summary figure. Rates are fractions; ``rate`` and ``mean`` are
    (ours, 95 % low, 95 % high); a verdict is None where the paper gives no such figure (or, for
    the mean, fewer than two trials succeeded)."""

    label: str
    paper: str
    rate: tuple[float, float, float]
    published_rate: float | None
    rate_verdict: str | None
    mean: tuple[float, float, float] | None
    published_mean: float | None
    mean_verdict: str | None


def points_digest(points: list[SummaryPoint]) -> str:
    """A digest of the figure's content: equal digests, the same figure. Numbers enter it to six
    significant digits, more than a figure shows, so that another numpy's last bits in a
    bootstrap mean do not make a current figure look stale."""
    def rounded(value: Any) -> Any:
        if isinstance(value, float):
            return f"{value:.6g}"
        if isinstance(value, (list, tuple)):
            return [rounded(item) for item in value]
        if isinstance(value, dict):
            return {key: rounded(item) for key, item in value.items()}
        return value

    text = json.dumps([rounded(asdict(point)) for point in points], sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()


def summary_digest(path: Path) -> str | None:
    """The digest recorded in a summary figure; None for a missing or foreign file."""
    from PIL import Image, UnidentifiedImageError  # matplotlib's own dependency

    try:
        with Image.open(path) as image:
            return image.info.get(DIGEST_KEY)
    except (OSError, UnidentifiedImageError):
        return None


def draw_summary(points: list[SummaryPoint], path: Path) -> Path:
    """Two panels, a row per results folder in the table's order. Left: our success rate with
    its Wilson interval and the published rate (a diamond). Right: our mean to success over the
    published mean with its bootstrap interval, on a log axis (1 = the paper's mean); a row
    whose finding is a ratio of two rows' means, our ratio over the published one. A line is
    green where its figure is reproduced, red where it differs, grey where it is not judged."""
    import io

    from matplotlib.figure import Figure
    from matplotlib.lines import Line2D

    positions, headings = _layout(points)
    slots = len(positions) + len(headings)
    figure = Figure(figsize=(11, 1.4 + 0.22 * slots), layout="constrained")
    rate_ax, mean_ax = figure.subplots(1, 2, sharey=True, width_ratios=[3, 2])
    ratios = []
    for y, point in zip(positions, points):
        _interval(rate_ax, y, [100 * value for value in point.rate], point.rate_verdict)
        if point.published_rate is not None:
            rate_ax.plot([100 * point.published_rate], [y], "D", color="black", fillstyle="none", markersize=5)
        if point.mean is not None and point.published_mean:
            ratio = [value / point.published_mean for value in point.mean]
            _interval(mean_ax, y, ratio, point.mean_verdict)
            ratios += ratio[1:]
    for y in headings:
        for ax in (rate_ax, mean_ax):
            ax.axhline(y + 0.5, color="#999999", linewidth=0.8)
    rate_ax.set_yticks([*positions, *headings], [point.label for point in points] + list(headings.values()),
                       fontsize=7)
    for label in rate_ax.get_yticklabels()[len(positions):]:
        label.set_fontweight("bold")
    rate_ax.set_ylim(-0.7, slots - 0.3)
    rate_ax.set_xlim(-2, 102)
    rate_ax.set_xlabel("% solved (1997) or % perfect (2000, 2002), 95 % interval")
    mean_ax.axvline(1, color="black", linewidth=0.8)
    mean_ax.set_xscale("log")
    if ratios:
        mean_ax.set_xlim(min(min(ratios), 1) / 1.5, max(max(ratios), 1) * 1.5)
    mean_ax.set_xlabel("mean to success (or a ratio of means) / published, 95 %")
    for ax in (rate_ax, mean_ax):
        ax.grid(axis="x", color="#dddddd", linewidth=0.6)
        ax.tick_params(axis="y", length=0)
    handles = [Line2D([], [], color=colour, linewidth=2.5, marker="o", markersize=4, label=f"ours: {verdict or 'not judged'}")
               for verdict, colour in VERDICT_COLOURS.items()]
    handles.append(Line2D([], [], color="black", marker="D", fillstyle="none", linestyle="none", label="published"))
    figure.legend(handles=handles, loc="outside upper center", ncols=4, fontsize=8, frameon=False)
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=100,
                   metadata={"Software": None, DIGEST_KEY: points_digest(points)})
    write_atomically(path, buffer.getvalue())
    return path


def _interval(ax, y: float, values: list[float], verdict: str | None) -> None:
    """(ours, low, high) as a dot on its interval, in the verdict's colour."""
    ours, low, high = values
    colour = VERDICT_COLOURS[verdict]
    ax.plot([low, high], [y, y], color=colour, linewidth=2.5, solid_capstyle="butt")
    ax.plot([ours], [y], "o", color=colour, markersize=4)


def _layout(points: list[SummaryPoint]) -> tuple[list[int], dict[int, str]]:
    """The y of each point, top down, and a heading row (y: paper) above each paper's first."""
    positions, headings, y = [], {}, len(points) + len({point.paper for point in points}) - 1
    for index, point in enumerate(points):
        if index == 0 or point.paper != points[index - 1].paper:
            headings[y] = point.paper
            y -= 1
        positions.append(y)
        y -= 1
    return positions, headings
