"""The 1997 adding task (T = 100) with the logistic output, its learning rate dropped after the plateau.

    nice -n 19 .venv/bin/python benchmarks/adding_rate_drop.py --trials 4 --max-steps 30000000 \
        --log docs/results/adding-rate-drop.jsonl

`hochreiter1997-adding-t100` (logistic output unit, rate 0.5) learns the task but stays at 5-20
wrong of the 2,000 most recent sequences for hundreds of thousands of sequences before it meets
the paper's stop rule (all 2,000 right and their mean squared error < 0.01; 430,000 to 930,000
sequences, docs/results.md, against the paper's 74,000); benchmarks/adding_linear_code.py shows
why a code linear in X1 + X2 cannot meet it. Issue 15 asks whether a logistic net meets the rule when its rate is dropped
after the plateau. Trial k here is the catalogue row's trial k (the same weights, data and
protocol; `Experiment.trial`), trained piecewise (`Trial.advance`); between pieces the rate
(`trial.engine.rate`) is multiplied by ``--factor`` when either

- ``--drop-at N``: N sequences have been presented (a fixed schedule), or otherwise
- the plateau rule: the window of the 2,000 most recent sequences has been full with at most
  ``--plateau-wrong`` of them wrong for ``--plateau-sequences`` sequences in a row;

at most ``--max-drops`` times (after a drop the plateau count starts again). The stop rule
and the test on 2,560 new sequences are the catalogue row's; the cap (``--max-steps``, 30
million steps as in docs/results/capped-3e7-steps/hochreiter1997-adding-t100) is not. The rule is checked between pieces of
``--piece`` steps (about 100 sequences), so drops happen within 100 sequences of the point named.

Each finished trial is appended to ``--log`` as a JSON line: its row; the drops (sequence, new
rate, wrong of the 2,000 most recent then); the fewest wrong in a window of 2,000 sequences all
presented after the last drop; a trace of the window's wrong count every 10,000 sequences. A
rerun with the same settings skips trials already there.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from lstmgraph.experiments import find_experiment

EXPERIMENT = "hochreiter1997-adding-t100"
TRACE_EVERY = 10_000  # sequences between the points of a trial's trace


def settings_of(arguments: argparse.Namespace) -> dict[str, Any]:
    return {"factor": arguments.factor, "drop_at": arguments.drop_at, "plateau_wrong": arguments.plateau_wrong,
            "plateau_sequences": arguments.plateau_sequences, "max_drops": arguments.max_drops,
            "max_steps": arguments.max_steps}


def wrong(trial) -> int:
    """Wrong sequences among the trial's most recent (its window)."""
    from lstmgraph.experiments.counters import SequenceCounter

    return int(trial.counters[SequenceCounter.WRONG])


def run_trial(seed: int, settings: dict[str, Any], piece: int) -> dict[str, Any]:
    experiment = find_experiment(EXPERIMENT)
    trial = experiment.trial(experiment.plan(), seed, budget_steps=settings["max_steps"])
    drops: list[dict[str, Any]] = []
    trace: list[list[float]] = []  # [sequences, wrong of the 2,000 most recent, rate] every `TRACE_EVERY`
    fewest_after_drops: int | None = None  # the fewest wrong in a full window once every drop was made
    plateau_since: int | None = None
    while not trial.done:
        trial.advance(piece)
        if trial.done:
            continue
        sequences = trial.presented()
        if not trace or sequences - trace[-1][0] >= TRACE_EVERY:
            trace.append([sequences, wrong(trial), trial.engine.rate])
        if len(drops) >= settings["max_drops"]:
            if len(trial.recent_right) == trial.window and sequences - drops[-1]["sequence"] >= trial.window:
                fewest_after_drops = min(wrong(trial), fewest_after_drops if fewest_after_drops is not None else wrong(trial))
            continue
        if settings["drop_at"] is not None:
            due = sequences >= settings["drop_at"] * (len(drops) + 1)
        else:
            on_plateau = len(trial.recent_right) == trial.window and wrong(trial) <= settings["plateau_wrong"]
            if not on_plateau:
                plateau_since = None
            elif plateau_since is None:
                plateau_since = sequences
            due = plateau_since is not None and sequences - plateau_since >= settings["plateau_sequences"]
        if due:
            trial.engine.rate = trial.engine.rate * settings["factor"]
            drops.append({"sequence": sequences, "rate": trial.engine.rate, "recent_wrong": wrong(trial)})
            plateau_since = None
    return {**trial.row, "drops": drops, "final_rate": trial.engine.rate,
            "fewest_wrong_after_drops": fewest_after_drops, "trace": trace, "settings": settings}


def summary(rows: list[dict[str, Any]]) -> list[str]:
    """One line per trial of the log, grouped by settings, and the count solved (Wilson 95 %)."""
    from lstmgraph.experiments.verdict import wilson

    lines: list[str] = []
    groups: dict[str, list[dict[str, Any]]] = {}
    for row in rows:
        groups.setdefault(json.dumps(row["settings"], sort_keys=True), []).append(row)
    for key, group in groups.items():
        lines += [f"settings: {key}",
                  "| trial | solved | sequences presented | drops (sequence: new rate, wrong of the 2,000 most recent) "
                  "| fewest wrong of 2,000 after the drops | test wrong of 2,560 | test MSE | seconds (wall) |",
                  "|---|---|---|---|---|---|---|---|"]
        for row in sorted(group, key=lambda r: r["seed"]):
            drops = "; ".join(f"{d['sequence']:,}: {d['rate']:.3g}, {d['recent_wrong']}" for d in row["drops"]) or "-"
            fewest = row.get("fewest_wrong_after_drops")
            lines.append(f"| {row['seed']} | {'yes, ' + format(row['to_success'], ',') if row['solved'] else 'no'} | "
                         f"{row['presented']:,} | {drops} | {'-' if fewest is None else fewest} | "
                         f"{row.get('test_wrong', '-')} | {row.get('test_mse', float('nan')):.2g} | {row['seconds']:,.0f} |")
        solved = sum(row["solved"] for row in group)
        low, high = wilson(solved, len(group))
        lines += [f"solved: {solved} of {len(group)} (Wilson 95 %: {100 * low:.0f}-{100 * high:.0f} %)", ""]
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=4, help="trials 0..N-1 (or --seeds)")
    parser.add_argument("--seeds", type=int, nargs="+")
    parser.add_argument("--factor", type=float, default=0.1, help="the rate is multiplied by this at a drop")
    parser.add_argument("--drop-at", type=int, help="drop after every this many sequences instead of the plateau rule")
    parser.add_argument("--plateau-wrong", type=int, default=20, help="plateau: at most this many of the 2,000 wrong")
    parser.add_argument("--plateau-sequences", type=int, default=10_000, help="... for this many sequences")
    parser.add_argument("--max-drops", type=int, default=2)
    parser.add_argument("--max-steps", type=int, default=30_000_000)
    parser.add_argument("--piece", type=int, default=10_000, help="steps between checks of the drop rule")
    parser.add_argument("--log", type=Path)
    parser.add_argument("--table", action="store_true", help="only print a summary of the trials in --log")
    arguments = parser.parse_args()
    if arguments.table:
        print("\n".join(summary([json.loads(line) for line in arguments.log.read_text().splitlines() if line.strip()])))
        return
    settings = settings_of(arguments)
    done = set()
    if arguments.log is not None and arguments.log.exists():
        done = {row["seed"] for row in map(json.loads, arguments.log.read_text().splitlines())
                if row["settings"] == settings}
    print(f"{EXPERIMENT}, logistic output, rate 0.5 then x{arguments.factor} at each drop: {settings}", flush=True)
    for seed in (arguments.seeds if arguments.seeds is not None else range(arguments.trials)):
        if seed in done:
            continue
        row = run_trial(seed, settings, arguments.piece)
        print(json.dumps(row), flush=True)
        if arguments.log is not None:
            with arguments.log.open("a") as log:
                log.write(json.dumps(row) + "\n")


if __name__ == "__main__":
    main()
