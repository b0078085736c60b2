"""A runner's service that does not answer is refused in one line before the round starts
(pipelines.endpoints): the Dask scheduler, a job server, an SDK worker pool."""
import socket
import threading
import time

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pipelines import crawl as crawl_mod
from pipelines import endpoints
from pipelines import round as round_mod
from pipelines.settings import UsageError
from tests.unit.test_cli import crawl_dir, refused  # noqa: F401 (a fixture)


def _closed_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@given(st.sampled_from(["127.0.0.1", "localhost", "scheduler.example", "::1"]),
       st.integers(1, 65535), st.sampled_from(["", "tcp://", "tls://", "grpc://"]))
def test_host_port_reads_every_address_form(host, port, scheme):
    written = f"[{host}]" if ":" in host else host
    assert endpoints.host_port(f"{scheme}{written}:{port}") == (host, port)


@pytest.mark.parametrize("address", ["", "inproc://1.2.3/4", "127.0.0.1", "tcp://:80", "host:notaport",
                                     "host:99999", "file:///tmp/scheduler.json", "[local]", "[auto]",
                                     "local[4]", "local"])
def test_an_address_without_a_tcp_port_is_left_to_the_runner(address):
    assert endpoints.host_port(address) is None


@pytest.mark.parametrize("argv, expected", [
    (["--runner", "pipelines.daskrunner.DaskRunner", "--dask_client_address", "tcp://h:1"],
     [("--dask_client_address", "tcp://h:1")]),
    (["--runner=pipelines.daskrunner.DaskRunner", "--dask_client_address=h:1", "--dask_scheduler_file=f"], []),
    (["--dask_client_address", "tcp://h:1"], []),   # not the Dask runner: the flag is unused
    (["--runner=PortableRunner", "--job_endpoint=embed", "--environment_type=LOOPBACK"], []),
    (["--runner=PortableRunner", "--job_endpoint=h:8099"], [("--job_endpoint", "h:8099")]),
    (["--runner=PortableRunner", "--job_endpoint=embed", "--environment_type=EXTERNAL",
      "--environment_config=h:50000"], [("--environment_config", "h:50000")]),
    (["--environment_type", "external", "--environment_config", '{"url": "h:7", "params": {}}'],
     [("--environment_config", "h:7")]),
    (["--environment_type=EXTERNAL", "--environment_options=external_service_address=h:9"],
     [("--environment_config", "h:9")]),
    (["--environment_type=DOCKER", "--environment_config=apache/beam_python3.11_sdk"], []),
    (["--runner=FlinkRunner", "--flink_master=h:8081"], [("--flink_master", "h:8081")]),
    (["--runner=FlinkRunner", "--flink_master=[local]"], []),     # a local master: no address
    (["--runner=FlinkRunner"], []),                                # Beam's default "[auto]"
    (["--flink_master=h:8081"], []),                               # not the Flink runner
    (["--runner=SparkRunner", "--spark_master_url=spark://h:7077", "--spark_rest_url=http://h:6066"],
     [("--spark_master_url", "spark://h:7077"), ("--spark_rest_url", "http://h:6066")]),
    (["--runner=SparkRunner", "--spark_master_url=local[4]"], []),
])
def test_services_named_by_the_beam_flags(argv, expected):
    assert [(flag, address) for flag, _, address, _ in endpoints.services(argv)] == expected


def test_a_service_that_starts_late_is_waited_for():
    """A worker pool launched a moment before the command: refused twice, then it listens."""
    now = [0.0]
    attempts = []

    def connect(address, timeout):
        attempts.append(address)
        if len(attempts) < 3:
            raise ConnectionRefusedError(111, "Connection refused")
        return socket.socket()

    assert endpoints.first_refusal("h", 1, wait_s=5, connect=connect, clock=lambda: now[0],
                                   sleep=lambda s: now.__setitem__(0, now[0] + s)) is None
    assert attempts == [("h", 1)] * 3


def test_a_service_that_never_answers_is_given_up_after_the_wait():
    now = [0.0]

    def connect(address, timeout):
        raise ConnectionRefusedError(111, "Connection refused")

    error = endpoints.first_refusal("h", 1, wait_s=2, connect=connect, clock=lambda: now[0],
                                    sleep=lambda s: now.__setitem__(0, now[0] + s))
    assert error == "ConnectionRefusedError: [Errno 111] Connection refused"
    assert 2 - endpoints.RETRY_S <= now[0] <= 2


def test_a_host_name_that_does_not_resolve_is_not_waited_for(monkeypatch):
    calls = []

    def connect(address, timeout):
        calls.append(address)
        raise socket.gaierror(-2, "Name or service not known")

    error = endpoints.first_refusal("no-such-host", 1, wait_s=30, connect=connect, clock=lambda: 0.0,
                                    sleep=lambda s: pytest.fail("a name that does not resolve was retried"))
    assert calls == [("no-such-host", 1)]
    assert error == "the host name does not resolve: [Errno -2] Name or service not known"
    monkeypatch.setattr(endpoints, "first_refusal", lambda host, port, wait_s: error)
    with pytest.raises(UsageError) as e:
        endpoints.check(["--runner=PortableRunner", "--job_endpoint=no-such-host:8099"])
    assert str(e.value).startswith("--job_endpoint no-such-host:8099: cannot reach the job server "
                                   "(the host name does not resolve: ")   # no "for 15 s"


def test_a_listening_service_passes_and_a_closed_port_is_one_line():
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        port = server.getsockname()[1]
        endpoints.check(["--runner=PortableRunner", f"--job_endpoint=127.0.0.1:{port}"], wait_s=1)
    closed = _closed_port()
    start = time.monotonic()
    with pytest.raises(UsageError) as e:
        endpoints.check(["--environment_type=EXTERNAL", f"--environment_config=127.0.0.1:{closed}"], wait_s=0.5)
    assert time.monotonic() - start < 5
    assert str(e.value).startswith(f"--environment_config 127.0.0.1:{closed}: cannot reach the SDK worker pool")
    assert "worker_pool_main" in str(e.value) and "\n" not in str(e.value)


def test_a_pool_that_starts_listening_during_the_wait_is_used():
    port = _closed_port()
    server = socket.socket()

    def listen_later():
        time.sleep(0.6)
        server.bind(("127.0.0.1", port))
        server.listen()

    thread = threading.Thread(target=listen_later)
    thread.start()
    try:
        endpoints.check(["--environment_type=EXTERNAL", f"--environment_config=127.0.0.1:{port}"], wait_s=10)
    finally:
        thread.join()
        server.close()


@pytest.mark.parametrize("main, extra", [(round_mod.main, []), (crawl_mod.main, ["--rounds", "1"])])
def test_round_and_crawl_refuse_an_unreachable_scheduler_before_writing(crawl_dir, capsys, monkeypatch,  # noqa: F811
                                                                        main, extra):
    monkeypatch.setattr(endpoints, "WAIT_S", 0.3)
    argv = ["--crawl_dir", str(crawl_dir), *extra, "--runner", "pipelines.daskrunner.DaskRunner",
            "--dask_client_address", f"tcp://127.0.0.1:{_closed_port()}"]
    refused(main, argv, capsys, crawl_dir, "cannot reach the Dask scheduler for 0.3 s")
