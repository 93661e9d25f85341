"""Seeded data generators ("tasks") of the papers' experiments, plus one for the modern specs.

Built-in tasks (name -> class): ``reber`` (Reber), ``embedded_reber`` (EmbeddedReber),
``continual_embedded_reber`` (ContinualEmbeddedReber), ``adding`` (Adding),
``multiplication`` (Multiplication), ``temporal_order`` (TemporalOrder),
``periodic_function`` (PeriodicFunction), ``recall_first`` (RecallFirst).
Build one from a spec with ``make_task(name, options)``.
"""

from .base import TASKS, Sequence, Task, TaskError, concatenated, make_task, register
from . import catalogue  # noqa: F401,E402  (registers the built-in tasks)
from .adding import Adding, Multiplication
from .periodic import PeriodicFunction
from .reber import ContinualEmbeddedReber, EmbeddedReber, Reber
from .recall import RecallFirst
from .temporal_order import TemporalOrder

__all__ = ["TASKS", "Adding", "ContinualEmbeddedReber", "EmbeddedReber", "Multiplication",
           "PeriodicFunction", "Reber", "RecallFirst", "Sequence", "Task", "TaskError",
           "TemporalOrder", "concatenated", "make_task", "register"]
