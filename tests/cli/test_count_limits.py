"""Absurd counts fail at once with exit code 2 and a message naming the limit, before anything
is allocated or run (not "not enough memory", not minutes of running, not OverflowError)."""

from __future__ import annotations

import time

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lstmgraph import limits
from lstmgraph_cli.main import main

from conftest import SPECS

RNN = str(SPECS / "rnn.yaml")

# (command and arguments before the option, option, its limit)
OPTIONS = [
    (["train", RNN, "--quiet"], "--trials", limits.MAX_TRIALS),
    (["train", RNN, "--quiet"], "--steps", limits.MAX_STEPS),
    (["train", RNN, "--quiet"], "--epochs", limits.MAX_EPOCHS),
    (["train", RNN, "--quiet"], "--seed", limits.MAX_SEED),
    (["evaluate", "somewhere"], "--sequences", limits.MAX_EVALUATION_SEQUENCES),
    (["evaluate", "somewhere"], "--seed", limits.MAX_SEED),
    (["plot", "somewhere"], "--steps", limits.MAX_TRACE_STEPS),
    (["plot", "somewhere"], "--seed", limits.MAX_SEED),
    (["plot", "somewhere"], "--trial", limits.MAX_TRIALS - 1),
    (["gradcheck", RNN], "--steps", limits.MAX_GRADCHECK_STEPS),
    (["gradcheck", RNN], "--seed", limits.MAX_SEED),
]


def outcome(args: list[str]) -> tuple[int, str, float]:
    start = time.monotonic()
    result = CliRunner().invoke(main, args)
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exc_info
    assert "Traceback" not in result.output
    return result.exit_code, result.output, time.monotonic() - start


@settings(max_examples=10, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(over=st.one_of(st.integers(1, 10), st.integers(10**6, 10**40)))
@pytest.mark.parametrize("before, option, limit", OPTIONS, ids=[f"{b[0]} {o}" for b, o, _ in OPTIONS])
def test_a_count_over_its_limit_exits_2_naming_the_limit(before, option, limit, over):
    value = limit + over
    code, output, seconds = outcome([*before, option, str(value)])
    assert code == 2, output
    assert f"Invalid value for '{option}'" in output and f"<=x<={limit}" in output, output
    assert seconds < 30


def test_a_count_of_thousands_of_digits_is_a_usage_error_too():
    code, output, _ = outcome(["train", RNN, "--steps", "9" * 5000])
    assert code == 2 and "'--steps'" in output, output


@pytest.mark.parametrize("option, value", [("--steps", "1000000000000"), ("--trials", "1000000000000"),
                                           ("--epochs", "1000000000000")])
def test_train_with_a_count_of_10_to_the_12_names_its_limit_not_the_memory(option, value):
    code, output, seconds = outcome(["train", RNN, "--quiet", option, value])
    assert code == 2 and "not in the range" in output and "memory" not in output, output
    assert seconds < 30


def test_a_spec_asking_for_too_many_steps_is_a_located_error(tmp_path):
    text = (SPECS / "rnn.yaml").read_text().replace("steps: 40000", f"steps: {limits.MAX_STEPS + 1}")
    (tmp_path / "long.yaml").write_text(text)
    code, output, seconds = outcome(["train", str(tmp_path / "long.yaml"), "--quiet", "--out", str(tmp_path / "r")])
    assert code == 2, output
    assert "training.steps" in output and f"more than the limit of {limits.MAX_STEPS:,}" in output, output
    assert not (tmp_path / "r").exists() and seconds < 30


def test_sequences_too_long_for_the_limits_are_refused_before_they_are_drawn(tmp_path):
    """Before: a recall_first spec of 100,000-step sequences (valid) drew its whole test set, 24 GB,
    in a sweep's worker, which was then "lost"; `train` of 2,000,000 steps ended in a traceback."""
    spec = tmp_path / "long.yaml"
    spec.write_text((SPECS / "modern_lstm.yaml").read_text().replace("length: 8}", "length: 100000}"))
    assert "length: 100000}" in spec.read_text()
    code, output, _ = outcome(["sweep", str(spec), "--trials", "1", "--max-steps", "10", "--jobs", "1",
                               "--vary", "learning_rate=0.2", "--no-own-setting", "--out", str(tmp_path / "sweep")])
    assert code == 2 and "a test set of 2,560 sequences of up to 100,000 steps each needs up to 19.1 GiB" in output
    spec.write_text(spec.read_text().replace("length: 100000}", "length: 2000000}"))
    code, output, _ = outcome(["train", str(spec), "--steps", "10", "--quiet", "--out", str(tmp_path / "run")])
    assert code == 2 and "BPTT over 2,000,000 steps of 1 trials keeps more than" in output
