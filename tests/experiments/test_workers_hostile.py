"""Where pieces run, against bad input: malformed cluster addresses are refused before anything
connects, a piece's error that cannot travel back to the parent arrives as a `WorkerError` (not
a broken pool, not a lost worker), and absurd worker counts are refused naming the limit."""

from __future__ import annotations

import ipaddress
import re
import sys
import time
from concurrent.futures.process import BrokenProcessPool

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lstmgraph.experiments.workers import (CLUSTER_SCHEMES, ClusterError, ClusterWorkers, LocalWorkers, WorkerError,
                                           check_cluster_address, run_in_worker, workers_for)
from lstmgraph.limits import MAX_JOBS, LimitError
from lstmgraph.errors import SpecError
from lstmgraph_cli.main import main

import worker_functions

PROPERTY = settings(max_examples=300, deadline=None, derandomize=True, database=None,
                    suppress_health_check=[HealthCheck.too_slow])

# -- addresses -------------------------------------------------------------------------------------

_LABEL = st.from_regex(r"[a-z0-9]([a-z0-9-]{0,10}[a-z0-9])?", fullmatch=True)
GOOD_HOSTS = st.one_of(st.lists(_LABEL, min_size=1, max_size=4).map(".".join)
                       .filter(lambda host: not re.fullmatch(r"[0-9.]+", host)),  # digits: an IPv4 address
                       st.ip_addresses(v=4).map(str),
                       st.ip_addresses(v=6).map(lambda address: f"[{address}]"))
BAD_HOSTS = st.one_of(st.just(""), st.just("-leading"), st.just("under_score"), st.just("a..b"),
                      st.just("300.1.2.3"), st.just("1.2.3.4.5"), st.just("::1"), st.just("[::1"),
                      st.just("[not-v6]"), st.just("a" * 64), st.just("h/x"), st.just("h o"), st.just("h\x00"),
                      st.just("é"))
GOOD_PORTS = st.integers(1, 65535).map(str)
BAD_PORTS = st.one_of(st.just(""), st.just("0"), st.integers(65536, 10**30).map(str),
                      st.integers(max_value=-1).map(str), st.just("80a"), st.just("٣"), st.just("8786/x"),
                      st.just("+80"), st.just(" 80"))
BAD_SCHEMES = st.sampled_from(["inproc", "http", "foo", "TCP:", "tcp:/", "udp"])


@st.composite
def address(draw) -> tuple[str, bool]:
    """An address and whether it is well formed: each part good or bad."""
    scheme_ok, host_ok, port_ok = draw(st.booleans()), draw(st.booleans()), draw(st.booleans())
    scheme = draw(st.sampled_from(CLUSTER_SCHEMES + ("",)) if scheme_ok else BAD_SCHEMES)
    host = draw(GOOD_HOSTS if host_ok else BAD_HOSTS)
    port = draw(GOOD_PORTS if port_ok else BAD_PORTS)
    text = (f"{scheme}://" if scheme else "") + f"{host}:{port}"  # no scheme: Dask takes tcp
    return text, scheme_ok and host_ok and port_ok


@PROPERTY
@given(address())
def test_an_address_is_accepted_exactly_when_every_part_is_well_formed(case):
    text, good = case
    if good:
        assert check_cluster_address(text) == text
    else:
        with pytest.raises(ClusterError) as raised:
            check_cluster_address(text)
        message = str(raised.value)
        assert message.startswith("not a Dask scheduler address: ") and "expected SCHEME://HOST:PORT" in message
        assert repr(text)[:100] in message or len(repr(text)) > 120


@PROPERTY
@given(st.one_of(st.text(max_size=40), st.binary(max_size=20).map(lambda b: b.decode("latin-1")),
                 st.integers(), st.none()))
def test_any_text_is_an_address_or_a_cluster_error(text):
    try:
        checked = check_cluster_address(text)
    except ClusterError as error:
        assert "expected SCHEME://HOST:PORT" in str(error)
    else:
        port = int(checked.rsplit(":", 1)[1])
        assert 1 <= port <= 65535
        host = checked.split("://")[-1].rsplit(":", 1)[0]
        if host.startswith("["):
            ipaddress.IPv6Address(host[1:-1])


def test_a_malformed_address_fails_before_connecting():
    start = time.monotonic()
    for text in ("tcp://127.0.0.1:99999", "tcp://:abc", "tcp://h", "nonsense", "foo://h:1", "tcp://[::1]"):
        with pytest.raises(ClusterError, match="not a Dask scheduler address"):
            ClusterWorkers(text)
        with pytest.raises(ClusterError, match="not a Dask scheduler address"):
            workers_for(1, text)
    assert time.monotonic() - start < 10   # no connection was tried (Dask's timeout is 20 s)


@pytest.mark.parametrize("text", ["tcp://127.0.0.1:99999", "tcp://:abc", "nonsense", "tcp://[::1"])
def test_reproduce_with_a_malformed_cluster_address_exits_2(tmp_path, text):
    result = CliRunner().invoke(main, ["reproduce", "hochreiter1997-adding-t100", "--trials", "1",
                                       "--cluster", text, "--out", str(tmp_path / "out")])
    assert result.exit_code == 2, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exc_info
    assert "Traceback" not in result.output
    assert f"not a Dask scheduler address: {text!r}" in result.output and "expected SCHEME://HOST:PORT" in result.output
    assert result.output.startswith("error: ") and not (tmp_path / "out").exists()  # no header, no folder


@pytest.mark.parametrize("command", [["reproduce"], ["sweep", "--vary", "learning_rate=0.1"]])
def test_a_run_on_a_cluster_without_dask_exits_2_before_writing_anything(tmp_path, monkeypatch, command):
    monkeypatch.setitem(sys.modules, "distributed", None)  # import distributed: ImportError
    result = CliRunner().invoke(main, [command[0], "gers2002-gts-peephole", *command[1:], "--trials", "1",
                                       "--cluster", "tcp://127.0.0.1:8786", "--out", str(tmp_path / "out")])
    assert result.exit_code == 2, result.output
    assert result.output.startswith("error: running on a cluster needs Dask's distributed package: ")
    assert "pip install distributed (in a checkout: pip install '.[cluster]')" in result.output
    assert not (tmp_path / "out").exists()


def _serving(answer):
    """A local TCP service for the test: ``answer(connection)`` for each connection it accepts;
    yields its address (tcp://127.0.0.1:PORT)."""
    import socket
    import threading

    listener = socket.create_server(("127.0.0.1", 0))
    listener.settimeout(0.2)
    done = threading.Event()

    def serve():
        while not done.is_set():
            try:
                connection, _ = listener.accept()
            except OSError:
                continue
            answer(connection)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield f"tcp://127.0.0.1:{listener.getsockname()[1]}"
    done.set()
    thread.join(5)
    listener.close()


@pytest.fixture
def http_server():
    """An address where a web server answers (a scheduler's dashboard port, say): every request
    gets 400 Bad Request. Dask reads those bytes as the length of its handshake message."""
    def answer(connection):
        with connection:
            connection.settimeout(5)
            try:
                connection.recv(65536)
                connection.sendall(b"HTTP/1.1 400 Bad Request\r\nconnection: close\r\ncontent-length: 0\r\n\r\n")
            except OSError:
                pass

    yield from _serving(answer)


def test_an_address_where_another_service_answers_is_named_not_a_memory_error(http_server):
    pytest.importorskip("distributed")
    start = time.monotonic()
    with pytest.raises(ClusterError) as raised:
        ClusterWorkers(http_server)
    assert str(raised.value).startswith(f"what answers at {http_server} is not a Dask scheduler (")
    assert "8787 is its dashboard" in str(raised.value)
    assert time.monotonic() - start < 15  # refused on its answer, not after Dask's 20 s timeout


@pytest.fixture
def silent_server():
    """An address where a service accepts, reads and never answers, as a dashboard's web server
    does with Dask's handshake (not a whole HTTP request): Dask's own timeout never fires."""
    held = []
    yield from _serving(held.append)
    for connection in held:
        connection.close()


def test_an_address_that_never_answers_is_refused_after_the_connect_time(silent_server, monkeypatch):
    """Before: reproduce --cluster on a scheduler's dashboard port printed its plan and hung."""
    pytest.importorskip("distributed")
    from lstmgraph.experiments import workers

    monkeypatch.setattr(workers, "CONNECT_SECONDS", 0.5)  # (the timeout under test, made short)
    monkeypatch.setattr(workers, "CONNECT_GRACE_SECONDS", 0.5)
    start = time.monotonic()
    with pytest.raises(ClusterError) as raised:
        ClusterWorkers(silent_server)
    assert str(raised.value).startswith(f"nothing at {silent_server} answered as a Dask scheduler within 1 s; give")
    assert time.monotonic() - start < 10


def test_futures_cancelled_with_the_scheduler_end_the_run_with_a_cluster_error():
    """Before: a scheduler killed mid-run ended reproduce in a CancelledError traceback (exit 1)."""
    from concurrent.futures import CancelledError

    cluster = object.__new__(ClusterWorkers)  # (its client is not needed to judge an error)
    ended = cluster.ended(CancelledError())
    assert isinstance(ended, ClusterError) and "run the same command to resume" in str(ended)
    assert cluster.ended(OSError("a piece's own error")) is None and LocalWorkers(1).ended(CancelledError()) is None


@pytest.mark.parametrize("command", [["reproduce"], ["sweep", "--vary", "learning_rate=0.1"]])
def test_a_run_on_an_address_where_another_service_answers_exits_2_before_writing_anything(tmp_path, http_server,
                                                                                            command):
    pytest.importorskip("distributed")
    result = CliRunner().invoke(main, [command[0], "gers2002-gts-peephole", *command[1:], "--trials", "1",
                                       "--cluster", http_server, "--out", str(tmp_path / "out")])
    assert result.exit_code == 2, result.output
    assert f"on the Dask cluster at {http_server}" in result.output.splitlines()[0]  # the plan, while it connects
    assert f"\nerror: what answers at {http_server} is not a Dask scheduler" in result.output, result.output
    assert not (tmp_path / "out").exists()  # no folder made


@pytest.mark.parametrize("jobs", [0, MAX_JOBS + 1, 10**12, 10**5000], ids=["0", "limit+1", "1e12", "1e5000"])
def test_absurd_worker_counts_are_refused_naming_the_limit(jobs):
    with pytest.raises(ClusterError) as raised:
        workers_for(jobs)
    assert isinstance(raised.value, LimitError)
    assert (f"more than the limit of {MAX_JOBS:,}" if jobs > 0 else "must be at least 1") in str(raised.value)


# -- a piece's errors ------------------------------------------------------------------------------

def test_run_in_worker_passes_errors_that_travel_and_wraps_those_that_do_not():
    class Unpicklable(worker_functions.Unpicklable):
        """Defined here, after any import of Dask: Dask installs tblib's pickling of the exception
        classes defined before it (in this process, not in a spawned worker)."""

    def unpicklable(message):
        raise Unpicklable(message, 7)

    assert run_in_worker((worker_functions.square, 7)) == 49
    with pytest.raises(ValueError, match="plain"):
        run_in_worker((worker_functions.value_error, "plain"))
    with pytest.raises(WorkerError, match=r"Unpicklable: broken \(code 7\)"):
        run_in_worker((unpicklable, "broken"))
    with pytest.raises(SpecError, match=r"specs/net.yaml: groups\[0\].size: the net takes 5 inputs"):
        run_in_worker((worker_functions.spec_error, 5))  # a spec error travels as itself


@pytest.fixture(scope="module")
def local():
    workers = LocalWorkers(1)
    yield workers
    workers.stop()


@settings(max_examples=8, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(message=st.text(min_size=1, max_size=200))
def test_an_error_that_cannot_travel_reaches_the_parent_as_a_worker_error(local, message):
    future = local.submit(worker_functions.unpicklable, message)
    with pytest.raises(WorkerError) as raised:
        future.result(timeout=300)
    assert str(raised.value).startswith("a piece failed in its worker: Unpicklable: ")
    assert f"{message} (code 7)".strip()[:100] in str(raised.value) or not message.strip()
    assert not local.lost(raised.value)                      # a failed piece, not a lost worker
    assert local.submit(worker_functions.square, 3).result(timeout=300) == 9   # the pool still works


def test_a_spec_error_in_a_worker_is_named_and_a_dead_worker_is_lost(local):
    with pytest.raises(SpecError, match="the net takes 5 inputs, the task gives 3") as raised:
        local.submit(worker_functions.spec_error, 5).result(timeout=300)
    assert not local.lost(raised.value)
    with pytest.raises(ValueError, match="plain") as plain:
        local.submit(worker_functions.value_error, "plain").result(timeout=300)
    assert not local.lost(plain.value)
    with pytest.raises(BrokenProcessPool) as broken:
        local.submit(worker_functions.die, 9).result(timeout=300)
    assert local.lost(broken.value)
    assert local.submit(worker_functions.square, 4).result(timeout=300) == 16   # a new pool
