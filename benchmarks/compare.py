"""The table of docs/performance.md from two `lstmgraph bench --json` outputs.

    .venv/bin/python benchmarks/compare.py docs/bench-2026-11-22-generated-kernel.json \\
        docs/bench-2026-11-22-interpreter.json

Prints a Markdown table: each figure of both runs and their ratio (second / first; above 1 the
second is faster, or for times and memory, bigger).
"""

from __future__ import annotations

import json
import sys

ROWS = [
    ("first_train_seconds", "first `lstmgraph train` of an unseen spec, 1,000 steps (s)"),
    ("cerg_steps_per_s", "CERG net (424 weights), 1 trial, steps/s"),
    ("cerg_forward_only_steps_per_s", "the same, forward pass and loss only"),
    ("cerg_population10_trial_steps_per_s", "CERG net, 10 trials, trial-steps/s"),
    ("cerg_population100_trial_steps_per_s", "CERG net, 100 trials, trial-steps/s"),
    ("timing_steps_per_s", "timing net (17 weights), 1 trial, steps/s"),
    ("timing_population10_trial_steps_per_s", "timing net, 10 trials, trial-steps/s"),
    ("timing_population100_trial_steps_per_s", "timing net, 100 trials, trial-steps/s"),
    ("cerg_steps_per_s_interpreter", "CERG net, 1 trial, interpreter, steps/s"),
    ("cerg_population100_trial_steps_per_s_interpreter", "CERG net, 100 trials, interpreter, trial-steps/s"),
    ("timing_steps_per_s_interpreter", "timing net, 1 trial, interpreter, steps/s"),
    ("timing_population100_trial_steps_per_s_interpreter", "timing net, 100 trials, interpreter, trial-steps/s"),
    ("cerg_specialised_load_seconds", "specialised kernel of the CERG net: compile (or load) and first call (s)"),
    ("truncated_rtrl_exponent", "truncated RTRL, exponent of time per step in W"),
    ("rtrl_exponent", "exact RTRL, exponent of time per step in W"),
    ("torch_cerg_steps_per_s", "PyTorch per-step loop, CERG-sized net, steps/s"),
    ("torch_ratio", "CERG 1 trial / PyTorch loop"),
    ("peak_memory_mib", "peak memory of the benchmark process (MiB)"),
]


def cell(value) -> str:
    if value is None:
        return "-"
    return f"{value:,.2f}" if value < 100 else f"{value:,.0f}"


def main() -> None:
    first, second = (json.load(open(path, encoding="utf-8")) for path in sys.argv[1:3])
    print(f"| figure | {sys.argv[1].rsplit('/', 1)[-1]} | {sys.argv[2].rsplit('/', 1)[-1]} | ratio |")
    print("|---|---|---|---|")
    for key, label in ROWS:
        a, b = first.get(key), second.get(key)
        ratio = f"{b / a:.2f}" if a and b else "-"
        print(f"| {label} | {cell(a)} | {cell(b)} | {ratio} |")


if __name__ == "__main__":
    main()
