"""Two `lstmgraph reproduce` folders compared trial by trial (the same seeds).

    .venv/bin/python benchmarks/trial_by_trial.py docs/results/test-streams-1e5/gers2000-cerg-forget \\
        docs/results/gers2000-cerg-forget

Two runs of one row whose protocols differ only in what stops a trial (the CERG test streams of
10^5 and of 10^6 symbols) train each seed's net on the same training streams, so a seed's
trial in the second run is the first one's stopped at another test phase; runs that differ in
a setting that acts now and then (the learning-rate decay after an error-free training stream)
part only where it acts, and chaotic nets under another rule (exact RTRL) part at once. This
prints, for the seeds both folders have finished: how the trials' classes moved (perfect, good,
rest; solved or unsolved for sequence rows), how many ended exactly alike (the same class after
as many sequences or training streams), and for the seeds solved in both, the difference in
sequences or training streams to success (second minus first) where there is one.
"""

from __future__ import annotations

import argparse
import json
import statistics
from collections import Counter
from pathlib import Path
from typing import Any


def finished_trials(folder: Path) -> dict[int, dict[str, Any]]:
    """The folder's finished trials by seed: its results.json, or while it runs its trials.jsonl."""
    if (folder / "results.json").exists():
        rows = json.loads((folder / "results.json").read_text(encoding="utf-8"))["trials"]
    elif (folder / "trials.jsonl").exists():
        rows = [json.loads(line) for line in (folder / "trials.jsonl").read_text(encoding="utf-8").splitlines()]
    else:
        raise SystemExit(f"{folder}: no results.json or trials.jsonl; give a `lstmgraph reproduce --out` folder")
    return {row["seed"]: {**row, "class": outcome(row)} for row in rows}


def outcome(row: dict[str, Any]) -> str:
    """A stream trial's class; a sequence trial's "solved" or "unsolved"."""
    return row.get("class") or ("solved" if row["solved"] else "unsolved")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("first", type=Path, help="a results folder")
    parser.add_argument("second", type=Path, help="a results folder of the same row under another protocol")
    args = parser.parse_args()
    first, second = finished_trials(args.first), finished_trials(args.second)
    seeds = sorted(first.keys() & second.keys())
    print(f"{len(seeds)} seeds finished in both ({len(first)} in {args.first}, {len(second)} in {args.second})")
    moves = Counter((first[seed]["class"], second[seed]["class"]) for seed in seeds)
    for (before, after), count in sorted(moves.items()):
        print(f"  {before:>8} -> {after:<8} {count:3d}")
    alike = [seed for seed in seeds if (first[seed]["class"], first[seed]["presented"])
             == (second[seed]["class"], second[seed]["presented"])]
    print(f"ended alike (same class after as many sequences or training streams): {len(alike)} of {len(seeds)}")
    both = [seed for seed in seeds if first[seed]["solved"] and second[seed]["solved"]]
    extra = [second[seed]["to_success"] - first[seed]["to_success"] for seed in both]
    if extra:
        differing = [value for value in extra if value]
        print(f"solved (perfect) in both: {len(both)}; other sequences or training streams to success for {len(differing)} of them"
              + (f" (second minus first: median {statistics.median(differing):+,.0f}, "
                 f"from {min(differing):+,} to {max(differing):+,})" if differing else ""))
    changed = [seed for seed in seeds if seed not in alike]
    if changed:
        print("seeds that ended otherwise: " + ", ".join(
            f"{seed} ({first[seed]['class']} {first[seed]['presented']:,} -> "
            f"{second[seed]['class']} {second[seed]['presented']:,})" for seed in changed))


if __name__ == "__main__":
    main()
