"""The figure `lstmgraph reproduce` writes beside its results: our trials against the paper.

Left: sequences (or training streams) to success of every solved trial, on a log axis, with our
mean and the published mean marked. Right: the share of trials solved (perfect / good / rest
for stream experiments) beside the published shares.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..files import write_atomically


def draw_results(results: dict[str, Any], path: Path) -> Path:
    """Draw ``results`` (as `run_experiment` returns them) to a PNG or SVG file."""
    import io

    from matplotlib.figure import Figure

    experiment, summary = results["experiment"], results["summary"]
    published = experiment["published"]
    figure = Figure(figsize=(9, 3.4), layout="constrained")
    left, right = figure.subplots(1, 2, width_ratios=[2, 1])
    solved = [row["to_success"] for row in results["trials"] if row["solved"]]
    if solved:
        left.plot(solved, [0] * len(solved), "o", alpha=0.6, label=f"our trials ({len(solved)} solved)")
        left.axvline(summary["mean_to_success"], color="C0", label="our mean")
    if isinstance(published.get("mean_to_success"), (int, float)):
        left.axvline(published["mean_to_success"], color="C3", linestyle="--", label="published mean")
    left.set_xscale("log")
    left.set_yticks([])
    left.set_xlabel(f"{experiment['unit']} to success")
    if left.get_legend_handles_labels()[0]:
        left.legend(loc="upper left", fontsize=8)
    else:
        left.text(0.5, 0.5, "no trial succeeded", ha="center", va="center", transform=left.transAxes)
    left.set_title(experiment["name"], fontsize=10)
    if experiment["unit"] == "training streams":
        labels = ["perfect", "good", "rest"]
        ours = [summary[f"{label}_percent"] or 0 for label in labels]
        theirs = [published.get(f"{label}_percent") for label in labels]
    else:
        labels = ["solved"]
        ours = [summary["success_percent"] or 0]
        theirs = [published.get("success_percent")]
    positions = range(len(labels))
    right.bar([p - 0.2 for p in positions], ours, width=0.4, label="lstmgraph")
    right.bar([p + 0.2 for p in positions], [t if t is not None else 0 for t in theirs], width=0.4,
              label="published", color="C3")
    right.set_xticks(list(positions), labels)
    right.set_ylabel("% of trials")
    right.set_ylim(0, 100)
    right.legend(fontsize=8)
    buffer = io.BytesIO()
    figure.savefig(buffer, format=path.suffix.lstrip(".") or "png", dpi=100)
    write_atomically(path, buffer.getvalue())
    return path
