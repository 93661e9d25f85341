"""How `reproduce` and `sweep` show trials that run for minutes or hours: a progress bar on a
terminal; in a log file a line per finished trial and, at most every ``log_every`` seconds, a
line on the running ones (the first after `FIRST_LOG` seconds, so a log shows the run is alive)."""

from __future__ import annotations

import os
import sys
import time
from contextlib import ExitStack, contextmanager
from typing import Any, Callable, Iterator

import click

#: ``--log-every``'s default: a line on the running trials every 10 minutes in a log file.
LOG_EVERY = 600
#: The first such line comes this soon (or after ``log_every``, if shorter).
FIRST_LOG = 60


@contextmanager
def trial_progress(count: int, quiet: bool, log_every: float, line: Callable[[Any], str],
                   plan: Callable[[], None]) -> Iterator[tuple[Callable[[], None], Callable[[Any], None], Callable]]:
    """Yields ``begin()``, ``trial_done(finished)`` and ``progress(report)`` for ``count``
    trials. ``begin()`` prints the run's ``plan()``, then the bar: the run calls it once its
    checks pass, so a refused run prints only its error. ``line(finished)`` is a finished trial
    in words. ``quiet`` (``--json``) prints nothing."""
    with ExitStack() as stack:
        bars: list = []
        finished = [0]
        next_line = [time.monotonic() + min(FIRST_LOG, log_every)]
        lost = [0]  # pieces whose worker was lost, as the last report counted them

        def begin() -> None:
            next_line[0] = time.monotonic() + min(FIRST_LOG, log_every)  # (from the run's start, its checks passed)
            if not quiet:
                plan()
            bars.append(stack.enter_context(click.progressbar(
                length=count, label="trials", file=None if not quiet else stack.enter_context(open(os.devnull, "w")),
                show_pos=True, show_eta=True)))

        def trial_done(ended: Any) -> None:
            bars[0].update(1)
            finished[0] += 1
            if not quiet and not sys.stdout.isatty():  # a log file: one line per trial instead
                click.echo(f"  {line(ended)} [{finished[0]}/{count}]")

        def progress(report) -> None:
            if quiet:
                return
            running, waiting = int(report.figures["running"]), int(report.figures["waiting"])
            if report.figures.get("lost", 0) > lost[0]:  # said at once; on a terminal over the bar, then the bar again
                lost[0] = int(report.figures["lost"])
                click.echo(("\r\033[K" if sys.stdout.isatty() else "") + f"  a piece's worker was lost ({lost[0]} so "
                           "far): its trials run again from their last checkpoints")
                bars[0]._last_line = None  # (click draws the bar only when its line changed)
            detail = f"; {report.label}" if report.label else ""
            if report.figures.get("workers") == 0:  # (counted on a cluster, now and then)
                detail = "; no workers on the cluster yet: the trials wait for one"
            if sys.stdout.isatty():
                bars[0].label = f"trials ({running} running, {waiting} waiting{detail})"[:100]
                bars[0].render_progress()
            elif detail and time.monotonic() >= next_line[0]:  # a log file
                next_line[0] = time.monotonic() + log_every
                click.echo(f"  {finished[0]} of {count} done, {running} running, {waiting} waiting{detail}")

        yield begin, trial_done, progress
