"""The compiled protocol drivers' bookkeeping, named once: a lane's status, the slots of its
counters and the protocol settings they read. Imports without numba (the drivers, the trials
and the tests read the same names; numba compiles IntEnum members as integer constants).

A lane is one trial in a block of lanes (`engine.compiled.lanes.LaneBlock`). Each driver keeps
a row of int64 counters per lane; the first `SequenceCounter.SAVED` / `StreamCounter.SAVED`
are the trial's place between pieces (what a checkpoint keeps), the rest say where the lane is
inside a sequence or stream.
"""

from __future__ import annotations

import enum


class Status(enum.IntEnum):
    """A lane's status: running, or why it stopped (both drivers)."""

    RUNNING = 0
    DONE = 1            # its limit (sequences, streams or steps) reached, unsolved
    PAUSED = 2          # a piece's steps done, before a training unit (sequence driver)
    SOLVED = 3
    DIVERGED = 4
    NEED_TRAINING = 5   # its training data ran out: back to Python for more
    NEED_TEST = 6       # its test data ran out (or, 1997, the test set is wanted)


class SequenceCounter(enum.IntEnum):
    """A lane's counters in the 1997 sequence driver. ``WRONG``: wrong sequences in the window;
    ``HEAD``, ``FILLED``: the window's oldest entry and its length; ``PHASE``: `SequencePhase`;
    ``FROZEN_POSITION``: the place in the full check's strings or the test set; ``RESULT``:
    `Status.SOLVED` or `Status.DONE` while the test set runs; ``BUDGET`` / ``PAUSE``: stop /
    pause before a training sequence once ``STEPS`` reaches it (-1: never)."""

    SEQUENCES = 0
    STEPS = 1
    LAST_CHECK = 2
    WRONG = 3
    STATUS = 4
    PHASE = 5
    POSITION = 6
    FROZEN_POSITION = 7
    IN_SEQUENCE = 8
    START = 9
    LENGTH = 10
    DONE_STEPS = 11
    HEAD = 12
    FILLED = 13
    BUDGET = 14
    PAUSE = 15
    RESULT = 16
    TESTED = 17
    TEST_WRONG = 18


#: Counters per lane, and how many of them a checkpoint keeps (sequence driver).
SEQUENCE_COUNTERS, SEQUENCE_SAVED = 19, 4


class SequencePhase(enum.IntEnum):
    TRAINING = 0
    CHECKING = 1   # a full check of the fixed training and test strings (ERG)
    TESTING = 2


class SequenceSetting(enum.IntEnum):
    """The sequence driver's int64 settings (the success test comes as its kernel tolerance,
    `lstmgraph.success`). ``FIXED``: a fixed training set, with full checks; ``TEST_SEQUENCES``:
    the test set's size (0: none)."""

    WINDOW = 0
    ALLOWED_WRONG = 1
    MAX_SEQUENCES = 2
    FIXED = 3
    EVALUATE_EVERY = 4
    TEST_SEQUENCES = 5


SEQUENCE_SETTINGS = 6

#: Fixed sets (1997 ERG): after this many sequences all right online since the last full check,
#: check again.
CHECK_AFTER_RIGHT = 50


class StreamCounter(enum.IntEnum):
    """A lane's counters in the 2000/2002 stream driver. The first five are its place between
    streams: training streams and steps so far, the cursors in its training and test data, and
    the phase (0: a training stream is next, k: test stream k). ``BUDGET``: pause before a
    training stream once ``STEPS`` reaches it (-1: never); ``LAST_BUDGET``: the trial's own
    step budget, at which its last test phase runs (-1: none)."""

    STREAMS = 0
    STEPS = 1
    TRAIN_POSITION = 2
    TEST_POSITION = 3
    PHASE = 4
    STATUS = 5
    IN_STREAM = 6
    UNITS_DONE = 7
    STREAM_STEPS = 8
    SEGMENT_STEPS = 9
    STEPS_LEFT = 10
    ENDS_LEFT = 11
    BUDGET = 12
    LAST_BUDGET = 13


#: Counters per lane, and how many of them a checkpoint keeps (stream driver).
STREAM_COUNTERS, STREAM_SAVED = 14, 5


class StreamSetting(enum.IntEnum):
    """The stream driver's int64 settings: the protocol's, in this order."""

    STEPS_UNIT = 0
    TRAIN_LIMIT = 1
    TEST_LIMIT = 2
    TEST_STREAMS = 3
    RESET_EACH = 4
    MAX_STREAMS = 5
    STOP_FAILED_PHASE = 6


STREAM_SETTINGS = 7

#: The score of a test stream that was not run (its phase ended at an earlier failing stream).
NOT_RUN = -1

#: Lockstep steps at most in one kernel call (the staging buffers' length); one driver call runs
#: about `WORK` of them before Python gets control back (for Ctrl-C).
CHUNK = 4096
WORK = 1 << 18
#: Steps of the stream driver's first chunk after a lane stopped (chunks then double, up to
#: `CHUNK`).
FIRST_CHUNK = 16
