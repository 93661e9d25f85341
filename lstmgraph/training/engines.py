"""Which engine trains a spec, and what the two engines share.

The numpy reference engine (`numpy_engine.NumpyEngine`) and the compiled one
(`compiled_engine.CompiledEngine`) both train one sequence at a time on the same weights,
optimiser state, activations and eligibility traces, and checkpoint them in the same arrays
(``weights/<connection>``, ``optimizer/velocity/<connection>``, ``state/<group>``,
``traces/<group>``; `nested` reads a part back), so a checkpoint written by one can be restored
by the other. Both raise `TrainingDiverged` naming the step.

`select_engine` decides which one a spec gets (`compiled_unsupported`: why not the compiled
one); `check_program` lowers the program a run trains, so a program over a limit is refused
before a run's folder is written; `program_key` says which plans share one program.
"""

from __future__ import annotations

import numpy as np

from ..engine.devices import DEVICES
from ..operations import loss_output_problem
from ..plan import Plan
from ..program.lower import lower
from ..spec.models import TrainingSpec

#: The engines a run trains with (run.json's ``engine``).
ENGINE_NAMES = ("compiled", "numpy")
#: What a run may ask for: one of them, or ``auto`` (`select_engine` decides).
ENGINES = ("auto", *ENGINE_NAMES)


class EngineError(ValueError):
    """The engine or device asked for cannot train this spec here (the message says why)."""


class TrainingDiverged(Exception):
    """NaN or infinity appeared; names the step and the unit group (or weights)."""

    def __init__(self, step: int, where: str):
        self.step = step
        self.where = where
        super().__init__(f"non-finite values at step {step} in {where}")


def compiled_unsupported(plan: Plan, training: TrainingSpec) -> str | None:
    """Why the compiled engine cannot train this training section, or None if it can."""
    if training.optimizer.name != "sgd" or training.clip_norm is not None:
        return "the compiled engine updates by momentum SGD only, not adam or clip_norm"
    if training.update_mode != "online" and training.learning_rule != "bptt":
        return "the compiled engine updates RTRL online only, not once per sequence (update: sequence)"
    mismatches = (loss_output_problem(training.loss, unit.name, unit.activation)
                  for unit in plan.units if unit.role == "output")
    return next((mismatch for mismatch in mismatches if mismatch), None)


def select_engine(plan: Plan, training: TrainingSpec, requested: str = "auto",
                  device: str = "cpu") -> tuple[str, str | None]:
    """(engine, note): ``auto`` takes the compiled engine wherever it can train the spec and
    the numpy engine otherwise, the note saying why; ``compiled`` raises `EngineError` where
    it cannot. On ``cuda`` only the compiled engine runs (its GPU executor)."""
    if requested not in ENGINES:
        raise EngineError(f"unknown engine {requested!r}; expected one of {', '.join(ENGINES)}")
    if device not in DEVICES:
        raise EngineError(f"unknown device {device!r}; expected one of {', '.join(DEVICES)}")
    if device != "cpu" and requested == "numpy":
        raise EngineError(f"the numpy engine runs on the CPU only; leave out --engine numpy for --device {device}")
    if device != "cpu" and training.learning_rule == "bptt":
        raise EngineError(f"on --device {device} trials learn by RTRL only, not bptt; train it on the CPU "
                          f"(leave out --device)")
    if requested == "numpy":
        return "numpy", None
    reason = compiled_unsupported(plan, training)
    if reason is None:
        return "compiled", None
    if device != "cpu":
        raise EngineError(f"on --device {device} only the compiled engine trains, and it cannot train this spec: "
                          f"{reason}; train it on the CPU (leave out --device)")
    if requested == "compiled":
        raise EngineError(f"the compiled engine cannot train this spec: {reason}; "
                          f"use --engine numpy (or auto)")
    return "numpy", f"training with the numpy engine: {reason}"


def check_program(plan: Plan, checked: set[str] | None = None) -> None:
    """`LimitError` where the program ``plan``'s training runs is over a limit (exact RTRL's
    traces, `limits.MAX_TRACE_TERMS`): the net lowered as its engine will lower it, so a run's
    folder is refused before it is written. BPTT keeps no traces and is not lowered here.
    ``checked``: the nets already lowered, shared across calls, so settings of one net and
    learning rule (a sweep over rates) are lowered once."""
    training = plan.training
    if training is None or training.learning_rule == "bptt":
        return
    key = program_key(plan)
    if checked is not None:
        if key in checked:
            return
        checked.add(key)
    lower(plan, full_gradient=training.learning_rule == "rtrl", loss=training.loss)


def program_key(plan: Plan) -> str:
    """What the program ``plan``'s training runs is lowered from: plans alike in it run one
    program (settings of a sweep over rates, say), so one kernel."""
    training = plan.training
    return repr((plan.units, plan.connections, plan.execution_order,
                 training and training.learning_rule, training and training.loss))


def nested(arrays: dict[str, np.ndarray], prefix: str) -> dict[str, np.ndarray]:
    """The checkpoint arrays under ``prefix``, named without it (copies)."""
    return {key[len(prefix):]: np.array(value) for key, value in arrays.items() if key.startswith(prefix)}
