"""Where an experiment's trial pieces run: worker processes on this machine, or a Dask cluster.

Both sides look alike to the runner (`Workers`): ``submit(function, argument)`` gives a
`concurrent.futures.Future`, ``slots`` says how many pieces can run at once, ``lost(error)``
tells a lost worker (its piece is submitted again from the trial's last checkpoint) from an
error in the piece itself, and ``stop()`` ends the work.

- `LocalWorkers`: spawned processes (``jobs`` of them). Each watches its parent and exits
  within a second of its death, whatever killed it (``kill -9`` included), so no worker is
  left behind; a worker that dies (killed, out of memory) breaks the pool, which is then
  started again.
- `ClusterWorkers`: the workers of a Dask scheduler (``tcp://HOST:8786``), or a
  ``distributed.Client`` a Python user made. Dask itself runs a lost worker's task again
  elsewhere; a task that lost its workers too often (``KilledWorker``) is submitted again.
  Workers need only lstmgraph installed: pieces carry the spec as data and return their
  results, so no filesystem is shared.
"""

from __future__ import annotations

import multiprocessing
import os
import signal
import threading
import time
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from typing import Any, Callable


class Workers:
    """What the runner needs of a place to run pieces."""

    slots: int
    description: str

    def submit(self, function: Callable[[Any], Any], argument: Any) -> Future:
        raise NotImplementedError

    def lost(self, error: BaseException) -> bool:
        """Whether ``error`` (raised by a piece's future) means its worker was lost."""
        raise NotImplementedError

    def stop(self) -> None:
        raise NotImplementedError


def _watch_parent(parent: int) -> None:
    """In a worker: exit as soon as the process that started it is gone (a reproduce killed by
    any signal leaves no worker running)."""
    while os.getppid() == parent:
        time.sleep(0.5)
    os._exit(70)


def _start_worker(parent: int) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle
    # The parent held the stop signals while starting this process, and a process inherits that
    # mask: SIGTERM must reach it again, or `stop` could not end it.
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT, signal.SIGTERM})
    threading.Thread(target=_watch_parent, args=(parent,), daemon=True, name="watch-parent").start()


class LocalWorkers(Workers):
    """``jobs`` worker processes on this machine."""

    def __init__(self, jobs: int):
        self.slots = max(1, jobs)
        self.description = f"{self.slots} local worker{'s' if self.slots != 1 else ''}"
        self.pool: ProcessPoolExecutor | None = None
        self.others = set(multiprocessing.active_children())  # a caller's own processes: left alone

    def _pool(self) -> ProcessPoolExecutor:
        if self.pool is None:
            self.pool = ProcessPoolExecutor(self.slots, mp_context=multiprocessing.get_context("spawn"),
                                            initializer=_start_worker, initargs=(os.getpid(),))
        return self.pool

    def submit(self, function: Callable[[Any], Any], argument: Any) -> Future:
        try:
            return self._pool().submit(function, argument)
        except BrokenProcessPool:
            self._replace()
            return self._pool().submit(function, argument)

    def lost(self, error: BaseException) -> bool:
        # The pool marks itself broken before it fails the futures: the next submit replaces it.
        return isinstance(error, BrokenProcessPool)

    def _replace(self) -> None:
        """A worker died and took the pool with it: the next submit starts a new one."""
        if self.pool is not None:
            self.pool.shutdown(wait=False, cancel_futures=True)
            self.pool = None

    def stop(self) -> None:
        """End the workers now (Ctrl-C, an error, or the end): pieces under way are lost, their
        trials resume from their last checkpoints."""
        if self.pool is not None:
            self.pool.shutdown(wait=False, cancel_futures=True)
            self.pool = None
        ours = [process for process in multiprocessing.active_children() if process not in self.others]
        for process in ours:
            process.terminate()
        for process in ours:
            process.join(5)


class ClusterWorkers(Workers):
    """The workers of a Dask cluster: ``cluster`` is a scheduler address or a
    ``distributed.Client``."""

    def __init__(self, cluster: Any):
        try:
            import distributed
        except ImportError:
            raise ClusterError("running on a cluster needs Dask's distributed package: "
                               "pip install 'lstmgraph[cluster]'") from None
        if isinstance(cluster, str):
            try:
                self.client = distributed.Client(cluster, timeout="20s")
            except (OSError, TimeoutError) as error:
                raise ClusterError(f"cannot reach the Dask scheduler at {cluster} ({error}); "
                                   "start one with 'dask scheduler' (docs/results.md, On a cluster)") from None
            self.own_client = True
        else:
            self.client, self.own_client = cluster, False
        threads = sum(worker.get("nthreads", 1) for worker in self.client.scheduler_info()["workers"].values())
        self.slots = max(1, threads)
        self.description = f"the Dask cluster at {self.client.scheduler.address} ({threads} worker threads)"
        self.executor = self.client.get_executor(pure=False)
        self.killed_worker = distributed.KilledWorker

    def submit(self, function: Callable[[Any], Any], argument: Any) -> Future:
        return self.executor.submit(function, argument)

    def lost(self, error: BaseException) -> bool:
        return isinstance(error, self.killed_worker)

    def stop(self) -> None:
        self.executor.shutdown(wait=False)
        if self.own_client:
            self.client.close()


class ClusterError(Exception):
    """The cluster cannot be used (not reachable, Dask not installed)."""


def workers_for(jobs: int, cluster: Any = None) -> Workers:
    """Local worker processes, or a cluster's workers when ``cluster`` is given."""
    return ClusterWorkers(cluster) if cluster is not None else LocalWorkers(jobs)
