"""Verdicts from confidence intervals: does a row's result agree with the paper's figure?

Three figures are judged, each where the paper gives it:

- the **success rate** (% solved for the 1997 sequence rows, % perfect for the 2000/2002 stream
  rows): our k of n trials, shown with its Wilson 95 % interval. The published rate is a count
  too, j = rate x N of the paper's N trials (`paper_count`); "reproduced" when a two-sided Fisher
  exact test of our k of n against the paper's j of N does not reject at the 5 % level (29 of 30
  against 30 of 30: p = 1; 5 of 10 against 10 of 10: p = 0.03, differs; 14 of 100 against 24
  of 100: p = 0.10). Asking instead whether the published rate lies in our interval would treat
  the paper's rate as exact: with the same process behind both, about 17 % of 100-trial rows
  would "differ", and 25 of 30 would match a published 100 % but not 97 %.
- the **mean sequences (or training streams) to success** over the solved trials: a percentile
  bootstrap 95 % interval (10,000 resamples, a fixed seed, so the same trials always give the
  same interval); "reproduced" when the published mean lies in it. Not judged with fewer than
  two solved trials.
- the **mean as a multiple of another row's**, where a finding compares two rows ("as fast as
  standard LSTM": 1 time; "about 3 times slower": 3): a percentile bootstrap 95 % interval of
  the ratio of the two means, each row's solved trials resampled apart; "reproduced" when the
  published multiple lies in it. The other row's trials come from its results folder beside
  this one, else from its own in the results root read (`reference.with_reference`); where
  they cannot stand for it (none, not finished, another task...), the figure is not judged.

A row "differs" when a figure does; else it is "not judged" when the paper gives no figure
(findings in words only, such as "still learns the task") or a figure cannot be judged; else
it is "reproduced".
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Iterable

import numpy as np

from .protocols import protocol_counting

#: The key `reference.with_reference` gives a results dict (never written to results.json): the
#: other row's name, folder and solved trials, for a published ratio.
REFERENCE = "reference"

#: The two-sided 95 % normal quantile.
Z95 = 1.959963984540054
#: Bootstrap resamples and the generator seed: fixed, so an interval is a function of the trials.
RESAMPLES = 10_000
BOOTSTRAP_SEED = 0

REPRODUCED, DIFFERS, NOT_JUDGED = "reproduced", "differs", "not judged"
#: A partial row's verdict while its trials not finished can still change it (`settled_verdict` None).
NOT_JUDGED_YET = "not judged yet"


def wilson(successes: int, trials: int, z: float = Z95) -> tuple[float, float]:
    """The Wilson score interval of a success rate (as fractions): ``successes`` of ``trials``."""
    if trials <= 0 or not 0 <= successes <= trials:
        raise ValueError(f"need 0 <= successes <= trials and trials > 0, got {successes} of {trials}")
    p = successes / trials
    z2 = z * z
    centre = (p + z2 / (2 * trials)) / (1 + z2 / trials)
    half = z * math.sqrt(p * (1 - p) / trials + z2 / (4 * trials * trials)) / (1 + z2 / trials)
    low, high = centre - half, centre + half
    # exact at the ends (rounding would otherwise leave 1e-17 outside [0, 1] or off 0 and 1)
    return (0.0 if successes == 0 else max(0.0, low)), (1.0 if successes == trials else min(1.0, high))


def bootstrap_mean(values: Iterable[float], resamples: int = RESAMPLES, seed: int = BOOTSTRAP_SEED,
                   level: float = 0.95) -> tuple[float, float]:
    """A percentile bootstrap interval of the mean of ``values``: ``resamples`` resamples with
    replacement from a generator seeded with ``seed`` (the values are sorted first, so their
    order does not matter)."""
    data = np.sort(np.asarray(list(values), dtype=np.float64))
    if len(data) == 0:
        raise ValueError("no values to bootstrap")
    rng = np.random.default_rng(seed)
    means = data[rng.integers(len(data), size=(resamples, len(data)))].mean(axis=1)
    tail = (1 - level) / 2
    low, high = np.quantile(means, [tail, 1 - tail])
    return float(low), float(high)


def bootstrap_ratio(values: Iterable[float], reference: Iterable[float], resamples: int = RESAMPLES,
                    seed: int = BOOTSTRAP_SEED, level: float = 0.95) -> tuple[float, float]:
    """A percentile bootstrap interval of mean(``values``) / mean(``reference``): both resampled
    with replacement, apart, ``resamples`` times from one generator seeded with ``seed`` (each
    sorted first, so the order of either does not matter)."""
    ours, theirs = (np.sort(np.asarray(list(data), dtype=np.float64)) for data in (values, reference))
    if len(ours) == 0 or len(theirs) == 0:
        raise ValueError("no values to bootstrap")
    rng = np.random.default_rng(seed)
    numerators = ours[rng.integers(len(ours), size=(resamples, len(ours)))].mean(axis=1)
    denominators = theirs[rng.integers(len(theirs), size=(resamples, len(theirs)))].mean(axis=1)
    tail = (1 - level) / 2
    low, high = np.quantile(numerators / denominators, [tail, 1 - tail])
    return float(low), float(high)


def fisher_exact(successes: int, trials: int, other_successes: int, other_trials: int) -> float:
    """The two-sided p-value of Fisher's exact test of k of n against k' of n' (the tables with the
    same margins whose probability is at most the observed one's)."""
    total, both = trials + other_trials, successes + other_successes
    denominator = math.comb(total, trials)

    def probability(x: int) -> float:  # x successes among our trials
        return math.comb(both, x) * math.comb(total - both, trials - x) / denominator

    observed = probability(successes)
    low, high = max(0, both - other_trials), min(trials, both)
    return min(1.0, sum(p for p in map(probability, range(low, high + 1)) if p <= observed * (1 + 1e-9)))


@dataclass(frozen=True)
class Judgement:
    """One figure judged: ours with its 95 % interval, the published value, the verdict."""

    figure: str
    ours: str
    interval: str
    published: str
    verdict: str
    reason: str = ""


def _percent(value: float) -> str:
    return f"{100 * value:.0f} %"


def percent_interval(low: float, high: float) -> str:
    """An interval of rates (fractions) in whole percent, e.g. '40-89 %'."""
    return f"{100 * low:.0f}-{100 * high:.0f} %"


def paper_count(published_percent: float, paper_trials: int) -> int:
    """The paper's successes behind a published rate: the nearest whole count of its trials
    (97 % of 30: 29)."""
    return round(published_percent * paper_trials / 100)


def judge_rate(successes: int, trials: int, published_percent: float, paper_trials: int,
               label: str = "% solved") -> Judgement:
    """Our ``successes`` of ``trials`` against the paper's rate, a count of its ``paper_trials``
    (`paper_count`): reproduced unless a two-sided Fisher exact test rejects at the 5 % level."""
    interval = percent_interval(*wilson(successes, trials))
    ours = f"{successes} of {trials} = {_percent(successes / trials)}"
    theirs = paper_count(published_percent, paper_trials)
    p_value = fisher_exact(successes, trials, theirs, paper_trials)
    agrees = p_value >= 0.05
    shown = f"{published_percent:g} %" + (f" of {paper_trials}" if published_percent in (0, 100) else "")
    reason = f"Fisher exact p = {p_value:.2g} against the paper's {theirs} of {paper_trials}"
    return Judgement(label, ours, interval, shown, REPRODUCED if agrees else DIFFERS, reason)


def judge_mean(values: list[float], published_mean: float, unit: str) -> Judgement | None:
    """None with fewer than two solved trials (no spread to judge by)."""
    if len(values) < 2:
        return None
    low, high = bootstrap_mean(values)
    agrees = low <= published_mean <= high
    interval = f"{low:,.0f}-{high:,.0f}"
    return Judgement(f"mean {unit} to success", f"{np.mean(values):,.0f}", interval, f"{published_mean:,}",
                     REPRODUCED if agrees else DIFFERS,
                     f"published {published_mean:,} {'in' if agrees else 'outside'} ours {interval}")


def ratio_figure(unit: str, name: str) -> str:
    """The figure a published ratio judges: our mean as a multiple of row ``name``'s."""
    return f"mean {unit} to success against {name}"


def times(ratio: float) -> str:
    """A published ratio in words: "1 time", "3 times"."""
    return f"{ratio:g} time{'' if ratio == 1 else 's'}"


def fixed(value: float, digits: int = 3) -> str:
    """``value`` to ``digits`` significant digits, in fixed point (7.20, 123, 0.410)."""
    places = max(0, digits - 1 - math.floor(math.log10(abs(value)))) if value else digits - 1
    return f"{value:,.{places}f}"


def ratio_of_means(values: list[float], reference: list[float]) -> tuple[float, float, float]:
    """mean(``values``) / mean(``reference``) and its `bootstrap_ratio` interval."""
    return (float(np.mean(values) / np.mean(reference)), *bootstrap_ratio(values, reference))


def _interval_text(low: float, high: float, published: float, agrees: bool) -> str:
    """An interval of ratios, with digits enough that a bound outside which ``published`` lies
    is never shown equal to it (1-1.1 around a published 1 that lies outside)."""
    for digits in range(3, 10):
        shown = (fixed(low, digits), fixed(high, digits))
        if agrees or all(float(bound.replace(",", "")) != published for bound in shown):
            break
    return f"{shown[0]}-{shown[1]} times"


def judge_ratio(values: list[float], reference: dict[str, Any] | None, published: dict[str, Any],
                unit: str) -> Judgement | None:
    """Our mean as a multiple of the reference row's (``reference``: `reference.with_reference`'s
    record of its folder and solved trials) against the published ``mean_ratio``. A figure "not
    judged" where that row's trials cannot stand for it (none read, or its ``problem``); None
    with fewer than two solved trials of ours (no spread to judge by, as `judge_mean`)."""
    name, ratio = published["ratio_to"], published["mean_ratio"]
    figure, shown_ratio = ratio_figure(unit, name), times(ratio)
    problem = "its trials were not read" if reference is None else reference.get("problem")
    if problem:
        return Judgement(figure, "-", "-", shown_ratio, NOT_JUDGED, problem)
    if len(values) < 2:
        return None
    ours, low, high = ratio_of_means(values, reference["solved"])
    agrees = low <= ratio <= high
    interval = _interval_text(low, high, ratio, agrees)
    return Judgement(figure, f"{fixed(ours)} times", interval, shown_ratio,
                     REPRODUCED if agrees else DIFFERS,
                     f"published {shown_ratio} {'in' if agrees else 'outside'} ours {interval} "
                     f"(against {reference['folder']})")


def _rate_figure(results: dict[str, Any]) -> tuple[str, str]:
    """The success rate's summary key and label of a results.json: its protocol's
    (`protocols.protocol_counting` of the ``unit`` it counts), % perfect for the 2000/2002
    stream rows, % solved for the 1997 sequence rows."""
    protocol = protocol_counting(results["experiment"]["unit"])
    return protocol.rate_key, protocol.rate_label()


def _rate_percent(summary: dict[str, Any], key: str) -> float:
    """The summary's success rate (results.json files written before the rate was stored under
    its protocol's key alone hold it as ``success_percent`` too)."""
    return summary.get(key, summary.get("success_percent")) or 0


def judge(results: dict[str, Any], published: dict[str, Any] | None = None,
          paper_trials: int | None = None) -> list[Judgement]:
    """Every figure of a results.json (``lstmgraph reproduce``'s) that the paper gives, judged.
    ``published`` and ``paper_trials`` default to those recorded in ``results``."""
    experiment = results["experiment"]
    published = experiment["published"] if published is None else published
    paper_trials = experiment["trials"] if paper_trials is None else paper_trials
    unit = experiment["unit"]
    rows = results.get("trials")
    summary = results["summary"]
    n = summary["trials"]
    if rows is not None:
        solved = [row["to_success"] for row in rows if row["solved"]]
        k = len(solved)
    else:  # a summary alone: the count from its percentage
        solved = []
        k = round(_rate_percent(summary, _rate_figure(results)[0]) * n / 100)
    key, label = _rate_figure(results)
    judgements = []
    if n and published.get(key) is not None:
        judgements.append(judge_rate(k, n, published[key], paper_trials, label))
    if published.get("mean_to_success") is not None:
        mean = judge_mean(solved, published["mean_to_success"], unit)
        if mean is not None:
            judgements.append(mean)
    if published.get("mean_ratio") is not None:
        ratio = judge_ratio(solved, results.get(REFERENCE), published, unit)
        if ratio is not None:
            judgements.append(ratio)
    return judgements


def settled_verdict(results: dict[str, Any], trials_left: int, published: dict[str, Any] | None = None,
                    paper_trials: int | None = None) -> str | None:
    """The verdict of a row with ``trials_left`` trials still to run, if no outcome of theirs can
    change it, else None. The rate judged at every count of successes among them (none to all)
    must give one verdict, and that must be "differs" (which settles the row whatever the mean
    does) or the paper must give no mean nor ratio (which the new trials' values could move). A
    row the paper gives no figure for stays "not judged". ``published`` and ``paper_trials`` as
    in `judge`."""
    experiment = results["experiment"]
    published = experiment["published"] if published is None else published
    paper_trials = experiment["trials"] if paper_trials is None else paper_trials
    if trials_left == 0:
        return verdict(judge(results, published, paper_trials))
    key, label = _rate_figure(results)
    has_mean = published.get("mean_to_success") is not None or published.get("mean_ratio") is not None
    if published.get(key) is None:
        return None if has_mean else NOT_JUDGED
    solved = sum(bool(row["solved"]) for row in results["trials"])
    done = len(results["trials"])
    rates = {judge_rate(solved + more, done + trials_left, published[key], paper_trials, label).verdict
             for more in range(trials_left + 1)}
    if rates == {DIFFERS}:
        return DIFFERS
    return REPRODUCED if rates == {REPRODUCED} and not has_mean else None


def cap_binds(results: dict[str, Any]) -> bool:
    """Whether a finished trial was stopped by the run's cap (``budget_steps``, `reproduce
    --max-steps`) short of the paper's limits: unsolved at the cap. A cap no trial reached
    changed nothing, so the run is judged as the paper's protocol."""
    budget = results.get("budget_steps")
    return bool(budget) and any(not row["solved"] and row["steps"] >= budget for row in results["trials"])


def settled_outcome(results: dict[str, Any], trials_left: int, published: dict[str, Any] | None = None,
                    paper_trials: int | None = None) -> str | None:
    """Reproduced or differs, where no outcome of ``trials_left`` more trials can change it
    (`settled_verdict`); else None (not judged, or still open). Trials stopped by a cap short of
    the paper's limits (`cap_binds`) settle nothing, as `results_table.folder_verdict` judges them:
    a net stopped early might still have learned, which could raise the rate past a published
    0 % or move the mean. How a tested change is judged (`causes`) and when `reproduce
    --until-settled` stops."""
    if cap_binds(results):
        return None
    verdict = settled_verdict(results, trials_left, published, paper_trials)
    return verdict if verdict in (REPRODUCED, DIFFERS) else None


def trials_left_note(results: dict[str, Any], trials_left: int, published: dict[str, Any] | None = None,
                     paper_trials: int | None = None) -> str:
    """Whether a row's ``trials_left`` trials not finished (not started, or checkpointed part way)
    can change its verdict (`settled_verdict`), in words; "" for a row run to its count."""
    if trials_left <= 0:
        return ""
    now = verdict(judge(results, published, paper_trials))
    settled = settled_verdict(results, trials_left, published, paper_trials)
    left = f"{trials_left} trial{'s' if trials_left > 1 else ''} not finished"
    if settled is None:
        return f"the {left} can change it"
    return f"the {left} cannot change it" if settled == now else f"{settled} whatever the {left} give"


def not_judged_yet(so_far: str, left: str) -> str:
    """A partial row's verdict while its trials not finished can change it (`trials_left_note`
    says so in ``left``), with its verdict ``so_far``: the words of every table and status."""
    return f"{NOT_JUDGED_YET} (so far {so_far}; {left})"


def verdict(judgements: list[Judgement]) -> str:
    """The row's verdict: differs when a figure does, else not judged when one cannot be (or
    none is), else reproduced."""
    verdicts = {j.verdict for j in judgements}
    if DIFFERS in verdicts:
        return DIFFERS
    return NOT_JUDGED if not verdicts or NOT_JUDGED in verdicts else REPRODUCED


def verdict_rows(results: dict[str, Any]) -> list[tuple[str, str, str]]:
    """(figure, ours, published) rows for the table `lstmgraph reproduce` prints: our rate's and
    mean's 95 % intervals (judged or not), then the verdict with the figures that decided it."""
    summary, unit = results["summary"], results["experiment"]["unit"]
    trials = results.get("trials")
    n = summary["trials"]
    if not n:
        return []
    solved = [row["to_success"] for row in trials if row["solved"]] if trials is not None else []
    k = len(solved) if trials is not None else round(_rate_percent(summary, _rate_figure(results)[0]) * n / 100)
    _, label = _rate_figure(results)
    judgements = judge(results)
    by_figure = {j.figure: j for j in judgements}
    rate = by_figure.get(label)
    rows = [(f"{label}, 95 % interval", percent_interval(*wilson(k, n)), rate.published if rate else "-")]
    if len(solved) > 1:
        low, high = bootstrap_mean(solved)
        mean = by_figure.get(f"mean {unit} to success")
        rows.append((f"mean {unit} to success, 95 % interval", f"{low:,.0f}-{high:,.0f}",
                     mean.published if mean else "-"))
    published = results["experiment"]["published"]
    ratio = by_figure.get(ratio_figure(unit, published["ratio_to"])) if published.get("ratio_to") else None
    if ratio is not None:
        ours = ratio.reason if ratio.verdict == NOT_JUDGED else ratio.interval
        rows.append((f"{ratio.figure}, 95 % interval", ours, ratio.published))
    result = verdict(judgements)
    decided = [j.figure for j in judgements if j.verdict == DIFFERS]
    rows.append(("verdict", result, f"({', '.join(decided)})" if decided else ""))
    return rows
