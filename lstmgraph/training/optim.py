"""Gradient descent with momentum and the papers' learning-rate schedules.

``w <- w + v``, ``v <- momentum * v - rate * dE/dw`` (momentum 0 is plain gradient descent,
the 1997 and 2000 papers; the 2002 paper used momentum). The rate decays multiplicatively
after every step or sequence (2000: x0.99), or as rate_0 / n (``inverse_time``).
"""

from __future__ import annotations

import numpy as np

from ..spec.models import LearningRateDecay
from ..engine.weights import Weights


class Optimizer:
    """Momentum SGD over the trainable connections; its whole state is plain arrays/numbers."""

    def __init__(self, learning_rate: float, momentum: float, decay: LearningRateDecay):
        self.initial_rate = float(learning_rate)
        self.rate = float(learning_rate)
        self.momentum = float(momentum)
        self.decay = decay
        self.velocity: dict[str, np.ndarray] = {}
        self.decays = 0  # how many times the schedule has been applied

    def apply(self, weights: Weights, grads: dict[str, np.ndarray]) -> None:
        """Update ``weights`` in place with one gradient step."""
        for name, grad in grads.items():
            if self.momentum:
                velocity = self.velocity.get(name)
                if velocity is None:
                    velocity = self.velocity[name] = np.zeros_like(grad)
                velocity *= self.momentum
                velocity -= self.rate * grad
                weights[name] += velocity
            else:
                weights[name] -= self.rate * grad

    def after(self, event: str) -> None:
        """Advance the schedule after a ``step`` or a ``sequence``."""
        if self.decay.kind == "none" or self.decay.every != event:
            return
        self.decays += 1
        if self.decay.kind == "multiplicative":
            self.rate *= self.decay.factor
        else:
            self.rate = self.initial_rate / (self.decays + 1)

    def state(self) -> dict[str, np.ndarray]:
        arrays = {f"velocity/{name}": value for name, value in self.velocity.items()}
        arrays["rate"] = np.array(self.rate)
        arrays["decays"] = np.array(self.decays)
        return arrays

    def restore(self, arrays: dict[str, np.ndarray]) -> None:
        self.rate = float(arrays["rate"])
        self.decays = int(arrays["decays"])
        self.velocity = {key.split("/", 1)[1]: np.array(value) for key, value in arrays.items()
                         if key.startswith("velocity/")}
