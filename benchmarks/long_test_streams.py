"""How the perfect nets of a stream row fare on test streams longer than the row's test limit.

    .venv/bin/python benchmarks/long_test_streams.py RUN_FOLDER --limit 1000000 [--streams 10]

A stream row calls a net "perfect" when all 10 test streams after a training stream reach the
protocol's test limit, each from a zero state. The CERG rows' limit was 10^5 symbols until
2026-11-23 (docs/results/test-streams-1e5); this check, run on them, showed that half of the
nets so perfect err on fresh streams of 10^6 symbols, seed 000's "perfect: 10^6 successive
correct predictions", which is the limit since. This takes every perfect trial of a finished
`lstmgraph reproduce` folder (its `trials/SEED/weights.npz`), runs ``--streams`` fresh test
streams (frozen weights, each from a zero state, data from the trial's seed but a generator
no trial uses) until their first error or ``--limit`` units with the run's own protocol code
(`streams.stream_score`, on the compiled engine), and prints per net the stream lengths and
how many reach the limit; then how many nets stay perfect (as a share of the row's trials, with
its Wilson 95 % interval), the share of all these streams that reach the limit, and how many of
those that do not err within their first `EARLY` units.
"""

from __future__ import annotations

import argparse
import json
from dataclasses import replace
from pathlib import Path

from lstmgraph.engine.weights import load_weights
from lstmgraph.experiments import find_experiment
from lstmgraph.experiments.trial import trial_engine
from lstmgraph.experiments.streams import StreamData, stream_score
from lstmgraph.experiments.data import data_rng
from lstmgraph.experiments.verdict import wilson

#: The data purpose of these streams (a trial draws training data with 0 and tests with 1).
FRESH = 7
#: A stream that errs within this many units errs in its first string or two (CERG strings are
#: 9-30 symbols long), right after the zero state it starts from.
EARLY = 50


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("run", type=Path, help="a finished `lstmgraph reproduce` results folder")
    parser.add_argument("--limit", type=int, default=1_000_000, help="units per test stream")
    parser.add_argument("--streams", type=int, default=10)
    args = parser.parse_args()
    results = json.loads((args.run / "results.json").read_text())
    experiment = find_experiment(results["experiment"]["name"])
    plan = experiment.plan()
    protocol = replace(experiment.protocol, test_limit=args.limit)
    perfect = [row["seed"] for row in results["trials"] if row.get("class") == "perfect"]
    print(f"{experiment.name}: {len(perfect)} perfect nets of {len(results['trials'])}, "
          f"{args.streams} fresh test streams of up to {args.limit:,} {protocol.unit} each")
    staying = reaching = early = 0
    for seed in perfect:
        engine = trial_engine(plan, seed, "specialised")
        engine.population.set_weights(load_weights(args.run / "trials" / str(seed) / "weights.npz", plan))
        data = StreamData(experiment.make_task(), data_rng(seed, FRESH))
        lengths = [stream_score(engine, data, protocol, args.limit, learn=False)[0] for _ in range(args.streams)]
        reached = sum(length >= args.limit for length in lengths)
        staying += reached == args.streams
        reaching += reached
        early += sum(length < EARLY for length in lengths)
        print(f"  trial {seed:3d}: {reached:2d} of {args.streams} reach {args.limit:,}; "
              f"lengths {', '.join(f'{length:,}' for length in lengths)}", flush=True)
    trials = len(results["trials"])
    low, high = wilson(staying, trials)
    print(f"still perfect with {args.streams} fresh streams of {args.limit:,}: {staying} of the {len(perfect)} "
          f"perfect nets, {100 * staying / trials:.0f} % of the {trials} trials (Wilson 95 %: "
          f"{100 * low:.0f}-{100 * high:.0f} %)")
    print(f"streams that reach {args.limit:,}: {reaching} of {args.streams * len(perfect)} "
          f"({100 * reaching / max(1, args.streams * len(perfect)):.0f} %); of the others, {early} err within "
          f"their first {EARLY} {protocol.unit}")


if __name__ == "__main__":
    main()
