"""Stop signals: Ctrl-C, SIGTERM and SIGHUP end a run the way a finished one ends.

`stopped_by_signals` turns a stop signal into `Stopped` in the main thread, so a run ends
through its ``finally`` (workers ended, finished trials kept, running ones checkpointed).
`stops_deferred` holds a signal while workers start, or while a run's summary files are written,
then raises it (or, on the way out of a stop, drops it).
"""

from __future__ import annotations

import signal
import threading
from contextlib import contextmanager
from typing import Any, Callable, Iterator

#: The signals that stop a run the way Ctrl-C does: a terminal's Ctrl-C, the SIGTERM of
#: `kill`, `timeout` or a batch scheduler (SLURM sends it before its SIGKILL), and the SIGHUP of
#: a closed terminal or a dropped ssh session (`nohup` ignores it, and so does the run then).
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


class Stopped(KeyboardInterrupt):
    """The run was stopped by ``signal_number``: its workers are ended, its trials resume.
    ``results``: what `schedule.run_experiment` wrote for the trials that had finished (None if
    none; `run_experiments` gives a list, one per target)."""

    def __init__(self, signal_number: int):
        super().__init__(signal.Signals(signal_number).name)
        self.signal_number = signal_number
        self.results: Any = None


def _raise_stopped(signal_number: int, frame: object) -> None:
    raise Stopped(signal_number)


@contextmanager
def _stop_signals_handled_by(handler: Callable[[int, object], None]) -> Iterator[bool]:
    """``handler`` for the stop signals this process does not ignore (a shell script's `cmd &`
    ignores Ctrl-C) while the block runs; yields False, doing nothing, outside the main thread
    (only the main thread handles signals)."""
    if threading.current_thread() is not threading.main_thread():
        yield False
        return
    heeded = [number for number in STOP_SIGNALS if signal.getsignal(number) is not signal.SIG_IGN]
    former = {number: signal.signal(number, handler) for number in heeded}
    try:
        yield True
    finally:
        for number, handler in former.items():
            signal.signal(number, handler)


@contextmanager
def stopped_by_signals() -> Iterator[None]:
    """A stop signal raises `Stopped` in the main thread, so the run ends through its `finally`
    (workers terminated, nothing left behind) instead of dying where it stands."""
    with _stop_signals_handled_by(_raise_stopped):
        yield


@contextmanager
def stops_deferred(drop: bool = False) -> Iterator[None]:
    """Hold a stop signal until the block ends, then raise it (``drop``: forget it). A worker
    whose start is cut short reads half its start-up data and prints a traceback; a summary file
    whose writing is cut short is not written, and a stop inside an import (matplotlib's, for
    the figure) leaves a half-loaded module that the stop's own writing then fails on. ``drop``
    where the run is stopping already: a second Ctrl-C must not cut short the writing of what
    the first one stopped. The handler defers it in this process (any thread may receive the
    signal); the signal mask, which started workers inherit, keeps a terminal's Ctrl-C from
    reaching them before they ignore it."""
    caught: list[int] = []
    with _stop_signals_handled_by(lambda number, frame: caught.append(number)) as handled:
        if not handled:
            yield
            return
        mask = signal.pthread_sigmask(signal.SIG_BLOCK, set(STOP_SIGNALS))
        try:
            yield
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, mask)
    if caught and not drop:
        raise Stopped(caught[0])
