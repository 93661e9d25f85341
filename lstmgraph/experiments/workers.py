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
  results, so no filesystem is shared. An address is checked (`check_cluster_address`) before
  anything connects: a malformed one is a `ClusterError` naming it and the form expected.

Either way a piece runs inside `run_in_worker`: an error in it that would not come back to
the parent as itself (one that cannot be pickled, or unpickled: a `SpecError`, say, which once
broke the whole pool) comes back as a `WorkerError` carrying its type and message, which
`lost` never mistakes for a lost worker.
"""

from __future__ import annotations

import ipaddress
import logging
import multiprocessing
import os
import pickle
import re
import signal
import threading
import time
from concurrent.futures import CancelledError, Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from contextlib import contextmanager
from typing import Any, Callable, Iterator

from ..limits import MAX_JOBS, LimitError, check_count
from .stops import STOP_SIGNALS

#: The Dask schemes a scheduler can be reached by from another process (not ``inproc``).
CLUSTER_SCHEMES = ("tcp", "tls", "ws", "wss", "ucx")
CLUSTER_ADDRESS_FORM = ("SCHEME://HOST:PORT, e.g. tcp://10.0.0.5:8786 (SCHEME tcp, tls, ws, wss or ucx; "
                        "HOST a name, an IPv4 address or an IPv6 address in brackets; PORT 1 to 65535)")
_LABEL = r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?"
_HOSTNAME = re.compile(rf"{_LABEL}(?:\.{_LABEL})*\.?")


class Workers:
    """What the runner needs of a place to run pieces. ``shares_cache``: whether every worker
    reads and writes this process's kernel cache, so that what one compiles the others load."""

    slots: int
    shares_cache: bool = False

    def submit(self, function: Callable[[Any], Any], argument: Any) -> Future:
        raise NotImplementedError

    def lost(self, error: BaseException) -> bool:
        """Whether ``error`` (raised by a piece's future) means its worker was lost."""
        raise NotImplementedError

    def ended(self, error: BaseException) -> Exception | None:
        """What to raise where ``error`` (raised by a piece's future) means every worker is gone
        (a cluster's scheduler lost), so no piece can run again now; else None."""
        return None

    def present(self) -> int | None:
        """How many workers are there to take pieces now, where that can change (a cluster's
        come and go); None for workers this process starts itself."""
        return None

    def stop(self) -> None:
        raise NotImplementedError


def _watch_parent(parent: int) -> None:
    """In a worker: exit as soon as the process that started it is gone (a reproduce killed by
    any signal leaves no worker running)."""
    while os.getppid() == parent:
        time.sleep(0.5)
    os._exit(70)


def _start_worker(parent: int) -> None:
    # Ctrl-C, and the SIGHUP of a closed terminal, reach the whole process group: the parent's to
    # handle (it ends its workers).
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGHUP, signal.SIG_IGN)
    # The parent held the stop signals while starting this process, and a process inherits that
    # mask: SIGTERM must reach it again, or `stop` could not end it.
    signal.pthread_sigmask(signal.SIG_UNBLOCK, set(STOP_SIGNALS))
    threading.Thread(target=_watch_parent, args=(parent,), daemon=True, name="watch-parent").start()


class LocalWorkers(Workers):
    """``jobs`` worker processes on this machine; they share its kernel cache."""

    shares_cache = True

    def __init__(self, jobs: int):
        self.slots = max(1, jobs)
        self.pool: ProcessPoolExecutor | None = None
        self.others = set(multiprocessing.active_children())  # a caller's own processes: left alone

    def _pool(self) -> ProcessPoolExecutor:
        if self.pool is None:
            self.pool = ProcessPoolExecutor(self.slots, mp_context=multiprocessing.get_context("spawn"),
                                            initializer=_start_worker, initargs=(os.getpid(),))
        return self.pool

    def submit(self, function: Callable[[Any], Any], argument: Any) -> Future:
        try:
            return self._pool().submit(run_in_worker, (function, argument))
        except BrokenProcessPool:
            self._replace()
            return self._pool().submit(run_in_worker, (function, argument))

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
        if isinstance(cluster, str):
            cluster = check_cluster_address(cluster)
        distributed = dask_distributed()
        if isinstance(cluster, str):
            try:
                self.client = _client(distributed, cluster)
            except ClusterError:  # (no answer at all: said as it is)
                raise
            except (OSError, TimeoutError) as error:
                raise ClusterError(f"cannot reach the Dask scheduler at {cluster} ({error}); start one with "
                                   "'dask scheduler' (docs/cluster.md in the lstmgraph source)") from None
            except (ValueError, TypeError) as error:  # a form the check above takes: Dask's setup, or the answer
                raise ClusterError(f"cannot use the Dask scheduler at {cluster} ({error}): a tls:// scheduler needs its "
                                   "security settings (from Python, pass a distributed.Client made with them; "
                                   "docs/cluster.md in the lstmgraph source), and a worker's address is not the "
                                   "scheduler's") from None
            except Exception as error:  # another service there: Dask read its reply as a message's length
                raise ClusterError(f"what answers at {cluster} is not a Dask scheduler ({_describe(error)}); give the "
                                   "scheduler's own address (port 8786 by default; 8787 is its dashboard)") from None
            self.own_client = True
        else:
            self.client, self.own_client = cluster, False
        threads = sum(worker.get("nthreads", 1) for worker in self.client.scheduler_info()["workers"].values())
        self.slots = max(1, threads)
        self.executor = self.client.get_executor(pure=False)
        self.killed_worker = distributed.KilledWorker

    def submit(self, function: Callable[[Any], Any], argument: Any) -> Future:
        return self.executor.submit(run_in_worker, (function, argument))

    def lost(self, error: BaseException) -> bool:
        return isinstance(error, self.killed_worker)

    def present(self) -> int | None:
        try:
            return len(self.client.scheduler_info()["workers"])
        except Exception:  # (a scheduler lost: its futures say so, `ended`; a count is only a report's)
            return None

    def ended(self, error: BaseException) -> Exception | None:
        # Dask cancels every future when the client loses its scheduler; this run cancels none it waits on.
        if isinstance(error, CancelledError):
            return ClusterError("the Dask scheduler was lost; the trials' checkpoints are kept: once it runs again, "
                                "run the same command to resume")
        return None

    def stop(self) -> None:
        # A client that lost its scheduler logs a traceback per reconnect it gives up: the run says why it ended.
        quiet = self.client.status != "running"
        client_log = logging.getLogger("distributed.client")
        level = client_log.level
        if quiet:
            client_log.setLevel(logging.CRITICAL)
        try:
            self.executor.shutdown(wait=False)
            if self.own_client:
                self.client.close()  # (again: nothing)
        finally:
            client_log.setLevel(level)


#: How long a scheduler address may take to answer before it is refused (`_client`): Dask's own
#: timeout, and a grace after it for an answer that never comes.
CONNECT_SECONDS, CONNECT_GRACE_SECONDS = 20.0, 5.0


def _client(distributed: Any, address: str) -> Any:
    """``distributed.Client(address)``, made in a thread of its own and given up after
    `CONNECT_SECONDS` and its grace: a service that reads the handshake and never answers
    (a dashboard's web port) held Dask's own timeout off forever."""
    made: dict[str, Any] = {}
    given_up = threading.Event()

    def connect() -> None:
        try:
            made["client"] = distributed.Client(address, timeout=f"{CONNECT_SECONDS}s")
        except BaseException as error:  # (raised again below, in the caller's thread)
            made["error"] = error
            return
        if given_up.is_set():  # made too late: no one will use it
            made["client"].close()

    thread = threading.Thread(target=connect, name="lstmgraph-dask-connect", daemon=True)
    thread.start()
    thread.join(CONNECT_SECONDS + CONNECT_GRACE_SECONDS)
    if thread.is_alive():
        given_up.set()
        raise ClusterError(f"nothing at {address} answered as a Dask scheduler within "
                           f"{CONNECT_SECONDS + CONNECT_GRACE_SECONDS:.0f} s; "
                           "give the scheduler's own address (port 8786 by default; 8787 is its dashboard)")
    if "error" in made:
        raise made["error"]
    return made["client"]


class ClusterError(Exception):
    """The workers cannot be used (a malformed or unreachable scheduler address, Dask not
    installed, too many local workers), or a piece failed on one (`WorkerError`)."""


class WorkerError(ClusterError):
    """An error raised by a piece in a worker that could not come back as itself (it cannot be
    pickled or unpickled): its type and message, as one string. Not a lost worker: the piece
    itself failed, and would fail again."""

    def __init__(self, message: str):
        super().__init__(message)
        self.message = message

    def __reduce__(self):
        return WorkerError, (self.message,)


class JobsLimitError(ClusterError, LimitError):
    """More local worker processes than `MAX_JOBS`."""


def run_in_worker(call: tuple[Callable[[Any], Any], Any]) -> Any:
    """In a worker: ``function(argument)``; an exception that would not reach the parent as
    itself is raised as a `WorkerError` carrying its type and message instead."""
    function, argument = call
    try:
        return function(argument)
    except Exception as error:
        if _travels(error):
            raise
        raise WorkerError(f"a piece failed in its worker: {_describe(error)}") from None


def _travels(error: BaseException) -> bool:
    """Whether ``error`` comes back from another process as an exception of its own type."""
    try:
        return type(pickle.loads(pickle.dumps(error))) is type(error)
    except Exception:
        return False


def _describe(error: BaseException) -> str:
    """``Type: message``; a spec's problems formatted as the CLI prints them."""
    try:
        text = error.format() if callable(getattr(error, "format", None)) else str(error)
    except Exception:
        text = str(error)
    text = text if isinstance(text, str) else str(error)
    text = text.strip() or "(no message)"
    if len(text) > 4000:
        text = text[:3997] + "..."
    return f"{type(error).__name__}: {text}"


def dask_distributed() -> Any:
    """Dask's distributed package, or a `ClusterError` saying how to install it."""
    try:
        import distributed
    except ImportError:
        raise ClusterError("running on a cluster needs Dask's distributed package: "
                           "pip install distributed (in a checkout: pip install '.[cluster]')") from None
    return distributed


def check_cluster(cluster: Any) -> None:
    """A `ClusterError` for a run on ``cluster`` (an address or a ``distributed.Client``) that
    cannot start here: an address of the wrong form, or no Dask. Nothing is connected to."""
    if isinstance(cluster, str):
        check_cluster_address(cluster)
    dask_distributed()


def check_cluster_address(address: str) -> str:
    """``address`` if it is a Dask scheduler address this process can connect to
    (`CLUSTER_ADDRESS_FORM`; a missing scheme is tcp, as Dask takes it), else a `ClusterError`
    naming it, what is wrong, and the form expected. Nothing is connected to."""

    def refuse(reason: str):
        shown = repr(address) if isinstance(address, str) else type(address).__name__
        shown = shown if len(shown) <= 120 else shown[:117] + "..."
        raise ClusterError(f"not a Dask scheduler address: {shown} ({reason}); expected {CLUSTER_ADDRESS_FORM}")

    if not isinstance(address, str):
        refuse("not a string")
    if not address or len(address) > 512:
        refuse("empty" if not address else "longer than 512 characters")
    if not address.isprintable() or address != address.strip() or any(c.isspace() for c in address):
        refuse("it holds spaces or control characters")
    scheme, separator, rest = address.partition("://")
    if not separator:
        if "/" in address:
            refuse("a scheme must be followed by '://'")
        scheme, rest = "tcp", address
    if scheme.lower() not in CLUSTER_SCHEMES:
        refuse(f"unknown scheme {scheme[:20]!r}")
    if rest.startswith("["):
        host, bracket, tail = rest[1:].partition("]")
        if not bracket:
            refuse("an IPv6 address without its closing ']'")
        try:
            ipaddress.IPv6Address(host)
        except ValueError:
            refuse(f"{host[:60]!r} is not an IPv6 address")
        if not tail.startswith(":"):
            refuse("no port after the host" if not tail else f"{tail[:20]!r} after the host, not ':PORT'")
        port = tail[1:]
    else:
        host, colon, port = rest.rpartition(":")
        if not colon:
            refuse("no port: give HOST:PORT (a Dask scheduler listens on 8786 by default)")
        if not host:
            refuse("no host before the port")
        if ":" in host:
            refuse("an IPv6 address must be written in brackets, [ADDRESS]:PORT")
        if "/" in host or "/" in port:
            refuse("a path after the address")
        if re.fullmatch(r"[0-9.]+", host):
            try:
                ipaddress.IPv4Address(host)
            except ValueError:
                refuse(f"{host[:60]!r} is not an IPv4 address")
        elif len(host) > 253 or not _HOSTNAME.fullmatch(host):
            refuse(f"{host[:60]!r} is not a host name")
    if not port.isascii() or not port.isdigit() or len(port) > 5 or not 1 <= int(port) <= 65535:
        refuse(f"port {port[:20]!r} is not a number from 1 to 65535")
    return address


@contextmanager
def connected(cluster: Any) -> Iterator[Any]:
    """``cluster`` connected (`ClusterWorkers`) for the block, so that a scheduler not reached
    is refused before anything is written, and let go after it; None (local workers) and
    `Workers` as they are."""
    workers = ClusterWorkers(cluster) if cluster is not None and not isinstance(cluster, Workers) else cluster
    try:
        yield workers
    finally:
        if workers is not None and workers is not cluster:
            workers.stop()


def workers_for(jobs: int, cluster: Any = None) -> Workers:
    """Local worker processes, or a cluster's workers when ``cluster`` is given (an address, a
    ``distributed.Client``, or `ClusterWorkers` already connected)."""
    if isinstance(cluster, Workers):
        return cluster
    if cluster is None:
        try:
            check_count("the number of local workers (--jobs)", jobs, MAX_JOBS)
        except LimitError as error:
            raise JobsLimitError(str(error)) from None
    return ClusterWorkers(cluster) if cluster is not None else LocalWorkers(jobs)
