"""The update rules (momentum SGD, Adam), gradient-norm clipping and the learning-rate schedules.

Momentum SGD, the papers' rule and the default: ``w <- w + v``, ``v <- momentum * v - rate *
dE/dw`` (momentum 0 is plain gradient descent, the 1997 and 2000 papers; the 2002 paper used
momentum). Adam (Kingma & Ba 2015), for per-sequence or per-window updates:
``m <- b1 m + (1 - b1) g``, ``u <- b2 u + (1 - b2) g^2``,
``w <- w - rate * (m / (1 - b1^n)) / (sqrt(u / (1 - b2^n)) + epsilon)`` after the n-th update.
With ``clip_norm``, each network's gradient (all its trainable connections together) is first
scaled down to that Euclidean norm if it is longer. The rate decays multiplicatively after every
step or sequence (2000: x0.99), or as rate_0 / (1 + n / tau) (``inverse_time``, tau 1 by default).
"""

from __future__ import annotations

import numpy as np

from ..spec.models import LearningRateDecay, OptimizerSpec, TrainingSpec
from ..engine.weights import Weights
from ..operations import momentum_step
from .engines import nested


class Optimizer:
    """Momentum SGD or Adam over the trainable connections, each array ``(trials, *shape)``;
    its whole state is plain arrays and numbers (`state`, `restore`)."""

    def __init__(self, learning_rate: float, momentum: float, decay: LearningRateDecay,
                 rule: OptimizerSpec | None = None, clip_norm: float | None = None):
        self.initial_rate = float(learning_rate)
        self.rate = float(learning_rate)
        self.momentum = float(momentum)
        self.decay = decay
        self.rule = rule or OptimizerSpec()
        self.clip_norm = clip_norm
        self.velocity: dict[str, np.ndarray] = {}
        self.moments: dict[str, dict[str, np.ndarray]] = {"m": {}, "u": {}}  # Adam's two averages
        self.updates = 0  # Adam's n, for the bias correction
        self.decays = 0  # how many times the schedule has been applied

    @classmethod
    def for_training(cls, training: TrainingSpec) -> "Optimizer":
        """The optimiser a training section asks for."""
        return cls(training.learning_rate, training.momentum, training.learning_rate_decay,
                   training.optimizer, training.clip_norm)

    def apply(self, weights: Weights, grads: dict[str, np.ndarray]) -> None:
        """Update ``weights`` in place with one gradient step."""
        if self.clip_norm is not None:
            grads = clipped(grads, self.clip_norm)
        if self.rule.name == "adam":
            self._adam(weights, grads)
            return
        for name, grad in grads.items():
            if self.momentum:
                velocity = self.velocity.get(name)
                if velocity is None:
                    velocity = self.velocity[name] = np.zeros_like(grad)
                momentum_step(weights[name], velocity, grad, self.rate, self.momentum)
            else:
                weights[name] -= self.rate * grad

    def _adam(self, weights: Weights, grads: dict[str, np.ndarray]) -> None:
        beta1, beta2, epsilon = self.rule.adam
        self.updates += 1
        correction1, correction2 = 1.0 - beta1 ** self.updates, 1.0 - beta2 ** self.updates
        for name, grad in grads.items():
            m = self.moments["m"].setdefault(name, np.zeros_like(grad))
            u = self.moments["u"].setdefault(name, np.zeros_like(grad))
            m *= beta1
            m += (1.0 - beta1) * grad
            u *= beta2
            u += (1.0 - beta2) * grad * grad
            weights[name] -= self.rate * (m / correction1) / (np.sqrt(u / correction2) + epsilon)

    def after(self, event: str) -> None:
        """Advance the schedule after a ``step`` or a ``sequence``."""
        if self.decay.kind == "none" or self.decay.every != event:
            return
        self.decays += 1
        if self.decay.kind == "multiplicative":
            self.rate *= self.decay.factor
        else:
            self.rate = self.scheduled_rate(self.decays)

    def scheduled_rate(self, decays: int) -> float:
        """The rate after the schedule has been applied ``decays`` times (multiplicative decay
        to rounding: `after` multiplies once per step or sequence)."""
        if self.decay.kind == "multiplicative":
            return self.initial_rate * self.decay.factor ** decays
        if self.decay.kind == "inverse_time":
            tau = self.decay.time_constant
            return self.initial_rate / (decays + 1) if tau is None else self.initial_rate / (1 + decays / tau)
        return self.initial_rate

    def state_problems(self, arrays: dict[str, np.ndarray], steps: int, sequences: int,
                       prefix: str = "optimizer/") -> list[str]:
        """What keeps saved ``rate``, ``decays`` and ``updates`` (`state`'s, scalars of the
        right kind) from being this optimiser's after ``steps`` steps and ``sequences``
        sequences: ``decays`` must count the schedule's events so far, ``updates`` be an
        integer >= 0 (0 but for Adam, which makes at most one per step), and ``rate`` be the
        schedule's rate after ``decays`` (to rounding; 0 only where that underflows)."""
        problems = []
        decays, updates, rate = (arrays[name][()] for name in ("decays", "updates", "rate"))
        every = {"step": steps, "sequence": sequences}[self.decay.every] if self.decay.kind != "none" else 0
        if decays != every:
            counted = (f"the schedule's decays after every {self.decay.every} ({every})"
                       if self.decay.kind != "none" else "0 (the spec's learning rate does not decay)")
            problems.append(f"'{prefix}decays' is {decays}; expected {counted}")
        if self.rule.name != "adam" and updates != 0:
            problems.append(f"'{prefix}updates' is {updates}; expected 0 (only Adam counts its updates)")
        elif not 0 <= updates <= steps:
            problems.append(f"'{prefix}updates' is {updates}; expected an integer from 0 to {steps} "
                            "(at most one Adam update per step)")
        if not problems:
            expected = self.scheduled_rate(int(decays))
            # Repeated multiplication drifts from the power by up to an ulp a decay (1e-6 at 10^10).
            allowed = max(1e-6, 4e-16 * float(decays)) * expected + 1e-300
            if not (rate >= 0 and abs(rate - expected) <= allowed):
                schedule = (f"after {int(decays)} decays" if self.decay.kind != "none" else "(it does not decay)")
                problems.append(f"'{prefix}rate' is {float(rate)!r}; expected {expected!r}, the spec's "
                                f"learning_rate {self.initial_rate!r} {schedule}")
        return problems

    def state(self) -> dict[str, np.ndarray]:
        arrays = {f"velocity/{name}": value for name, value in self.velocity.items()}
        for moment, values in self.moments.items():
            arrays.update({f"adam_{moment}/{name}": value for name, value in values.items()})
        arrays["rate"] = np.array(self.rate)
        arrays["decays"] = np.array(self.decays)
        arrays["updates"] = np.array(self.updates)
        return arrays

    def restore(self, arrays: dict[str, np.ndarray]) -> None:
        self.rate = float(arrays["rate"])
        self.decays = int(arrays["decays"])
        self.updates = int(arrays.get("updates", 0))  # absent in checkpoints from before Adam
        self.velocity = nested(arrays, "velocity/")
        self.moments = {moment: nested(arrays, f"adam_{moment}/") for moment in self.moments}


def clipped(grads: dict[str, np.ndarray], max_norm: float) -> dict[str, np.ndarray]:
    """The gradients scaled, network by network (axis 0), to Euclidean norm ``max_norm`` at most."""
    squares = sum(np.square(grad).reshape(len(grad), -1).sum(axis=1) for grad in grads.values())
    norm = np.sqrt(squares)
    scale = np.where(norm > max_norm, max_norm / np.where(norm > 0, norm, 1.0), 1.0)
    return {name: grad * scale.reshape((-1,) + (1,) * (grad.ndim - 1)) for name, grad in grads.items()}
