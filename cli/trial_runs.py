"""What `reproduce` and `sweep` share: the options saying where and how their trials run, a
finished trial in words, where the trials run in words, and how a run's errors and a Ctrl-C end
the command."""

from __future__ import annotations

import os
import signal
import sys
from contextlib import contextmanager
from typing import Callable, Iterator

import click

from lstmgraph.engine.devices import DEVICES
from lstmgraph.limits import MAX_CHECKPOINT_SECONDS, MAX_JOBS, MAX_LANES, LimitError

from .common import counted, fail, resumable_error_text
from .trial_progress import LOG_EVERY


def finite(context: click.Context, parameter: click.Parameter, value: float | None) -> float | None:
    """Refuse NaN, which passes click's range checks (every comparison with it is false)."""
    if value is not None and value != value:
        raise click.BadParameter("expected a number, not nan")
    return value


def check_cluster_option(cluster: str | None) -> None:
    """``--cluster`` checked before anything, ``--status`` too (exit 2): ``--jobs`` beside it is
    refused, not dropped without a word (the cluster's workers run the trials), and so is an
    address of the wrong form, or no Dask (`workers.check_cluster`; nothing is connected to)."""
    if cluster is None:
        return
    context = click.get_current_context()
    if context.get_parameter_source("jobs") is click.core.ParameterSource.COMMANDLINE:
        raise click.UsageError("--jobs starts worker processes on this machine; with --cluster the cluster's "
                               "workers run the trials: leave out --jobs", context)
    from lstmgraph.experiments.workers import ClusterError, check_cluster

    try:
        check_cluster(cluster)
    except ClusterError as error:
        fail(str(error))


def running_options(lanes_help: str, device_help: str) -> Callable:
    """``--jobs``, ``--cluster``, ``--checkpoint-seconds``, ``--lanes``, ``--device`` and
    ``--log-every``, with the command's own words on lanes and the GPU."""
    options = [
        click.option("--jobs", metavar="N", type=click.IntRange(min=1, max=MAX_JOBS),
                     default=min(os.cpu_count() or 1, MAX_JOBS), show_default=True,
                     help="Worker processes on this machine."),
        click.option("--cluster", metavar="ADDRESS",
                     help="Run the trials on a Dask cluster's workers instead (e.g. tcp://HOST:8786; "
                          "docs/cluster.md in the lstmgraph source)."),
        click.option("--checkpoint-seconds", metavar="SECONDS",
                     type=click.FloatRange(min=1, max=MAX_CHECKPOINT_SECONDS), default=60, show_default=True,
                     callback=finite,
                     help="Work between two checkpoints of a running trial: the most a lost worker or a kill "
                          "costs."),
        click.option("--lanes", metavar="N", type=click.IntRange(min=1, max=MAX_LANES), default=1,
                     show_default=True, help=lanes_help),
        click.option("--device", type=click.Choice(DEVICES), default="cpu", show_default=True, help=device_help),
        click.option("--log-every", type=click.FloatRange(min=0), default=LOG_EVERY, show_default=True,
                     metavar="SECONDS", callback=finite,
                     help="When the output is not a terminal (a log file): a line on the running trials at most "
                          "this often (the first after a minute), besides a line per finished trial."),
    ]

    def decorate(command: Callable) -> Callable:
        for option in reversed(options):
            command = option(command)
        return command

    return decorate


def where_trials_run(device: str, cluster: str | None, jobs: int, on_the_gpu: str) -> str:
    """The plan's words for where the trials run: ``on_the_gpu`` (how the command fills the GPU),
    a Dask cluster, or this machine's workers."""
    if device == "cuda":
        return f"this machine's GPU, {on_the_gpu}"
    return f"the Dask cluster at {cluster}" if cluster else counted(jobs, "worker")


def trial_line(row: dict, unit: str) -> str:
    """One finished trial in words, e.g. 'trial 3: solved after 12,311 training streams (609.8 s)';
    one an earlier run finished says so (a resume lists it again)."""
    from lstmgraph.experiments.folder import FINISHED_BEFORE  # (the experiments package: only when trials run)

    def count(number: int) -> str:  # "1 sequence", "2 training streams"
        return f"{number:,} {unit[:-1] if number == 1 and unit.endswith('s') else unit}"

    if row.get("diverged"):
        outcome = f"diverged after {count(row['presented'])}"
    elif row["solved"]:
        outcome = f"solved after {count(row['to_success'])}"
    else:
        outcome = f"not solved in {count(row['presented'])}"
    kept = " (finished in an earlier run of the folder)" if row.get(FINISHED_BEFORE) else ""
    return f"trial {row['seed']}: {outcome} ({row['seconds']:.1f} s){kept}"


@contextmanager
def run_errors(device: str, begun: list, interrupted: Callable[[BaseException], str]) -> Iterator[None]:
    """End the command as its run ends otherwise than well: a device that cannot run it, a folder
    or cluster that refuses it or a disk that fills (exit 2, saying the same command resumes);
    Ctrl-C or a stop signal once the run has begun (``begun`` not empty) with
    ``interrupted(stop)``'s words and 128 + the signal's number. Before then a Ctrl-C is
    "interrupted" (`common.Commands`), and a reader closing standard output (| head) is click's
    quiet exit 1."""
    from lstmgraph.engine.gpu import GpuUnavailable
    from lstmgraph.experiments.folder import ResultsConflict
    from lstmgraph.experiments.trial import DeviceError
    from lstmgraph.experiments.workers import ClusterError
    from lstmgraph.tasks import TaskError

    try:
        yield
    except (DeviceError, GpuUnavailable) as error:
        fail(f"--device {device}: {error}")
    except BrokenPipeError:
        raise
    except (ResultsConflict, ClusterError, OSError, LimitError) as error:  # LimitError: a trial's data too large
        fail(resumable_error_text(error))
    except TaskError as error:  # a task no longer made as the run began: its data file changed since
        fail(str(error))
    except KeyboardInterrupt as stop:  # Ctrl-C, or a stop signal (stops.Stopped)
        if not begun:
            raise
        click.echo(f"\ninterrupted: {interrupted(stop)}", err=True)
        sys.exit(128 + getattr(stop, "signal_number", signal.SIGINT))


#: `--status` of a folder whose every trial is finished (`FolderStatus.all_finished`).
ALL_FINISHED = "every trial is finished: this command runs none (it writes the summary files again)"
