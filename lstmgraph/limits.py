"""Every limit, in one place: those that keep a hostile or mistaken spec from exhausting time or
memory (docs/spec.md, "Limits"), and those on counts given as options (trials, steps, jobs, ...)
and on files read back from run directories and results folders. A stage-neutral module: the
spec readers and everything downstream of the plan use it.

Each is far above what a real network needs; going over one is a located spec error, or a
`LimitError` naming the limit.
"""

from __future__ import annotations

import numbers

from .errors import shown

#: Where an error over a limit points to.
LIMITS_HINT = "docs/spec.md in the lstmgraph source, Limits"
#: Bytes of a spec file.
MAX_SPEC_BYTES = 1 << 20
#: Levels of nested lists and mappings, counted through aliases.
MAX_DEPTH = 32
#: Values (scalars, lists and mappings) of the document, each alias counted as the values it
#: stands for: bounds alias expansion ("billion laughs") and the work of validating.
MAX_VALUES = 50_000
#: Units of one unit group (a memory block's cells: blocks x cells_per_block).
MAX_GROUP_SIZE = 100_000
#: Weights of all connections together, trainable or not (8 bytes each per trial). Lowering
#: the program holds about 600 bytes a weight while it builds it (2 x 10^6: 16 s, 1.3 GB).
MAX_WEIGHTS = 2_000_000
#: Lines of a program's GPU kernel (`engine.gpu.source`). numba-cuda's memory grows faster than
#: the kernel: the modern LSTM's 4,562 lines compiled in 1.5 GB, a GRU kernel of 18,276 (before
#: `entries.MAX_RUNS_GROWTH`) passed 24 GB (docs/gpu.md, "Kernels too long to compile"). Past this
#: a GPU run is refused, not attempted.
MAX_GPU_KERNEL_LINES = 10_000
#: An integer option of a built-in task (lengths, periods, counts: they size the sequences).
MAX_TASK_INTEGER = 10_000_000
#: A network name: it becomes part of file names (the default run directory).
NAME_PATTERN = r"^[A-Za-z0-9_][A-Za-z0-9_.-]*$"
MAX_NAME_LENGTH = 64

# -- counts given to commands and library calls (run lengths, populations, evaluations) ----------
# Checked before anything is allocated or run: by the commands' option types (click.IntRange)
# and by the library functions, which raise `LimitError` naming the limit. Each is far above
# what a real run needs (the papers' longest: 10^7 streams, 2 x 10^6 sequences of 1000 steps).

#: Networks trained or evaluated side by side (`train --trials`, `reproduce --trials`).
MAX_TRIALS = 100_000
#: Steps of one training run (`train --steps`, training.steps; also a trial's step budget).
MAX_STEPS = 10**10
#: Passes over a data file (`train --epochs`, training.epochs).
MAX_EPOCHS = 1_000_000
#: Fresh sequences one `evaluate` judges (their outputs are kept for the figures).
MAX_EVALUATION_SEQUENCES = 1_000_000
#: Fresh steps one `plot` traces (every unit group's activations are kept per step).
MAX_TRACE_STEPS = 1_000_000
#: Bytes of the values a forward run keeps, every step's slots for every network (steps x slots x
#: trials x 8): `lstmgraph run` over an input file, a `plot` trace, a sequence `evaluate` judges.
#: `Simulator.check_records` refuses more before the network runs.
MAX_RECORD_BYTES = 1 << 32
#: Multiply-adds a step of RTRL's traces (and their sensitivities dy/dw): the lowered program
#: holds each as slots of its own, so a dense net under exact RTRL (n^3 sensitivities, n^4 terms)
#: would fill memory while it is built. A CERG net under exact RTRL needs about 10^5.
MAX_TRACE_TERMS = 10_000_000
#: Steps of a gradient check's sequence (`gradcheck --steps`): its finite differences rerun the
#: sequence for every weight, and it holds the sequence's values (a CERG net: 12 s at 1,000).
MAX_GRADCHECK_STEPS = 10_000
#: Values a gradient check's finite differences compute: 8 networks a weight, each of the
#: program's slots at every step (a CERG net at 10,000 steps: about 5 x 10^10, two minutes).
MAX_GRADCHECK_WORK = 10**11
#: The most random draws one `lstmgraph gradcheck` checks (--draws).
MAX_GRADCHECK_DRAWS = 10_000
#: Worker processes on this machine (`reproduce --jobs`).
MAX_JOBS = 4096
#: The longest piece of work between two checkpoints of a running trial (`reproduce
#: --checkpoint-seconds`, `sweep --checkpoint-seconds`): a week.
MAX_CHECKPOINT_SECONDS = 7 * 24 * 3600.0
#: Trials side by side in one block of lanes (`reproduce --lanes`, `sweep --lanes`).
MAX_LANES = 64
#: A seed (`--seed`): numpy takes any integer, but a checkpoint and a run.json store it.
MAX_SEED = 2**63 - 1
#: Bytes of a JSON file the tool wrote and reads back (run.json, summary.json, experiment.json).
MAX_JSON_BYTES = 1 << 24
#: Bytes of the values BPTT keeps for one window or sequence (its tape: steps x slots x trials);
#: `bptt_window` bounds it.
MAX_TAPE_BYTES = 1 << 30
#: Bytes of the data one stream of a stream protocol draws ahead (`StreamData.ensure`: its
#: sequences at their longest, inputs and target planes): bounds a task option that makes
#: each sequence huge (MSD delays of 10^7) before it is drawn.
MAX_STREAM_BYTES = 1 << 31
#: Bytes of one line of a rows file (metrics.jsonl, trials.jsonl): a row per trial at most; and
#: characters of one line of a CSV file of numbers (`run --inputs`), read before it is split.
MAX_ROW_BYTES = 1 << 24
#: Where an error over one of these limits points to.
COUNT_LIMITS_HINT = "lstmgraph/limits.py"


class LimitError(ValueError):
    """A count over its limit; the message names the count, the limit and what to do."""


def shown_count(value: int) -> str:
    """A whole number (a numpy one too) for a message, as `errors.shown` writes it."""
    return shown(int(value))


def is_whole_number(value: object, least: int = 0) -> bool:
    """Whether ``value`` is an integer (a numpy one too, not a bool) of at least ``least``."""
    return isinstance(value, numbers.Integral) and not isinstance(value, bool) and value >= least


def check_count(label: str, value: int, limit: int, minimum: int = 1) -> int:
    """``value`` if it is an integer from ``minimum`` to ``limit``, else `LimitError` naming
    ``label`` (e.g. "--steps") and the limit."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise LimitError(f"{label} must be a whole number, not {type(value).__name__}")
    value = int(value)  # (numpy's integers too)
    if value < minimum:
        raise LimitError(f"{label} must be at least {minimum}, not {shown_count(value)}")
    if value > limit:
        raise LimitError(f"{label} is {shown_count(value)}, more than the limit of {limit:,} "
                         f"({COUNT_LIMITS_HINT}); give a smaller count")
    return value


def check_task_integers(options: dict) -> None:
    """ValueError naming the first integer of a task's options (in lists and mappings too, as
    ``delays``) beyond `MAX_TASK_INTEGER`: they size the sequences drawn."""
    for option, value in options.items():
        values = [value]
        while values:
            value = values.pop()
            if isinstance(value, (list, tuple, dict)):
                values.extend(value.values() if isinstance(value, dict) else value)
            elif isinstance(value, int) and not isinstance(value, bool) and abs(value) > MAX_TASK_INTEGER:
                raise ValueError(f"option {option}: {shown(value)} is beyond {MAX_TASK_INTEGER:,} ({LIMITS_HINT})")
