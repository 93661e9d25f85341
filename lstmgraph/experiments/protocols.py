"""The papers' training and test regimes, as code.

Two kinds (docs/results.md describes each experiment's settings):

- `SequenceProtocol` (Hochreiter & Schmidhuber 1997, `sequences.py`): independent sequences,
  activations and traces reset before each, an online update after every step; training
  stops by the experiment's rule (all training and test strings right for the ERG; for adding,
  multiplication and temporal order, the most recent ``window`` sequences right, or at most
  ``allowed_wrong`` of them wrong, and their mean squared error below ``max_error``), then a
  frozen test set.
- `StreamProtocol` (Gers et al. 2000, 2002, `streams.py`): a continual stream, no reset inside it (unless
  ``reset_each_sequence``, the "external reset" baseline); a training stream stops at its first
  error or after ``train_limit`` steps or sequences; after each, weights frozen, ``test_streams``
  test streams each run to their first error or ``test_limit``; "perfect" when every test stream
  reaches its limit, "good" when their mean reaches ``good_score``.

Every random choice comes from the trial's seed: weights from ``seed``, data from generators
derived from (seed, purpose), so a trial is reproducible alone or in any worker.
"""

from __future__ import annotations

import dataclasses
import difflib
import json
from typing import Any

from ..engine.weights import initial_weights
from ..plan import Plan
from ..progress import Progress
from ..tasks import Task, make_task
from .sequences import SequenceProtocol, SequenceTrial
from .streams import StreamProtocol, StreamTrial
from .trial import Trial


Protocol = SequenceProtocol | StreamProtocol


class ProtocolError(ValueError):
    """A protocol setting that does not exist or a value it cannot take."""


def with_settings(protocol: Protocol, settings: dict[str, Any]) -> Protocol:
    """``protocol`` with some of its settings otherwise (`reproduce --protocol-option`), each
    value of the setting's type (a whole number for a float is taken; None only where the
    setting may be unset). `ProtocolError` names a setting the protocol does not have, or a
    value it rejects."""
    annotations = {f.name: str(f.type) for f in dataclasses.fields(protocol) if f.init}
    changes = {}
    for key, value in settings.items():
        if key not in annotations:
            close = difflib.get_close_matches(key, annotations, n=1)
            raise ProtocolError(f"the {protocol.kind} protocol has no setting {key!r}"
                                + (f" (did you mean {close[0]!r}?)" if close else "")
                                + f"; its settings: {', '.join(annotations)}")
        annotation = annotations[key]
        if value is None:
            fits, wanted = "None" in annotation, "a value (it cannot be unset)"
        elif "float" in annotation:
            fits, wanted = isinstance(value, (int, float)) and not isinstance(value, bool), "a number"
            value = float(value) if fits else value
        elif "int" in annotation:
            fits, wanted = isinstance(value, int) and not isinstance(value, bool), "a whole number"
        elif "bool" in annotation:
            fits, wanted = isinstance(value, bool), "true or false"
        else:
            fits, wanted = isinstance(value, str), "text"
        if not fits:
            raise ProtocolError(f"{key} takes {wanted} (the row's: {json.dumps(getattr(protocol, key))}), "
                                f"not {json.dumps(value)}")
        changes[key] = value
    try:
        return dataclasses.replace(protocol, **changes)
    except ValueError as error:
        raise ProtocolError(str(error)) from None


def trial_engine(plan: Plan, seed: int, kernel: str | None = None):
    """A trial's network: the compiled engine with the plan's training settings (online RTRL,
    truncated or exact, momentum SGD), weights drawn from ``seed``, running ``kernel``
    (`engine.compiled.KERNELS`; the kernels give bit-identical results). `EngineError` names
    what the compiled engine cannot do (e.g. a spec asking for BPTT)."""
    from ..training.engines import CompiledEngine, select_engine  # numba: only when a trial runs
    from ..training.optim import Optimizer

    training = plan.training
    select_engine(plan, training, "compiled")
    return CompiledEngine(plan, training, 1, Optimizer.for_training(training), initial_weights(plan, [seed]), kernel)


def make_trial(engine, task: Task, protocol: Protocol, seed: int, budget_steps: int | None = None) -> Trial:
    """The trial of ``protocol`` (its network ``engine``, weights drawn from ``seed``)."""
    kind = SequenceTrial if isinstance(protocol, SequenceProtocol) else StreamTrial
    return kind(engine, task, protocol, seed, budget_steps)


def task_trial(plan: Plan, task: str, task_options: dict[str, Any], protocol: Protocol, seed: int,
               budget_steps: int | None = None, kernel: str | None = None) -> Trial:
    """Trial ``seed`` of ``protocol`` on ``plan`` with a fresh ``task``: weights and data from
    the seed, the compiled engine running ``kernel`` (an experiment's trial, or a worker's from
    the task and protocol its piece carries)."""
    return make_trial(trial_engine(plan, seed, kernel), make_task(task, task_options), protocol, seed, budget_steps)


def run_trial(engine, task: Task, protocol: Protocol, seed: int, budget_steps: int | None = None,
              progress: Progress | None = None) -> dict[str, Any]:
    """One trial under its protocol straight through, timed; ``engine`` is trained in place."""
    return make_trial(engine, task, protocol, seed, budget_steps).run(progress)
