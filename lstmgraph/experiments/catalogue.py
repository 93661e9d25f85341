"""Every table row of the three papers as a named experiment (`experiment.Experiment`;
`lstmgraph reproduce --list`). Protocol settings the papers leave open are chosen and explained
in docs/results.md.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

from ..bundled import SPEC_FORMATS, bundled_spec
from ..plan.summary import PAPERS
from ..tasks.base import task_success_test
from .experiment import Experiment
from .sequences import SequenceProtocol
from .streams import StreamProtocol
from .variants import (EIGHT_SYMBOLS, IDENTITY_OUTPUT, STATE_DECAY, WIRING_2000, WITHOUT_FORGET_GATE,
                       WITHOUT_PEEPHOLES, forget_gate_bias)

H97, G00, G02 = PAPERS["hochreiter1997"], PAPERS["gers2000"], PAPERS["gers2002"]

def _judged_as(task: str) -> dict[str, Any]:
    """A protocol's ``success`` and ``tolerance``: the test the task declares (the paper's)."""
    test, _ = task_success_test(task)
    return {"success": test.name, "tolerance": test.tolerance}

# 1997: ERG, success = every symbol of 256 training and 256 test strings predicted (most active).
# The full check (all 512 strings, weights frozen) runs when the last 256 training strings were
# predicted right online, and every 250 sequences: sequences to success are exact to 250.
_ERG = SequenceProtocol(**_judged_as("embedded_reber"), fixed_sets=256, data_sets=3, window=256,
                        max_sequences=200_000, evaluate_every=250)
# Adding and temporal order: the paper's stop rule on the last 2,000 sequences, each judged by
# its task's test (`_judged_as`).
_ADDING = SequenceProtocol(**_judged_as("adding"), window=2000, max_error=0.01,
                           max_sequences=2_000_000)
_TEMPORAL = SequenceProtocol(**_judged_as("temporal_order"), window=2000, max_error=0.1,
                             max_sequences=2_000_000)
# 2000 CERG: |error| < 0.49 at all 7 outputs, i.e. every output on the right side of 0.5.
# Printed as "squared error < 0.49" (|error| < 0.7), the test is passed by an untrained net,
# whose outputs all sit near 0.5: measured, 2 of 9 trials were "perfect" after one training
# stream of 14 and 19 steps. docs/results.md has the details. A training stream ends at its
# first error or after 10^6 symbols (seed 000: "模型連續接收 10^6 個輸入"; 10^5 until issue 15);
# perfect = each of the 10 test streams 10^6 symbols without an error (seed 000: "完美預測指的是
# 連續 10^6 輸入都預測正確"). Until 2026-11-23 the test streams stopped at 10^5 (10 x 10^5 = 10^6
# predictions, not successive); half of the nets perfect so by that reading fail fresh streams of
# 10^6 (benchmarks/long_test_streams.py), and docs/results/test-streams-1e5 keeps those runs.
_CERG = StreamProtocol(**_judged_as("continual_embedded_reber"), unit="steps", train_limit=1_000_000,
                       test_limit=1_000_000, max_streams=30_000)
# 2002: streams counted in sequences (one period or spike interval each): train 100, test 1,000
# (seed 002, lines 256-257), at most 10^7 training streams, each followed by one test stream
# (line 258: "每執行一次訓練就進行一次測試", one test after each training). Until issue 38 the rows
# ran 10 test streams, all to pass; docs/results/test-streams-10 keeps those runs
# (`--protocol-option test_streams=10`).
_TIMING = StreamProtocol(**_judged_as("measuring_spike_delays"), unit="sequences", train_limit=100,
                         test_limit=1000, max_streams=10_000_000, good_score=100, test_streams=1)
_GTS = {"period": 10, "delays": [0, 1], "cue": "length"}
# Two departures from seed 000 the rows name: its literal decay (x0.99 after every weight update)
# learns nothing (docs/results.md), and it gives no state-decay constant.
_DECAY_PER_STREAM = "the rate decays after each error-free training stream, not after every update"
_STATE_DECAY_CONSTANT = "the state-decay constant 0.9 is ours; seed 000 gives none"


def _erg(blocks: str, spec: str, rate: float, percent: int, mean: int, extra: dict | None = None) -> Experiment:
    return Experiment(f"hochreiter1997-erg-{blocks}-lr{rate}", H97, "Table 1", spec, "embedded_reber",
                      _ERG, 30, {"success_percent": percent, "mean_to_success": mean, **(extra or {})},
                      learning_rate=rate)


_TABLE_1 = (
    _erg("4x1", "hochreiter1997_erg_4x1", 0.1, 100, 39_740),
    _erg("3x2", "hochreiter1997_erg", 0.1, 100, 21_730),
    _erg("3x2", "hochreiter1997_erg", 0.2, 97, 14_060),
    _erg("4x1", "hochreiter1997_erg_4x1", 0.5, 97, 9_500),
    _erg("3x2", "hochreiter1997_erg", 0.5, 100, 8_440, {"range": "3,800-24,100"}),
)

_TABLE_7 = tuple(
    Experiment(f"hochreiter1997-adding-t{length}", H97, "Table 7", "hochreiter1997_adding", "adding", _ADDING, 10,
               {"success_percent": 100, "mean_to_success": mean, "test_wrong": wrong}, task_options={"length": length})
    for length, mean, wrong in ((100, 74_000, 1), (500, 209_000, 0), (1000, 853_000, 1)))

# Seed 002 states no MSD result: its Figs. 3-5 are images, and its text (lines 303-311) speaks of
# NMSD. So the continual MSD row is shown, not judged; the NMSD rows carry the text's finding.
_MSD = Experiment("gers2002-msd-f10-peephole", G02, "text", "gers2002_timing", "measuring_spike_delays",
                  replace(_TIMING, max_streams=100_000_000), 10,  # line 260: up to 10^8 streams for MSD
                  {"finding": "no figure in seed 002 (its MSD figures are images; its text speaks of NMSD)"},
                  task_options={"period": 10, "delays": [0, 1]}, learning_rate=1e-5, momentum=0.9999)

# NMSD (seed 002, line 286): one interval a training stream (n = 1), the state reset before each
# interval; momentum 0.99 (line 265). Our reading: a test stream is 1,000 intervals, each from a
# reset state, as MSD's test is 1,000 spikes.
_NMSD = tuple(
    Experiment(f"gers2002-nmsd-f10-{'peephole' if peep else 'no-peephole'}", G02, "text", "gers2002_timing",
               "measuring_spike_delays", replace(_TIMING, train_limit=1, max_streams=100_000_000,
                                                 reset_each_sequence=True), 10,
               {"finding": "peephole connections are not important here, but still better than LSTM-2000"},
               task_options={"period": 10, "delays": [0, 1], "continual": False},
               variants=() if peep else (WITHOUT_PEEPHOLES,), learning_rate=1e-5, momentum=0.99)
    for peep in (True, False))

_PFG = tuple(
    Experiment(f"gers2002-pfg-{shape[:3]}-f{period}-{'peephole' if peep else 'no-peephole'}", G02, "text",
               "gers2002_timing", "periodic_function", replace(_TIMING, **_judged_as("periodic_function"), test_streams=1),
               10, {"finding": finding, "perfect_percent": 100},
               task_options={"shape": shape, "period": period, "length": period},
               variants=(IDENTITY_OUTPUT,) + (() if peep else (WITHOUT_PEEPHOLES,)),
               learning_rate=1e-5, momentum=0.99)
    for shape, period, peep, finding in (
        ("cosine", 10, True, "solved with peepholes"),
        ("cosine", 10, False, "the only PFG task learned without peepholes"),
        ("cosine", 25, True, "solved; stricter run (threshold 0.15): RMSE 0.086, 2,704,000 streams"),
        ("triangle", 10, True, "solved with peepholes"),
        ("rectangle", 10, True, "solved with peepholes")))
# F = 25 for every wave (seed 002, line 408: F in {10, 25}); its text says LSTM-2000 learns only
# the cosine at F = 10 (line 420), and Fig. 11, an image, holds the rest.
_PFG_F25 = tuple(
    replace(_PFG[-1], name=f"gers2002-pfg-{shape[:3]}-f25-peephole",
            published={"finding": "learned with peepholes (LSTM-2000 learns only the cosine at F = 10)",
                       "perfect_percent": 100},
            task_options={"shape": shape, "period": 25, "length": 25})
    for shape in ("triangle", "rectangle"))
FORGET_OPEN = forget_gate_bias(2.0)


def _forget_open(row: Experiment) -> Experiment:
    """A 2002 row with its forget gate initially open (bias +2) instead of seed 002's -2, which
    the seed itself finds surprising next to the 2000 nets' positive biases."""
    return replace(row, name=f"{row.name}-forget-open", table=f"{row.table} (our extension, not a paper row)",
                   variants=row.variants + (FORGET_OPEN,),
                   note=f"the {row.name} row's task and protocol with the forget gate's bias initialised to +2 "
                        "(open) instead of seed 002's -2")


EXPERIMENTS: dict[str, Experiment] = {e.name: e for e in [
    *_TABLE_1,
    # Not paper rows: each Table 1 row's task and protocol on the 1997 net with the 2000 net's
    # wiring, trained on the legal next symbols; the ERG wiring ablation in docs/results.md
    # explains why they are here.
    *[replace(row, name=f"{row.name}-2000-wiring", table="Table 1 (our extension, not a paper row)",
              variants=WIRING_2000, task_options={"targets": "legal"},
              note="the Table 1 row's task and protocol on the 1997 net with the 2000 CERG net's wiring "
                   "(input-to-output shortcut, output biases, cell outputs as the only recurrent sources), "
                   "trained on the set of legal next symbols")
      for row in _TABLE_1],
    *_TABLE_7,
    # Not paper rows: with a logistic output the nets miss the extreme sums (targets near 0 or 1)
    # and the stop rule is not met; docs/results.md has the measurements.
    *[replace(row, name=f"{row.name}-linear-output", table="Table 7 (our extension, not a paper row)",
              variants=(IDENTITY_OUTPUT,),
              note="the Table 7 row's task and protocol with an identity (linear) output unit")
      for row in _TABLE_7],
    *[Experiment(f"hochreiter1997-multiplication-t100-nseq{n_seq}", H97, "Table 8", "hochreiter1997_adding",
                 "multiplication",
                 SequenceProtocol(**_judged_as("multiplication"), window=2000, allowed_wrong=n_seq - 1,
                                  max_sequences=3_000_000),
                 10, {"success_percent": 100, "mean_to_success": mean, "test_wrong": wrong, "test_mse": mse},
                 task_options={"length": 100}, learning_rate=0.1)
      for n_seq, mean, wrong, mse in ((140, 482_000, 139, 0.0223), (13, 1_273_000, 14, 0.0139))],
    Experiment("hochreiter1997-temporal-order-6a", H97, "Table 9", "hochreiter1997_temporal_order_6a",
               "temporal_order", _TEMPORAL, 20, {"success_percent": 100, "mean_to_success": 31_390, "test_wrong": 1},
               task_options={"variant": "6a"}),
    Experiment("hochreiter1997-temporal-order-6b", H97, "Table 9", "hochreiter1997_temporal_order_6b",
               "temporal_order", _TEMPORAL, 10, {"success_percent": 100, "mean_to_success": 571_100, "test_wrong": 2},
               task_options={"variant": "6b"}),
    Experiment("gers2000-cerg-standard-reset", G00, "Table 2", "gers2000_cerg", "continual_embedded_reber",
               replace(_CERG, reset_each_sequence=True),
               100, {"perfect_percent": 74, "mean_to_success": 7_441, "good_percent": 0, "rest_percent": 26},
               variants=(WITHOUT_FORGET_GATE,)),
    Experiment("gers2000-cerg-standard", G00, "Table 2", "gers2000_cerg", "continual_embedded_reber", _CERG, 100,
               {"perfect_percent": 0, "good_percent": 1, "rest_percent": 99}, variants=(WITHOUT_FORGET_GATE,)),
    Experiment("gers2000-cerg-state-decay", G00, "Table 2", "gers2000_cerg", "continual_embedded_reber", _CERG,
               100, {"perfect_percent": 0, "good_percent": 0, "rest_percent": 100},
               variants=(WITHOUT_FORGET_GATE, STATE_DECAY), departures=(_STATE_DECAY_CONSTANT,)),
    Experiment("gers2000-cerg-forget", G00, "Table 2", "gers2000_cerg", "continual_embedded_reber", _CERG, 100,
               {"perfect_percent": 18, "mean_to_success": 18_889, "good_percent": 29, "rest_percent": 53}),
    Experiment("gers2000-cerg-forget-decay", G00, "Table 2", "gers2000_cerg", "continual_embedded_reber",
               replace(_CERG, rate_decay=0.99),
               100, {"perfect_percent": 62, "mean_to_success": 14_087, "good_percent": 6, "rest_percent": 32},
               departures=(_DECAY_PER_STREAM,)),
    Experiment("gers2000-cerg-forget-without-begin-end", G00, "text", "gers2000_cerg", "continual_embedded_reber",
               _CERG, 100, {"finding": "forget-gate LSTM still learns the task"},
               task_options={"without_begin_end": True}),
    # NTO (seed 000, lines 911-913): each finding read as every net learning; "as fast as" and
    # "about 3 times slower" as the mean over gers2000-nto-standard's (`verdict.judge_ratio`).
    *[Experiment(f"gers2000-nto-{label}", G00, "text", "gers2000_cerg", "temporal_order", _TEMPORAL, 10,
                 {"finding": finding, "success_percent": 100, **ratio}, task_options={"variant": "6b"},
                 variants=(EIGHT_SYMBOLS,) + variants)
      for label, variants, finding, ratio in (
          ("standard", (WITHOUT_FORGET_GATE,), "learns (1997 Exp. 6b: 571,100 sequences)", {}),
          ("forget-bias5", (forget_gate_bias(5.0, "forget-gate biases +5"),),
           "as fast as standard LSTM", {"ratio_to": "gers2000-nto-standard", "mean_ratio": 1}),
          ("forget-bias1", (forget_gate_bias(1.0, "forget-gate biases +1"),),
           "about 3 times slower than standard LSTM", {"ratio_to": "gers2000-nto-standard", "mean_ratio": 3}))],
    # CNTO: the target is 0 on every output between classifications, and an output off by 0.3
    # there is an error too (seed 000, 實驗 3: "我猜變成每個非預測時間點必須輸出 0"; the paper does
    # not say). With no target there (the 1997 rule) the forget-gate nets learned twice as often
    # and twice as fast as published; with it their mean is the published one (docs/results.md).
    *[Experiment(f"gers2000-cnto-{label}", G00, "Table 3", "gers2000_cerg", "temporal_order",
                 StreamProtocol(**_judged_as("temporal_order"), unit="sequences", train_limit=100, test_limit=100,
                                max_streams=100_000, rate_decay=decay, good_score=50),
                 100, published, task_options={"variant": "6b", "continual": True, "idle_target": 0},
                 variants=(EIGHT_SYMBOLS,) + variants, departures=(_DECAY_PER_STREAM,) if decay != 1 else ())
      for label, variants, decay, published in (
          ("standard", (WITHOUT_FORGET_GATE,), 1.0, {"perfect_percent": 0}),
          ("forget", (forget_gate_bias(5.0, "forget-gate biases +5"),), 1.0,
           {"perfect_percent": 24, "mean_to_success": 74_977}),
          ("forget-decay", (forget_gate_bias(5.0, "forget-gate biases +5"),), 0.9,
           {"perfect_percent": 37, "mean_to_success": 79_354}))],
    *_PFG,
    *_PFG_F25,
    # The 2002 rows: the paper reports each setting solved or not by its 10 nets; "perfect_percent"
    # is that finding read as 100 % or 0 % (for the verdicts, lstmgraph/experiments/verdict.py).
    # GTS as seed 002 codes it (cue: length, the interval's length F + I(n) at its start);
    # docs/results.md keeps the runs with the former coding (cue: delay).
    Experiment("gers2002-gts-peephole", G02, "text", "gers2002_timing", "generating_timed_spikes", _TIMING, 10,
               {"finding": "solved only with peepholes", "perfect_percent": 100}, task_options=_GTS,
               learning_rate=1e-5, momentum=0.999),
    Experiment("gers2002-gts-no-peephole", G02, "text", "gers2002_timing", "generating_timed_spikes", _TIMING, 10,
               {"finding": "not solved", "perfect_percent": 0}, task_options=_GTS,
               variants=(WITHOUT_PEEPHOLES,), learning_rate=1e-5, momentum=0.999),
    Experiment("gers2002-gts-no-forget", G02, "text", "gers2002_timing", "generating_timed_spikes", _TIMING, 10,
               {"finding": "not solved without a forget gate", "perfect_percent": 0}, task_options=_GTS,
               variants=(WITHOUT_FORGET_GATE,), learning_rate=1e-5, momentum=0.999),
    _MSD,
    *_NMSD,
    # Not paper rows: the 2002 rows whose truncated-RTRL nets stay on a plateau here, with the
    # forget gate initially open; docs/results.md has the diagnosis.
    *[_forget_open(row) for row in (_MSD, *_PFG)],
]}


def with_current_reading(results: dict[str, Any]) -> dict[str, Any]:
    """A results.json's content with its row's published figures and trial count as the
    catalogue reads the paper now (a run keeps those of its day); as recorded for a row no longer
    in the catalogue, or for trials of another paper or table under a row's name (a printed
    spec swept as a spec). Every table and verdict of a committed folder judges by these."""
    recorded = results["experiment"]
    current = EXPERIMENTS.get(recorded["name"])
    if current is None or (recorded.get("paper"), recorded.get("table")) != (current.paper, current.table):
        return results
    return {**results, "experiment": {**results["experiment"], "published": current.published,
                                      "trials": current.trials}}


def find_experiment(name: str) -> Experiment:
    """The experiment called ``name``; KeyError names the closest ones, and for a name that is
    a spec (a spec file's name, an existing file, a bundled spec) how to run a spec."""
    import difflib
    if name not in EXPERIMENTS:
        close = difflib.get_close_matches(name, EXPERIMENTS, n=3, cutoff=0.5)
        hint = f"; did you mean {', '.join(close)}?" if close else "; see `lstmgraph reproduce --list`"
        if Path(name).suffix.lower() in SPEC_FORMATS or Path(name).exists() or bundled_spec(name) is not None:
            hint += (f"; to run a spec, not a row of the papers: `lstmgraph sweep {name} --vary KEY=V1,V2` "
                     f"(a grid of settings, many trials each) or `lstmgraph train {name}` (one run)")
        raise KeyError(f"no experiment named {name!r}{hint}")
    return EXPERIMENTS[name]
