"""The compiled protocol drivers' bookkeeping, named once: a lane's status, the slots of its
counters and the protocol settings they read. Imports without numba (the drivers, the trials
and the tests read the same names; numba compiles IntEnum members as integer constants).

A lane is one trial in a block of lanes (`engine.compiled.lanes.LaneBlock`). Each driver keeps
a row of int64 counters per lane; the first `SEQUENCE_SAVED` / `STREAM_SAVED` are the trial's
place between pieces (what a checkpoint keeps), the rest say where the lane is
inside a sequence or stream.
"""

from __future__ import annotations

import enum


def _slots(name: str, names: str) -> type[enum.IntEnum]:
    """An IntEnum of ``names`` numbered from 0 in order (a counter row's or settings array's slots)."""
    return enum.IntEnum(name, names.split(), start=0)


#: A lane's status: running, or why it stopped (both drivers). ``DONE``: its limit (sequences,
#: streams or steps) reached, unsolved; ``PAUSED``: a piece's steps done, before a training unit
#: (sequence driver); ``NEED_TRAINING`` / ``NEED_TEST``: its training or test data ran out (or,
#: 1997, the test set is wanted): back to Python for more.
Status = _slots("Status", "RUNNING DONE PAUSED SOLVED DIVERGED NEED_TRAINING NEED_TEST")

#: A lane's counters in the 1997 sequence driver; the first `SEQUENCE_SAVED` are its place between
#: pieces. ``WRONG``: wrong sequences in the window; ``HEAD``, ``FILLED``: the window's oldest
#: entry and its length; ``PHASE``: `SequencePhase`; ``FROZEN_POSITION``: the place in the full
#: check's strings or the test set; ``RESULT``: `Status.SOLVED` or `Status.DONE` while the test set
#: runs; ``BUDGET`` / ``PAUSE``: stop / pause before a training sequence once ``STEPS`` reaches it
#: (-1: never).
SequenceCounter = _slots("SequenceCounter", """SEQUENCES STEPS LAST_CHECK WRONG STATUS PHASE POSITION
    FROZEN_POSITION IN_SEQUENCE START LENGTH DONE_STEPS HEAD FILLED BUDGET PAUSE RESULT TESTED TEST_WRONG""")
SEQUENCE_COUNTERS, SEQUENCE_SAVED = len(SequenceCounter), 4

#: What a 1997 lane runs: training sequences, a full check of the fixed training and test strings
#: (ERG), or the test set.
SequencePhase = _slots("SequencePhase", "TRAINING CHECKING TESTING")

#: The sequence driver's int64 settings (the success test comes as its kernel tolerance,
#: `lstmgraph.success`). ``FIXED``: a fixed training set, with full checks; ``TEST_SEQUENCES``:
#: the test set's size (0: none).
SequenceSetting = _slots("SequenceSetting", "WINDOW ALLOWED_WRONG MAX_SEQUENCES FIXED EVALUATE_EVERY TEST_SEQUENCES")
SEQUENCE_SETTINGS = len(SequenceSetting)

#: Fixed sets (1997 ERG): after this many sequences all right online since the last full check,
#: check again.
CHECK_AFTER_RIGHT = 50

#: A lane's counters in the 2000/2002 stream driver. The first `STREAM_SAVED` are its place
#: between streams: training streams and steps so far, the cursors in its training and test data,
#: and the phase (0: a training stream is next, k: test stream k). ``BUDGET``: pause before a
#: training stream once ``STEPS`` reaches it (-1: never); ``LAST_BUDGET``: the trial's own step
#: budget, at which its last test phase runs (-1: none).
StreamCounter = _slots("StreamCounter", """STREAMS STEPS TRAIN_POSITION TEST_POSITION PHASE STATUS IN_STREAM
    UNITS_DONE STREAM_STEPS SEGMENT_STEPS STEPS_LEFT ENDS_LEFT BUDGET LAST_BUDGET""")
STREAM_COUNTERS, STREAM_SAVED = len(StreamCounter), 5

#: The stream driver's int64 settings: the protocol's, in this order.
StreamSetting = _slots("StreamSetting", """STEPS_UNIT TRAIN_LIMIT TEST_LIMIT TEST_STREAMS RESET_EACH MAX_STREAMS
    STOP_FAILED_PHASE DECAY_EVERY""")
STREAM_SETTINGS = len(StreamSetting)

#: The score of a test stream that was not run (its phase ended at an earlier failing stream).
NOT_RUN = -1

#: Lockstep steps at most in one kernel call (the staging buffers' length); one driver call runs
#: about `WORK` of them before Python gets control back (for Ctrl-C).
CHUNK = 4096
WORK = 1 << 18
#: Steps of the stream driver's first chunk after a lane stopped (chunks then double, up to
#: `CHUNK`).
FIRST_CHUNK = 16
