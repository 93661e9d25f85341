"""Finished trials' rows summarised in the published figures' terms, and the table
`lstmgraph reproduce` prints beside the paper's figures.

The protocol of a row is asked, never its label: a live experiment's ``protocol`` instance, or
for a stored results.json the registered class counting its ``unit``
(`protocols.protocol_counting`). A summary holds the success rate under the protocol's
``rate_key`` only (results.json files written before hold ``success_percent`` too).
"""

from __future__ import annotations

import csv
import io
import statistics
from typing import Any

from .experiment import Experiment
from .protocols import protocol_counting
from .verdict import cap_binds, judge, verdict, verdict_rows


def summarise(experiment: Experiment, rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Our figures in the published figures' terms: the rate, the units to success of the solved
    trials, then the protocol's own figures (`Protocol.summary_fields`)."""
    protocol = experiment.protocol
    solved = [row["to_success"] for row in rows if row["solved"]]
    summary: dict[str, Any] = {
        "trials": len(rows),
        protocol.rate_key: 100.0 * len(solved) / len(rows) if rows else None,
        "mean_to_success": statistics.fmean(solved) if solved else None,
        "std_to_success": statistics.stdev(solved) if len(solved) > 1 else None,
        "range": f"{min(solved):,}-{max(solved):,}" if solved else None,
        "diverged": sum(bool(row.get("diverged")) for row in rows),
        "seconds_total": round(sum(row["seconds"] for row in rows), 1),
        "steps_total": sum(row["steps"] for row in rows),
    }
    summary.update(protocol.summary_fields(rows))
    return summary


def results_of(experiment: Experiment, budget_steps: int | None, rows: list[dict[str, Any]]) -> dict[str, Any]:
    """What results.json holds for the finished trials ``rows`` (sorted by seed in place)."""
    rows.sort(key=lambda row: row["seed"])
    return {"experiment": experiment.describe(), "budget_steps": budget_steps,
            "summary": summarise(experiment, rows), "trials": rows}


def csv_text(rows: list[dict[str, Any]]) -> str:
    """trials.csv: a column per key of any row, the seed first."""
    columns = sorted({key for row in rows for key in row}, key=lambda key: (key != "seed", key))
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, columns)
    writer.writeheader()
    writer.writerows(rows)
    return buffer.getvalue()


def no_verdict_reason(results: dict[str, Any], trials: int | None = None) -> str | None:
    """Why a run of ``trials`` trials (default: those finished) gets no verdict: fewer trials
    than the paper's, or a trial stopped by the cap (`reproduce --max-steps`; `cap_binds`), e.g.
    "2 of 10 trials, capped at 2,000 training steps" (issue 34: a quick look is no
    reproduction); None for a run of the paper's protocol, or one whose cap no trial reached."""
    paper = results["experiment"]["trials"]
    count = results["summary"]["trials"] if trials is None else trials
    capped = cap_binds(results)
    if count >= paper and not capped:
        return None
    return f"{count:,} of {paper:,} trials" + (f", capped at {results['budget_steps']:,} training steps" if capped else "")


def verdict_words(results: dict[str, Any], trials: int | None = None) -> str:
    """The verdict of ``results`` as the commands say it: "none for a run of ..." where a run of
    ``trials`` (asked; by default those finished) gets none (`no_verdict_reason`), "none yet"
    before a trial has finished, else the verdict of the trials finished."""
    reason = no_verdict_reason(results, trials)
    if reason:
        return f"none for a run of {reason}"
    return verdict(judge(results)) if results["trials"] else "none yet"


def _show(value: Any, digits: int = 0) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:,.{digits}f}"
    return f"{value:,}" if isinstance(value, int) else str(value)


def comparison(results: dict[str, Any], trials: int | None = None) -> list[tuple[str, str, str]]:
    """(figure, ours, published) rows for the table `lstmgraph reproduce` prints; the verdict
    row only for a run of the paper's protocol (`no_verdict_reason`: ``trials`` asked, by
    default the paper's count, and no cap)."""
    summary, experiment = results["summary"], results["experiment"]
    published, unit = experiment["published"], experiment["unit"]
    protocol = protocol_counting(unit)
    rows = [("trials", _show(summary["trials"]), _show(experiment["trials"]))]
    rows += protocol.rate_rows(summary, published, _show)
    rows.append((f"mean {unit} to success", _show(summary["mean_to_success"]), _show(published.get("mean_to_success"))))
    solved = [trial["to_success"] for trial in results.get("trials") or () if trial["solved"]]
    rows.append((f"median {unit} to success", _show(statistics.median(solved) if solved else None), "-"))
    rows.append((f"std {unit} to success", _show(summary["std_to_success"]), "-"))
    rows.append(("range", _show(summary["range"]), _show(published.get("range"))))
    rows += protocol.test_rows(summary, published, _show)
    if "finding" in published:
        rows.append(("published finding", "", published["finding"]))
    quick = no_verdict_reason(results, experiment["trials"] if trials is None else trials) is not None
    rows.extend(row for row in verdict_rows(results) if not (quick and row[0] == "verdict"))
    rows.append(("diverged trials", _show(summary["diverged"]), "-"))
    rows.append(("CPU time (s, all trials)", _show(summary["seconds_total"], 1), "-"))
    return rows
