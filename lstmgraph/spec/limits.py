"""Limits that keep a hostile or mistaken spec from exhausting time or memory (docs/spec.md, "Limits").

Each is far above what a real network needs; going over one is a located spec error.
"""

from __future__ import annotations

#: Where an error over a limit points to.
LIMITS_HINT = "docs/spec.md, Limits"
#: Bytes of a spec file.
MAX_SPEC_BYTES = 1 << 20
#: Levels of nested lists and mappings, counted through aliases.
MAX_DEPTH = 32
#: Values (scalars, lists and mappings) of the document, each alias counted as the values it
#: stands for: bounds alias expansion ("billion laughs") and the work of validating.
MAX_VALUES = 50_000
#: Units of one unit group (a memory block's cells: blocks x cells_per_block).
MAX_GROUP_SIZE = 100_000
#: Weights of all connections together, trainable or not (8 bytes each per trial).
MAX_WEIGHTS = 10_000_000
#: An integer option of a built-in task (lengths, periods, counts: they size the sequences).
MAX_TASK_INTEGER = 10_000_000
#: A network name: it becomes part of file names (the default run directory).
NAME_PATTERN = r"^[A-Za-z0-9_][A-Za-z0-9_.-]*$"
MAX_NAME_LENGTH = 64
