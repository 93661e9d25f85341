"""A suspect for the CERG forget-gate gap that the texts leave open, tested on the paper rows' seeds;
also on any other continual stream row (the 2002 PFG rows, where seed 002 hints at it).

    .venv/bin/python benchmarks/cerg_suspects.py --row gers2000-cerg-forget --variant carried-state \
        --trials 30 --max-steps 50000000 --out docs/results/cerg-suspects/forget-carried-state

`gers2000-cerg-forget` is perfect far more often here than published (docs/results.md: 71 %
against 18 %), and its nets are never "good" (published 29 %). Its protocol starts every
training stream from a zero state at a string start. Seed 000
(/work/shared/seeds/000_d6d0b632dfd87761.txt, section 實驗 1) says only that a training stream
stops at the first error or after 10^6 inputs and that a test of 10 streams follows each; it
does not say what state the next training stream starts from. The variant:

- ``carried-state``: the training streams are one continual stream, paused for each test. A
  training stream goes on from the symbol after the previous one's error, from the state
  (activations and eligibility traces) the net was in there; only the first starts from a zero
  state. The net thus has to recover from its own errors mid-string, with no reset from
  outside, which is the difficulty the continual task is about. Test streams are as in the
  row: fresh data, each from a zero state at a string start, weights frozen.

Everything else is the row's (``--row``: the net, weights and data from the seed, |error| <
0.49, training and test streams to 10^6 symbols, 10 test streams, at most 30,000 training
streams; the decay row's rate x0.99 after each error-free training stream), run stream by
stream in Python with the row's own test code (`streams.stream_score`) on the compiled engine.
Trial k draws its training stream from the same generator as the row's trial k, so the two
part at the first error. A net that predicts its training stream but not the tests runs 10^6
training steps per stream, so ``--max-steps`` caps a trial's training steps (checked before
each training stream; the row's perfect nets needed at most 3.9 x 10^7), and a capped trial's
class (good or rest) is that of its last test phase.

The PFG rows (``--row gers2002-pfg-...``; docs/results.md, PFG, has their first look) count periods, not symbols, and stream 1 test after
each training stream. Seed 002 says each training receives continual input (line 259) and that
the net's state, 0 at the start, is never 0 again (line 455, of its Fig. 15); their rows restart
each training stream from a zero state at a period start. ``--learning-rule rtrl`` runs exact
RTRL, which the cosine rows need (docs/results.md, PFG).

Each finished trial is appended to ``OUT/trials.jsonl`` (a rerun skips the seeds there), the
row's own result format, so `benchmarks/trial_by_trial.py docs/results/gers2000-cerg-forget OUT`
compares the two seed by seed. The counts of perfect (with the Wilson 95 % interval), good and
rest nets are printed at the end; progress (the last training stream, the last test phase)
every 30 s of CPU.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

import numpy as np

from lstmgraph.experiments import EXPERIMENTS, find_experiment
from lstmgraph.experiments.sweep import grid
from lstmgraph.experiments.trial import trial_engine
from lstmgraph.experiments.streams import StreamData, StreamProtocol, stream_score
from lstmgraph.experiments.data import data_rng
from lstmgraph.experiments.verdict import wilson

#: The rows this runs: the continual stream rows (no reset inside a stream). The decay row
#: multiplies the rate by 0.99 after each error-free training stream.
ROWS = tuple(name for name, row in EXPERIMENTS.items()
             if isinstance(row.protocol, StreamProtocol) and not row.protocol.reset_each_sequence)
VARIANTS = ("carried-state",)
#: CPU seconds between progress lines.
REPORT_EVERY = 30.0


def carried_training_stream(engine, data: StreamData, protocol: StreamProtocol) -> tuple[int, int]:
    """One training stream from the engine's current state at the cursor (which may be inside
    a string or a period), to its first error or ``train_limit`` units (steps, or sequences:
    the protocol's unit); the cursor then stands on the step after the last one run. Returns
    (units right before the first error, steps run)."""
    limit, steps_unit = protocol.train_limit, protocol.unit == "steps"
    data.ensure(limit, protocol.unit)
    start = data.position
    stop = start + limit if steps_unit else int(np.searchsorted(data.counts, data.counts[start] + limit))
    steps, outputs = engine.present(data.inputs[start:stop], data.targets[start:stop], True,
                                    protocol.success_test.kernel_tolerance,
                                    data.judged[start:stop] if data.apart else None)
    last = start + steps - 1
    erred = steps < stop - start or not protocol.success_test.steps_correct(outputs[-1:],
                                                                             data.judged[last:last + 1])[0]
    data.position = start + steps
    if not erred:
        return limit, steps
    return (steps - 1 if steps_unit else int(data.counts[last] - data.counts[start])), steps


def run_trial(row: str, seed: int, max_streams: int, max_steps: int | None = None,
              learning_rule: str | None = None) -> dict[str, Any]:
    """Trial ``seed`` of the row with carried training state, stopped before a training stream
    once ``max_steps`` training steps are done (as `lstmgraph reproduce --max-steps`); the row's
    result row, its class from the last test phase. ``learning_rule``: the row's net trained
    by another rule (as `lstmgraph sweep ROW --vary learning_rule=...` sets it)."""
    experiment = find_experiment(row)
    if learning_rule is not None:
        experiment = grid(experiment, [("learning_rule", [learning_rule])], add_own=False)[0].experiment
    protocol = experiment.protocol
    engine = trial_engine(experiment.plan(), seed)
    task = experiment.make_task()
    training, testing = StreamData(task, data_rng(seed, 0)), StreamData(task, data_rng(seed, 1))
    started = time.process_time()
    streams = steps = 0
    scores = [0] * protocol.test_streams
    solved = diverged = False
    engine.reset()
    reported = started
    while streams < max_streams and (max_steps is None or steps < max_steps):
        right, run = carried_training_stream(engine, training, protocol)
        steps += run
        streams += 1
        if right >= protocol.train_limit:
            engine.rate *= protocol.rate_decay
        if not engine.finite():
            diverged = True
            break
        carried = engine.population.snapshot()  # the tests start from zero states; training goes on from here
        scores = [stream_score(engine, testing, protocol, protocol.test_limit, learn=False)[0]
                  for _ in range(protocol.test_streams)]
        engine.population.restore(carried)
        if time.process_time() - reported >= REPORT_EVERY:
            reported = time.process_time()
            print(f"  trial {seed}: {streams:,} training streams, {steps:,} steps; the last {right:,} symbols "
                  f"right; test streams {', '.join(f'{score:,}' for score in scores)}", flush=True)
        if min(scores) >= protocol.test_limit:
            solved = True
            break
    score = sum(scores) / len(scores)
    return {"seed": seed, "solved": solved, "to_success": streams if solved else None, "presented": streams,
            "steps": steps, "diverged": diverged, "score": score, "capped": not (solved or diverged) and streams < max_streams,
            "class": "perfect" if solved else ("good" if score >= protocol.good_score else "rest"),
            "cpu_seconds": time.process_time() - started}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--row", choices=ROWS, default="gers2000-cerg-forget")
    parser.add_argument("--variant", choices=VARIANTS, default="carried-state")
    parser.add_argument("--trials", type=int, default=30, help="seeds 0 to N-1")
    parser.add_argument("--max-streams", type=int, help="training streams per trial (default: the row's)")
    parser.add_argument("--max-steps", type=int, help="training steps per trial, checked before each training stream")
    parser.add_argument("--learning-rule", choices=("truncated_rtrl", "rtrl"),
                        help="train the row's net by this rule (default: the row's)")
    parser.add_argument("--out", type=Path, required=True, help="folder for trials.jsonl (appended; a rerun resumes)")
    arguments = parser.parse_args()
    max_streams = arguments.max_streams or find_experiment(arguments.row).protocol.max_streams
    log = arguments.out / "trials.jsonl"
    arguments.out.mkdir(parents=True, exist_ok=True)
    rows = [json.loads(line) for line in log.read_text().splitlines() if line.strip()] if log.exists() else []
    done = {row["seed"] for row in rows}
    cap = f" or {arguments.max_steps:,} training steps" if arguments.max_steps else ""
    rule = f", {arguments.learning_rule}" if arguments.learning_rule else ""
    print(f"{arguments.row}{rule}, {arguments.variant}: seeds 0-{arguments.trials - 1}, at most {max_streams:,} "
          f"training streams{cap}; {len(done)} already in {log}", flush=True)
    for seed in range(arguments.trials):
        if seed in done:
            continue
        row = run_trial(arguments.row, seed, max_streams, arguments.max_steps, arguments.learning_rule)
        rows.append(row)
        with log.open("a") as file:
            file.write(json.dumps(row) + "\n")
            file.flush()
        print(json.dumps(row), flush=True)
    mine = [row for row in rows if row["seed"] < arguments.trials]
    perfect = sorted(row["to_success"] for row in mine if row["solved"])
    low, high = wilson(len(perfect), len(mine))
    mean = f", mean {sum(perfect) / len(perfect):,.0f} training streams to success" if perfect else ""
    good = sum(row["class"] == "good" for row in mine)
    print(f"{arguments.variant}: {len(perfect)} of {len(mine)} perfect ({100 * low:.0f}-{100 * high:.0f} %, "
          f"Wilson 95 %){mean}; {good} good, {len(mine) - len(perfect) - good} rest; "
          f"{sum(row['capped'] for row in mine)} stopped at the step cap")


if __name__ == "__main__":
    main()
