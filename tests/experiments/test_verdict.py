"""Verdicts from confidence intervals: the intervals against hand-worked numbers, the rules for
a published rate in between and at 0 % or 100 % (docs/results.md's generated table:
test_results_table.py)."""

from __future__ import annotations

import pytest

from lstmgraph.experiments import find_experiment
from lstmgraph.experiments.summary import comparison, no_verdict_reason, summarise
from lstmgraph.experiments.verdict import (DIFFERS, NOT_JUDGED, REFERENCE, REPRODUCED, Judgement, bootstrap_mean,
                                           bootstrap_ratio, fisher_exact, judge, judge_rate, paper_count,
                                           settled_verdict, trials_left_note, verdict, verdict_rows, wilson)


def test_wilson_7_of_10_by_hand():
    # p = 0.7, n = 10, z = 1.96: centre (0.7 + z^2/20) / (1 + z^2/10) = 0.89207 / 1.38415 = 0.64449;
    # half z sqrt(0.7 * 0.3 / 10 + z^2 / 400) / 1.38415 = 1.96 * 0.17494 / 1.38415 = 0.24772
    low, high = wilson(7, 10)
    assert low == pytest.approx(0.39678, abs=1e-5) and high == pytest.approx(0.89221, abs=1e-5)


@pytest.mark.parametrize("k, n, low, high", [
    (0, 10, 0.0, 0.27753),       # z^2 / (n + z^2) = 3.84146 / 13.84146
    (10, 10, 0.72247, 1.0),
    (1, 2, 0.09453, 0.90547),
    (11, 20, 0.34209, 0.74180),
])
def test_wilson_at_the_ends_and_in_between(k, n, low, high):
    assert wilson(k, n) == (pytest.approx(low, abs=1e-5), pytest.approx(high, abs=1e-5))


def test_wilson_needs_a_count():
    with pytest.raises(ValueError):
        wilson(3, 2)
    with pytest.raises(ValueError):
        wilson(0, 0)


def test_bootstrap_of_two_values_is_their_range_and_is_deterministic():
    # resampled means of {1, 3}: 1 (p 1/4), 2 (p 1/2), 3 (p 1/4); the 2.5 % and 97.5 % points are 1 and 3
    assert bootstrap_mean([3, 1]) == (1.0, 3.0)
    assert bootstrap_mean([5, 5, 5]) == (5.0, 5.0)
    values = [8_000, 12_000, 9_500, 30_000, 4_000]
    assert bootstrap_mean(values) == bootstrap_mean(list(reversed(values)))
    low, high = bootstrap_mean(values)
    assert 4_000 < low < sum(values) / 5 < high < 30_000


def test_bootstrap_of_many_values_is_near_the_normal_interval():
    values = list(range(100))      # mean 49.5, sd 29.01, standard error 2.901
    low, high = bootstrap_mean(values)
    assert low == pytest.approx(49.5 - 1.96 * 2.901, abs=0.6) and high == pytest.approx(49.5 + 1.96 * 2.901, abs=0.6)


def test_bootstrap_of_a_ratio_by_hand_and_deterministic():
    # one value each: every resample gives 30 / 10
    assert bootstrap_ratio([30], [10]) == (3.0, 3.0)
    # {1, 3} over {2}: resampled means 1, 2, 3 (p 1/4, 1/2, 1/4) over 2: the 2.5 % and 97.5 % points 0.5 and 1.5
    assert bootstrap_ratio([3, 1], [2]) == (0.5, 1.5)
    ours, theirs = [20_561, 858_858, 13_562, 91_554], [13_839, 11_780, 28_783]
    assert bootstrap_ratio(ours, theirs) == bootstrap_ratio(list(reversed(ours)), list(reversed(theirs)))
    low, high = bootstrap_ratio(ours, theirs)
    assert low < (sum(ours) / 4) / (sum(theirs) / 3) < high
    with pytest.raises(ValueError):
        bootstrap_ratio([1.0], [])


def test_a_verdict_differs_if_a_figure_does_else_is_not_judged_if_one_cannot_be():
    def one(result):
        return Judgement("figure", "-", "-", "-", result)

    assert verdict([]) == NOT_JUDGED
    assert verdict([one(REPRODUCED), one(REPRODUCED)]) == REPRODUCED
    assert verdict([one(REPRODUCED), one(NOT_JUDGED)]) == NOT_JUDGED
    assert verdict([one(NOT_JUDGED), one(DIFFERS)]) == DIFFERS


def _with_reference(results, solved, problem=None, folder="results/gers2000-nto-standard"):
    return {**results, REFERENCE: {"name": "gers2000-nto-standard", "folder": folder, "solved": solved,
                                   "problem": problem}}


def test_a_published_ratio_judges_the_mean_against_the_other_row_s():
    # gers2000-nto-forget-bias5: "as fast as standard LSTM", read as 100 % solved, the mean 1 times the standard row's
    standard = [14_000, 12_000, 16_000, 13_000]
    alike = _results("gers2000-nto-forget-bias5", [_row(seed, value) for seed, value in enumerate([15_000, 13_500,
                                                                                                   12_500, 14_500])])
    judged = judge(_with_reference(alike, standard))
    assert [j.figure for j in judged] == ["% solved", "mean sequences to success against gers2000-nto-standard"]
    assert [j.verdict for j in judged] == [REPRODUCED, REPRODUCED] and judged[1].published == "1 time"
    slow = _results("gers2000-nto-forget-bias5", [_row(seed, value) for seed, value in enumerate([45_000, 40_000,
                                                                                                  50_000, 42_000])])
    assert verdict(judge(_with_reference(slow, standard))) == DIFFERS
    # "about 3 times slower": the same slow trials reproduce gers2000-nto-forget-bias1's reading
    bias1 = _results("gers2000-nto-forget-bias1", slow["trials"])
    assert verdict(judge(_with_reference(bias1, standard))) == REPRODUCED
    # the other row's trials not read, or unfit to stand for it: that figure is not judged, nor the row
    alone = judge(alike)
    assert alone[1].verdict == NOT_JUDGED and alone[1].reason == "its trials were not read"
    assert verdict(alone) == NOT_JUDGED
    unfit = judge(_with_reference(alike, [14_000], "X has 1 solved trial, too few for a mean's spread"))
    assert unfit[1].verdict == NOT_JUDGED and unfit[1].reason.startswith("X has 1 solved trial")
    assert verdict(unfit) == NOT_JUDGED
    # ... unless another figure differs (no net learned: "learns" read as 100 % solved)
    never = _results("gers2000-nto-forget-bias1", [_row(seed, None) for seed in range(10)])
    assert verdict(judge(never)) == DIFFERS
    # fewer than two solved trials of ours: no spread to judge the ratio by (the rate decides)
    one = _results("gers2000-nto-forget-bias5", [_row(0, 14_000)] + [_row(seed, None) for seed in range(1, 10)])
    assert [j.figure for j in judge(_with_reference(one, standard))] == ["% solved"]
    # reproduce's table shows the interval, or why there is none
    rows = {figure: (ours, published) for figure, ours, published in verdict_rows(_with_reference(slow, standard))}
    ours, published = rows["mean sequences to success against gers2000-nto-standard, 95 % interval"]
    assert ours.endswith(" times") and published == "1 time"
    assert "not read" in dict((f, o) for f, o, _ in verdict_rows(alike))[
        "mean sequences to success against gers2000-nto-standard, 95 % interval"]


def test_a_ratio_settles_only_when_the_rate_does_or_every_trial_has_run():
    standard = [14_000, 12_000, 16_000, 13_000]
    some = _with_reference(_results("gers2000-nto-forget-bias5", [_row(seed, 14_000 + seed) for seed in range(9)]),
                           standard)
    assert settled_verdict(some, 1) is None  # the last trial could move the mean
    failing = _with_reference(_results("gers2000-nto-forget-bias1", [_row(seed, None) for seed in range(5)]), standard)
    assert settled_verdict(failing, 5) == DIFFERS  # 5 of 10 at most, against 10 of 10


def test_fisher_exact_by_hand():
    # 5 of 10 against 10 of 10: margins 15 successes of 20; P(ours 5) = C(15,5) C(5,5) / C(20,10)
    # = 3003 / 184756, and the other tail (ours 10) has the same probability: p = 0.0325
    assert fisher_exact(5, 10, 10, 10) == pytest.approx(2 * 3003 / 184756)
    # 1 of 10 against 0 of 100: P(ours 1) = 10 / 110, the only table as unlikely
    assert fisher_exact(1, 10, 0, 100) == pytest.approx(10 / 110)
    assert fisher_exact(29, 30, 30, 30) == 1.0 and fisher_exact(0, 2, 10, 10) == pytest.approx(1 / 66)


def test_a_published_0_or_100_percent_is_a_count_of_the_paper_s_trials():
    assert judge_rate(29, 30, 100, 30).verdict == REPRODUCED
    assert judge_rate(10, 10, 100, 10).verdict == REPRODUCED
    assert judge_rate(0, 2, 0, 10).verdict == REPRODUCED
    assert judge_rate(1, 10, 0, 100).verdict == REPRODUCED       # p = 0.09
    assert judge_rate(1, 2, 0, 100).verdict == DIFFERS           # p = 0.02
    assert judge_rate(5, 10, 100, 10).verdict == DIFFERS         # p = 0.03
    assert judge_rate(13, 30, 100, 30).verdict == DIFFERS
    assert judge_rate(0, 2, 100, 10).verdict == DIFFERS          # p = 1/66


def test_a_published_rate_in_between_is_a_count_of_the_paper_s_trials_too():
    assert paper_count(97, 30) == 29 and paper_count(62, 100) == 62 and paper_count(100, 10) == 10
    assert judge_rate(7, 10, 62, 100).verdict == REPRODUCED      # p = 0.74
    assert judge_rate(11, 20, 18, 100).verdict == DIFFERS        # p = 0.001
    # the paper's 24 of 100 is a sample as ours is: p = 0.10, though 24 % lies outside our 9-22 %
    rate = judge_rate(14, 100, 24, 100)
    assert rate.verdict == REPRODUCED and rate.interval == "9-22 %"
    assert rate.reason == "Fisher exact p = 0.1 against the paper's 24 of 100"
    assert judge_rate(7, 10, 90, 100).verdict == REPRODUCED      # p = 0.10
    assert judge_rate(12, 100, 37, 100).verdict == DIFFERS
    # one rule for every rate: 25 of 30 matching a published 100 % must match 97 % (29 of 30) too
    assert judge_rate(25, 30, 100, 30).verdict == judge_rate(25, 30, 97, 30).verdict == REPRODUCED
    assert judge_rate(24, 30, 97, 30).verdict == REPRODUCED and judge_rate(24, 30, 100, 30).verdict == DIFFERS


def _results(name, rows):
    experiment = find_experiment(name)
    return {"experiment": experiment.describe(), "summary": summarise(experiment, rows), "trials": rows,
            "budget_steps": None}


def _row(seed, to_success):
    return {"seed": seed, "solved": to_success is not None, "to_success": to_success, "steps": 5, "seconds": 1.0,
            "class": "perfect" if to_success else "rest", "score": 0.0, "presented": to_success or 30_000}


def test_a_row_is_reproduced_only_when_every_figure_given_is():
    # gers2000-cerg-forget-decay: 62 % perfect, mean 14,087 streams
    near = _results("gers2000-cerg-forget-decay", [_row(0, 13_000), _row(1, 15_500), _row(2, 14_000),
                                                    _row(3, None), _row(4, 12_000), _row(5, None)])
    judged = judge(near)
    assert [j.figure for j in judged] == ["% perfect", "mean training streams to success"]
    assert verdict(judged) == REPRODUCED
    fast = _results("gers2000-cerg-forget-decay", [_row(0, 3_000), _row(1, 4_000), _row(2, 3_500),
                                                    _row(3, None), _row(4, 5_000), _row(5, None)])
    assert [j.verdict for j in judge(fast)] == [REPRODUCED, DIFFERS] and verdict(judge(fast)) == DIFFERS
    # one solved trial: the mean is not judged
    assert [j.figure for j in judge(_results("gers2000-cerg-forget-decay", [_row(0, 3_000), _row(1, None)]))] \
        == ["% perfect"]
    # a finding in words only
    assert verdict(judge(_results("gers2000-cerg-forget-without-begin-end", [_row(0, 100)]))) == NOT_JUDGED


def test_a_verdict_is_settled_when_no_outcome_of_the_trials_left_changes_it():
    # cerg-state-decay, published 0 % of 100: 25 of 88 perfect; 25 to 37 of 100 all differ
    decay = _results("gers2000-cerg-state-decay", [_row(seed, 9_000 if seed < 25 else None) for seed in range(88)])
    assert settled_verdict(decay, 12) == DIFFERS
    assert trials_left_note(decay, 12) == "the 12 trials not finished cannot change it"
    assert trials_left_note(decay, 0) == ""
    # 0 of 2 against 0 % of 100: none of 98 more perfect is consistent, all of them is not
    standard = _results("gers2000-cnto-standard", [_row(0, None), _row(1, None)])
    assert verdict(judge(standard)) == REPRODUCED and settled_verdict(standard, 98) is None
    assert trials_left_note(standard, 98) == "the 98 trials not finished can change it"
    # forget-decay, 62 % of 100: 40 or 41 of 100 differ whatever the mean (p = 0.003, 0.005); 75 of 99
    # does not settle, 75 of 100 passing (p = 0.07) and 76 of 100 not (p = 0.046)
    forget = _results("gers2000-cerg-forget-decay", [_row(seed, 14_000 if seed < 40 else None) for seed in range(99)])
    assert settled_verdict(forget, 1) == DIFFERS
    assert settled_verdict(_results("gers2000-cerg-forget-decay", [_row(seed, 14_000 if seed < 75 else None)
                                                                    for seed in range(99)]), 1) is None
    # every count is tried, not only the ends: 62 % lies outside 0 of 30 and 30 of 30, inside 19 of 30
    assert settled_verdict(_results("gers2000-cerg-forget-decay", []), 30) is None
    # a rate reproduced whatever comes, and a published mean the new trials could move
    assert judge_rate(7, 10, 62, 100).verdict == REPRODUCED
    assert settled_verdict(_results("gers2000-cerg-forget-decay", [_row(seed, 14_000 if seed < 63 else None)
                                                                    for seed in range(99)]), 1) is None
    # no mean published: a rate consistent whatever comes settles it (GTS, 100 % of 10: 6 to 10
    # of 10 are consistent, p >= 0.087), not while 5 of 10 (p = 0.033) can still come
    gts = [_row(seed, 8_000) for seed in range(6)]
    assert settled_verdict(_results("gers2002-gts-peephole", gts), 4) == REPRODUCED
    assert settled_verdict(_results("gers2002-gts-peephole", gts[:5]), 5) is None
    # a finding in words only: nothing can change "not judged"
    assert settled_verdict(_results("gers2000-cerg-forget-without-begin-end", [_row(0, 100)]), 99) == NOT_JUDGED
    # with no trial left, the verdict as it stands
    assert settled_verdict(forget, 0) == verdict(judge(forget))


def test_reproduce_prints_the_intervals_and_the_verdict():
    results = _results("gers2000-cerg-forget", [_row(seed, 10_000 + 1000 * seed if seed < 11 else None)
                                                for seed in range(20)])
    table = {label: (ours, theirs) for label, ours, theirs in comparison(results)}
    assert table["% perfect, 95 % interval"] == ("34-74 %", "18 %")
    assert table["mean training streams to success, 95 % interval"][1] == "18,889"
    assert table["verdict"] == ("differs", "(% perfect, mean training streams to success)")
    gts = _results("gers2002-gts-peephole", [_row(seed, 8_000) for seed in range(10)])
    table = {label: (ours, theirs) for label, ours, theirs in comparison(gts)}
    assert table["% perfect, 95 % interval"] == ("72-100 %", "100 % of 10")
    assert table["verdict"] == ("reproduced", "")


def test_a_quick_look_gets_its_figures_and_no_verdict():
    """Fewer trials than the paper's, or capped trials: the intervals, and the reason instead of
    a verdict (issue 34); the paper's count uncapped: the verdict."""
    rows = [_row(seed, 8_000) for seed in range(2)]
    quick = _results("gers2002-gts-peephole", rows)
    assert no_verdict_reason(quick) == "2 of 10 trials"
    table = {label: ours for label, ours, _ in comparison(quick, 2)}
    assert "verdict" not in table and "% perfect, 95 % interval" in table
    stopped = [{**_row(seed, None), "steps": 2_003} for seed in range(3)] + [_row(seed, 8_000) for seed in range(3, 10)]
    capped = {**_results("gers2002-gts-peephole", stopped), "budget_steps": 2000}
    assert no_verdict_reason(capped) == "10 of 10 trials, capped at 2,000 training steps"
    assert "verdict" not in {label for label, _, _ in comparison(capped)}
    # A cap no trial reached (every net solved within it, or stopped by the paper's own limit) changed nothing.
    unreached = {**_results("gers2002-gts-peephole", [_row(seed, 8_000) for seed in range(10)]), "budget_steps": 2000}
    assert no_verdict_reason(unreached) is None and ("verdict", "reproduced", "") in comparison(unreached, 10)
    full = _results("gers2002-gts-peephole", [_row(seed, 8_000) for seed in range(10)])
    assert no_verdict_reason(full) is None and ("verdict", "reproduced", "") in comparison(full, 10)


def test_a_stream_summary_stores_its_rate_under_its_protocol_s_key_alone_and_old_ones_still_read():
    results = _results("gers2002-gts-peephole", [_row(0, 8_000), _row(1, None)])
    assert results["summary"]["perfect_percent"] == 50.0 and "success_percent" not in results["summary"]
    old = {**results, "summary": {**results["summary"], "success_percent": 50.0}, "trials": None}
    assert [j.ours for j in judge(old)] == [j.ours for j in judge({**results, "trials": None})] == ["1 of 2 = 50 %"]


def test_a_settled_outcome_is_reproduced_or_differs_and_capped_trials_settle_nothing():
    from lstmgraph.experiments.verdict import settled_outcome

    experiment = {"unit": "training streams", "published": {"perfect_percent": 37}, "trials": 100}
    rows = [{"seed": seed, "solved": seed < 3, "to_success": 1000 if seed < 3 else None, "steps": 2000}
            for seed in range(80)]
    results = {"experiment": experiment, "summary": {"trials": 80}, "trials": rows}
    assert settled_outcome(results, 20) == "differs"   # 3 of 80: 23 of 100 at most, p = 0.044 against 37 of 100
    assert settled_outcome(results, 22) is None        # 25 of 102 could still pass (p = 0.07)
    assert settled_outcome({**results, "budget_steps": 2000}, 20) is None  # a net the cap stopped might still learn
    assert settled_outcome({**results, "budget_steps": 2001}, 20) == "differs"  # a cap no net reached: none
    unpublished = {**results, "experiment": {**experiment, "published": {}}}
    assert settled_outcome(unpublished, 20) is None    # not judged: never settled
    # nor does a cap settle "reproduced": 0 of 10 against a published 0 %, every net stopped by the cap
    zero = {"experiment": {**experiment, "published": {"perfect_percent": 0}, "trials": 10},
            "summary": {"trials": 10}, "trials": rows[3:13], "budget_steps": 2000}
    assert settled_verdict(zero, 0) == REPRODUCED and settled_outcome(zero, 0) is None
    assert settled_outcome({**zero, "budget_steps": 2001}, 0) == REPRODUCED


def test_a_ratio_s_interval_never_shows_a_bound_equal_to_a_published_ratio_outside_it():
    """Before: "published 1 time outside ours 1-1.1 times" (two significant digits)."""
    from lstmgraph.experiments.verdict import _interval_text, fixed

    assert _interval_text(1.16, 19.79, 1, False) == "1.16-19.8 times"
    shown = _interval_text(1.0000001, 1.1, 1, False)
    assert shown.startswith("1.0000001") and float(shown.split("-")[0]) != 1
    assert _interval_text(0.999, 1.1, 1, True) == "0.999-1.10 times"
    assert [fixed(value) for value in (7.2046, 123.4, 0.41, 1234.5)] == ["7.20", "123", "0.410", "1,234"]
