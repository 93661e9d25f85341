"""Weights, velocities, states and traces of a population by name, in the numpy engine's forms.

Every executor keeps a trial's numbers in slots (`Program`); a population class reads and
writes rows of slots of every trial with ``_get(rows)`` ((trials, rows)) and ``_set(rows,
values)``, and this mixin turns names into rows: the CPU `Population` and the GPU's
`GpuPopulation` share it.
"""

from __future__ import annotations

import numpy as np

from ..weights import Weights


class NamedSlots:
    """By-name access for a population with ``program``, ``trials``, ``_get`` and ``_set``."""

    def every_slot(self) -> np.ndarray:
        """Every slot of every trial, (trials, slots): to compare two executors slot by slot."""
        return self._get(slice(None))

    def weights(self) -> Weights:
        return {c.name: self._get(self.program.weight_slots(c)).reshape((self.trials,) + c.shape)
                for c in self.program.plan.connections}

    def set_weights(self, weights: Weights) -> None:
        for c in self.program.plan.connections:
            self._set(self.program.weight_slots(c), weights[c.name])

    def velocity(self) -> Weights:
        """The momentum term of every trainable connection."""
        velocity = self._get(self.program.velocity)
        return {slot.connection: velocity[:, slot.offset:slot.offset + slot.size].reshape((self.trials,) + slot.shape)
                for slot in self.program.plan.parameters}

    def set_velocity(self, velocity: dict[str, np.ndarray]) -> None:
        flat = np.zeros((self.trials, self.program.n_theta))
        for slot in self.program.plan.parameters:
            if slot.connection in velocity:
                flat[:, slot.offset:slot.offset + slot.size] = np.asarray(velocity[slot.connection]).reshape(self.trials, -1)
        self._set(self.program.velocity, flat)

    def state(self) -> dict[str, np.ndarray]:
        """The previous-step values the next step reads, group -> (trials, size)."""
        return {name: self._get(self.program.prev(name)) for name in self.program.plan.delayed_sources}

    def set_state(self, state: dict[str, np.ndarray]) -> None:
        for name in self.program.plan.delayed_sources:
            self._set(self.program.prev(name), state.get(name, np.zeros((self.trials, self.program.plan.unit[name].size))))

    def traces(self) -> dict[str, np.ndarray]:
        """Stored traces, traced group -> (trials, entries) (`Program.trace_entries`)."""
        return {group: self._get(self.program.trace(group)) for group in self.program.trace_entries}

    def set_traces(self, traces: dict[str, np.ndarray]) -> None:
        for group, (units, _) in self.program.trace_entries.items():
            self._set(self.program.trace(group), traces.get(group, np.zeros((self.trials, len(units)))))

