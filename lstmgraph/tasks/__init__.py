"""Seeded data generators ("tasks") of the papers' experiments, plus one for the modern specs.

Built-in tasks (name -> class): ``reber`` (Reber), ``embedded_reber`` (EmbeddedReber),
``continual_embedded_reber`` (ContinualEmbeddedReber), ``adding`` (Adding),
``multiplication`` (Multiplication), ``temporal_order`` (TemporalOrder),
``periodic_function`` (PeriodicFunction), ``measuring_spike_delays`` (MeasuringSpikeDelays;
MSD, and NMSD with ``continual: false``), ``generating_timed_spikes`` (GeneratingTimedSpikes),
``recall_first`` (RecallFirst). docs/experiments.md describes each one.
Build one from a spec with ``make_task(name, options)``.
"""

from .base import (TASKS, Sequence, Sequences, Task, TaskError, concatenated, draw, make_task, register,
                   task_success_test, unit_symbols)
from . import builtin  # noqa: F401,E402  (registers the built-in tasks)
from .adding import Adding, Multiplication
from .periodic import PeriodicFunction
from .reber import ContinualEmbeddedReber, EmbeddedReber, Reber
from .recall import RecallFirst
from .spikes import GeneratingTimedSpikes, MeasuringSpikeDelays
from .temporal_order import TemporalOrder

__all__ = ["TASKS", "Adding", "ContinualEmbeddedReber", "EmbeddedReber",
           "GeneratingTimedSpikes", "MeasuringSpikeDelays", "Multiplication", "PeriodicFunction",
           "Reber", "RecallFirst", "Sequence", "Sequences", "Task", "TaskError", "TemporalOrder",
           "concatenated", "draw", "make_task", "register", "task_success_test", "unit_symbols"]
