"""A sweep's figures: per setting the success rate with its Wilson 95 % interval, the mean units
to success with its bootstrap interval and the CPU time; the paired test of every setting
against the subject's own; and sweep.json, sweep.csv, sweep.png and the printed table.

Every setting runs the same seeds, so trial k of one setting and trial k of another are a pair.
Two paired tests compare a setting with the subject's own:

- whether it succeeds as often: McNemar's exact test. Of the seeds finished in both, those solved
  in one setting and not the other (the discordant pairs, b one way and c the other) are, if
  the settings do not differ, b + c fair coin tosses; p is the two-sided exact binomial
  probability of a split at least as uneven;
- whether it succeeds as fast: Wilcoxon's signed-rank test on the units to success of the seeds
  solved in both (ties in size share their mean rank; equal counts drop out). p is two-sided,
  exact over the 2^n signs for up to `EXACT_PAIRS` pairs, else the normal approximation with
  the tie correction.

Nothing here reads a clock or the host, so the same trials give the same bytes (a rerun of a
finished sweep leaves sweep.json as it was).
"""

from __future__ import annotations

import csv
import io
import json
import math
import statistics
import textwrap
from typing import Any

import numpy as np

from ..layouts import SWEEP_FOLDER
from .protocols import protocol_counting
from .sweep_values import value_text
from .verdict import bootstrap_mean, wilson

#: A sweep folder's files beside its settings/INDEX results folders (named once in `layouts`).
JSON, CSV, FIGURE = SWEEP_FOLDER.files


def mcnemar_exact(only_one: int, only_other: int) -> float:
    """The two-sided exact p-value of ``only_one`` against ``only_other`` discordant pairs."""
    total = only_one + only_other
    if total == 0:
        return 1.0
    tail = sum(math.comb(total, k) for k in range(min(only_one, only_other) + 1)) / 2 ** total
    return min(1.0, 2 * tail)


#: Up to this many pairs the signed-rank test's p is exact (the sum's distribution over every sign).
EXACT_PAIRS = 200


def signed_rank_p(differences: list[float]) -> float:
    """Wilcoxon's two-sided signed-rank p of paired ``differences`` (zeros dropped, tied sizes
    given their mean rank): exact for up to `EXACT_PAIRS` pairs (the permutation distribution of
    the positive ranks' sum, in half ranks), else normal with the tie and continuity corrections."""
    if not all(math.isfinite(d) for d in differences):
        raise ValueError("the signed-rank test takes finite differences")
    values = sorted((abs(d), d > 0) for d in differences if d != 0)
    if not values:
        return 1.0
    doubled = [0] * len(values)  # twice each midrank: whole numbers
    start = 0
    while start < len(values):
        stop = start
        while stop < len(values) and values[stop][0] == values[start][0]:
            stop += 1
        for k in range(start, stop):
            doubled[k] = start + stop + 1  # 2 * mean of ranks start+1 .. stop
        start = stop
    positive = sum(rank for rank, (_, up) in zip(doubled, values) if up)
    total = sum(doubled)
    if len(values) <= EXACT_PAIRS:
        shares = np.zeros(total + 1)  # the probability of each doubled sum over the signs so far
        shares[0] = 1.0
        for rank in doubled:
            shares[rank:] = 0.5 * (shares[rank:] + shares[:-rank].copy())
            shares[:rank] *= 0.5
        return min(1.0, 2 * float(min(shares[:positive + 1].sum(), shares[positive:].sum())))
    mean = total / 2  # of the doubled positive sum: each rank counted with probability 1/2
    variance = sum(rank * rank for rank in doubled) / 4
    z = max(0.0, abs(positive - mean) - 1) / math.sqrt(variance)  # (continuity: 1 in doubled ranks)
    return min(1.0, math.erfc(z / math.sqrt(2)))


def setting_figures(rows: list[dict[str, Any]], unit: str) -> dict[str, Any]:
    """The figures of one setting's finished trials ``rows`` of a protocol counting ``unit``."""
    solved = [row["to_success"] for row in rows if row["solved"]]
    figures: dict[str, Any] = {"trials": len(rows), "solved": len(solved), "rate_percent": None,
                               "rate_interval_percent": None, "mean_to_success": None, "mean_interval": None,
                               "diverged": sum(bool(row.get("diverged")) for row in rows),
                               "cpu_seconds": round(sum(row["seconds"] for row in rows), 1),
                               "protocol_figures": protocol_counting(unit).summary_fields(rows)}
    if rows:
        low, high = wilson(len(solved), len(rows))
        figures["rate_percent"] = round(100 * len(solved) / len(rows), 2)
        figures["rate_interval_percent"] = [round(100 * low, 2), round(100 * high, 2)]
    if solved:
        figures["mean_to_success"] = round(statistics.fmean(solved), 1)
    if len(solved) > 1:
        figures["mean_interval"] = [round(value, 1) for value in bootstrap_mean(solved)]
    return figures


def paired(rows: list[dict[str, Any]], own_rows: list[dict[str, Any]]) -> dict[str, Any]:
    """The paired tests of a setting's rows against the subject's own setting's, by seed:
    McNemar's on success, Wilcoxon's signed-rank on the units to success where both succeeded
    (``wilcoxon_p`` None where no seed did)."""
    own = {row["seed"]: row for row in own_rows}
    pairs = [(bool(row["solved"]), bool(own[row["seed"]]["solved"])) for row in rows if row["seed"] in own]
    only_this = sum(mine and not theirs for mine, theirs in pairs)
    only_own = sum(theirs and not mine for mine, theirs in pairs)
    differences = [row["to_success"] - own[row["seed"]]["to_success"] for row in rows
                   if row["seed"] in own and row["solved"] and own[row["seed"]]["solved"]]
    return {"pairs": len(pairs), "solved_in_both": sum(mine and theirs for mine, theirs in pairs),
            "solved_only_here": only_this, "solved_only_in_own": only_own,
            "mcnemar_p": round(mcnemar_exact(only_this, only_own), 6),
            "faster_here": sum(d < 0 for d in differences), "slower_here": sum(d > 0 for d in differences),
            "wilcoxon_p": round(signed_rank_p(differences), 6) if differences else None}


def sweep_document(head: dict[str, Any], settings: list[dict[str, Any]],
                   rows: dict[int, list[dict[str, Any]]]) -> dict[str, Any]:
    """sweep.json's content: ``head`` (the subject and the grid) and per setting (each of
    ``settings`` a dict with ``index``, ``values``, ``folder``, ``own``) its figures and its
    paired test against the subject's own setting."""
    own = next((setting["index"] for setting in settings if setting["own"]), None)
    listed = []
    for setting in settings:
        entry = {**setting, **setting_figures(rows[setting["index"]], head["unit"])}
        entry["paired_with_own"] = None if own is None or setting["own"] else paired(rows[setting["index"]], rows[own])
        listed.append(entry)
    return {**head, "own_setting": own, "settings": listed}


def document_bytes(document: dict[str, Any]) -> bytes:
    """sweep.json's bytes: sorted keys, no timestamps, one trailing newline."""
    return (json.dumps(document, indent=2, sort_keys=True) + "\n").encode()


def csv_text(document: dict[str, Any]) -> str:
    """sweep.csv: a line per setting, its values (text as is, other values as JSON: a list as
    ``[0, 2]``), then its figures (``own`` true or false)."""
    keys = list(document["keys"])
    columns = ["index", *keys, "own", "trials", "solved", "rate_percent", "rate_low", "rate_high",
               "mean_to_success", "mean_low", "mean_high", "cpu_seconds", "mcnemar_p", "wilcoxon_p"]
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(columns)
    for setting in document["settings"]:
        rate = setting["rate_interval_percent"] or [None, None]
        mean = setting["mean_interval"] or [None, None]
        test = setting["paired_with_own"] or {}
        writer.writerow([setting["index"], *(value_text(setting["values"][key]) for key in keys),
                         json.dumps(setting["own"]),
                         setting["trials"], setting["solved"], setting["rate_percent"], *rate,
                         setting["mean_to_success"], *mean, setting["cpu_seconds"], test.get("mcnemar_p"),
                         test.get("wilcoxon_p")])
    return buffer.getvalue()


def _show(value: Any, digits: int = 0) -> str:
    if value is None:
        return "-"
    return f"{value:,.{digits}f}" if isinstance(value, float) else json.dumps(value)


def table_lines(document: dict[str, Any]) -> list[str]:
    """The table `lstmgraph sweep` prints: a line per setting, the own one marked where others are
    paired with it (a sweep of one setting has nothing to pair)."""
    keys = list(document["keys"])
    paired_sweep = len(document["settings"]) > 1
    head = ["#", *keys, "trials", document["rate_label"], "95 % interval", f"mean {document['unit']} to success",
            "95 % interval", "CPU s", "p solved", "p speed"]
    lines = []
    for setting in document["settings"]:
        rate = setting["rate_interval_percent"]
        mean = setting["mean_interval"]
        test = setting["paired_with_own"]
        lines.append([str(setting["index"]) + (" (own)" if setting["own"] and paired_sweep else ""),
                      *(_value_cell(setting["values"][key]) for key in keys), str(setting["trials"]),
                      f"{setting['solved']} = {_show(setting['rate_percent'])} %" if setting["trials"] else "-",
                      f"{rate[0]:.0f}-{rate[1]:.0f} %" if rate else "-", _show(setting["mean_to_success"]),
                      f"{mean[0]:,.0f}-{mean[1]:,.0f}" if mean else "-", _show(setting["cpu_seconds"], 1),
                      _p_cell(test and test["mcnemar_p"]), _p_cell(test and test.get("wilcoxon_p"))])
    widths = [max(len(cell) for cell in column) for column in zip(head, *lines)]
    return ["  ".join(cell.rjust(width) for cell, width in zip(row, widths)) for row in [head, *lines]]


def _p_cell(p: float | None) -> str:
    """A p-value in the printed table: two digits; below the 6 decimals sweep.json keeps, "<1e-6"."""
    return "-" if p is None else "<1e-6" if p < 1e-6 else f"{p:.2g}"


def _value_cell(value: Any) -> str:
    """A key's value in the printed table: None, the own setting's where the subject sets no
    single value (a spec's weights drawn at random), is "unset", not JSON's null."""
    return "unset" if value is None else json.dumps(value)


def _numeric(values: list[Any]) -> bool:
    return all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values)


def sweep_figure(document: dict[str, Any]) -> bytes:
    """sweep.png: per varied key the success rate with its 95 % interval against the key's values
    (one line per value of the other key, for two keys), the published rate as a dashed line;
    for two keys a heat map of the rate beside them."""
    from matplotlib.figure import Figure

    keys = [key for key, values in document["keys"].items() if len(values) > 1] or list(document["keys"])
    heat = len(keys) == 2
    width = max(5.0, 4.2 * (len(keys) + heat))
    figure = Figure(figsize=(width, 3.6), layout="constrained")
    axes = figure.subplots(1, len(keys) + heat, squeeze=False)[0]
    settings = [s for s in document["settings"] if s["trials"] and not s.get("added")]
    published = document.get("published_rate_percent")
    for axis, key in zip(axes, keys):
        values = document["keys"][key]
        numeric = _numeric(values)
        others = [other for other in keys if other != key]
        groups: dict[str, list[dict[str, Any]]] = {}  # (by the other keys' full values)
        for setting in settings:
            groups.setdefault(json.dumps([setting["values"][o] for o in others]), []).append(setting)
        for number, members in enumerate(groups.values()):
            label = ", ".join(f"{o}={_shown(document['keys'][o], members[0]['values'][o])}" for o in others)
            members.sort(key=lambda s: values.index(s["values"][key]) if s["values"][key] in values else -1)
            xs = [s["values"][key] if numeric else values.index(s["values"][key]) for s in members]
            ys = [s["rate_percent"] for s in members]
            low = [y - s["rate_interval_percent"][0] for y, s in zip(ys, members)]
            high = [s["rate_interval_percent"][1] - y for y, s in zip(ys, members)]
            axis.errorbar(xs, ys, yerr=[low, high], marker="o", capsize=3, label=label or None,
                          color=f"C{number % 10}")
        own = [s for s in document["settings"] if s["own"] and s["trials"]]  # (added to the grid or not)
        if own and (x := own[0]["values"][key]) is not None and (numeric or x in values):
            axis.plot([x if numeric else values.index(x)], [own[0]["rate_percent"]], "o", markersize=11,
                      markerfacecolor="none", color="k", label="own setting")
        elif own:  # a value off this axis: the subject sets no single one (random weights), or another kind
            axis.axhline(own[0]["rate_percent"], color="k", linestyle=":",
                         label=f"own setting ({key} {'unset' if x is None else _ticks([x])[0]})")
        if numeric and all(v > 0 for v in values) and max(values) / min(values) >= 100:
            axis.set_xscale("log")
        if not numeric:
            axis.set_xticks(range(len(values)), _ticks(values))
        if published is not None:
            axis.axhline(published, color="C3", linestyle="--", label=f"published {published:g} %")
        axis.set_ylim(-5, 105)
        axis.set_xlabel(key)
        axis.set_ylabel(f"{document['rate_label']} (95 % interval)")
        if axis.get_legend_handles_labels()[0]:
            axis.legend(fontsize=7)
    if heat:
        _heat_map(axes[-1], document, keys, settings)
    title = f"{document['subject']['name']}: {document['trials']} trials a setting" + (
        f", each capped at {document['budget_steps']:,} steps" if document["budget_steps"] else "")
    figure.suptitle("\n".join(textwrap.wrap(title, int(width * 14))), fontsize=8)
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=80, metadata={"Software": None})
    return buffer.getvalue()


def _shown(values: list[Any], value: Any) -> str:
    """``value``, one of a key's ``values``, as the figure shows it (`_ticks`)."""
    return _ticks(values)[values.index(value)] if value in values else _ticks([value])[0]


def _ticks(values: list[Any]) -> list[str]:
    """Values as the figure shows them: a long one (a data file's absolute path) by its end, which
    tells values apart (its start would squeeze the plot away); numbered where two ends agree."""
    texts = [json.dumps(value) for value in values]
    shown = [text if len(text) <= 24 else "…" + text[-23:] for text in texts]
    return shown if len(set(shown)) == len(shown) else [f"{i}: {text}" for i, text in enumerate(shown)]


def _heat_map(axis, document: dict[str, Any], keys: list[str], settings: list[dict[str, Any]]) -> None:
    first, second = (document["keys"][key] for key in keys)
    grid = [[math.nan] * len(first) for _ in second]
    for setting in settings:
        x, y = first.index(setting["values"][keys[0]]), second.index(setting["values"][keys[1]])
        grid[y][x] = setting["rate_percent"]
    image = axis.imshow(grid, origin="lower", vmin=0, vmax=100, cmap="viridis", aspect="auto")
    axis.set_xticks(range(len(first)), _ticks(first), fontsize=7)
    axis.set_yticks(range(len(second)), _ticks(second), fontsize=7)
    axis.set_xlabel(keys[0])
    axis.set_ylabel(keys[1])
    for y, line in enumerate(grid):
        for x, value in enumerate(line):
            if not math.isnan(value):
                axis.text(x, y, f"{value:.0f}", ha="center", va="center", color="w", fontsize=8)
    axis.figure.colorbar(image, ax=axis, label=document["rate_label"])


def rate_label(unit: str) -> str:
    return protocol_counting(unit).rate_label()
