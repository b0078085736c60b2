"""The runner's services looked at before a round starts.

A Dask scheduler (`--dask_client_address`), a job server (`--job_endpoint`), an SDK worker
pool (`--environment_type EXTERNAL --environment_config HOST:PORT`), a Flink master
(`--flink_master`) or a Spark master (`--spark_master_url`, `--spark_rest_url`) that does not
answer made Beam or Dask fail deep inside the run, after the round was planned: a gRPC
traceback, or Dask's after 30 s. Here it is one line naming the flag, the address and
what to start. A service may have been started a moment ago (scripts/dask_local.sh, a
worker pool launched beside the command): it is given WAIT_S to start listening.
"""
import argparse
import json
import socket
import time
from urllib.parse import urlsplit

from pipelines.settings import UsageError

WAIT_S = 15.0         # how long a service that refuses connections is waited for
CONNECT_S = 5.0       # one connection attempt
RETRY_S = 0.25

DASK_HINT = ("is its scheduler running? `scripts/dask_local.sh` starts one with workers on "
             "this machine, `dask scheduler` anywhere")
JOB_HINT = "is the job server running? (--job_endpoint embed runs one inside this process)"
UNRESOLVED = "the host name does not resolve"   # first_refusal's answer that was not waited for
CLUSTER_HINT = "start the cluster, or give the address its master listens on"
POOL_HINT = ("is the SDK worker pool running? `python -m apache_beam.runners.worker.worker_pool_main "
             "--service_port=PORT` starts one")


def host_port(address):
    """(host, port) of a service address: `HOST:PORT`, `tcp://HOST:PORT`, `[::1]:PORT`;
    None for one without a TCP port (`inproc://`, a scheduler file) or not understood,
    which is left to the runner to judge."""
    address = address.strip()
    if not address:
        return None
    try:
        parts = urlsplit(address if "://" in address else f"tcp://{address}")
        port = parts.port
    except ValueError:
        return None
    if parts.scheme not in ("tcp", "tls", "grpc", "http", "https", "ws", "wss", "spark") or not parts.hostname or not port:
        return None
    return parts.hostname, port


def first_refusal(host, port, wait_s=WAIT_S, connect=socket.create_connection, clock=time.monotonic,
                  sleep=time.sleep):
    """None once a TCP connection to host:port opens; else what stopped the last attempt
    (e.g. "ConnectionRefusedError: [Errno 111] Connection refused"), after `wait_s`; a host
    name that does not resolve at once (a typo is not waited for)."""
    deadline = clock() + wait_s
    while True:
        try:
            connect((host, port), timeout=CONNECT_S).close()
            return None
        except socket.gaierror as e:
            return f"{UNRESOLVED}: {e}"
        except OSError as e:
            error = f"{type(e).__name__}: {e}"
        if clock() + RETRY_S > deadline:
            return error
        sleep(RETRY_S)


def _parser():
    parser = argparse.ArgumentParser(add_help=False, allow_abbrev=False)
    for flag in ("--runner", "--dask_client_address", "--dask_scheduler_file", "--job_endpoint",
                 "--environment_type", "--environment_config", "--flink_master", "--spark_master_url",
                 "--spark_rest_url"):
        parser.add_argument(flag)
    parser.add_argument("--environment_options", "--environment_option", action="append", default=[])
    return parser


def _external_address(flags):
    config = flags.environment_config
    if config and config.lstrip().startswith("{"):
        try:
            return json.loads(config).get("url")
        except (ValueError, AttributeError):
            return None
    if config:
        return config
    for option in flags.environment_options:
        key, _, value = option.partition("=")
        if key == "external_service_address":
            return value
    return None


def services(beam_argv):
    """[(flag, what, address, hint)] for each service the Beam flags `beam_argv` name at a
    TCP address (`host_port`)."""
    flags, _ = _parser().parse_known_args(list(beam_argv))
    found = []
    runner = (flags.runner or "").rsplit(".", 1)[-1].lower()
    if runner.startswith("dask") and flags.dask_client_address and not flags.dask_scheduler_file:
        found.append(("--dask_client_address", "the Dask scheduler", flags.dask_client_address, DASK_HINT))
    if flags.job_endpoint and flags.job_endpoint != "embed":
        found.append(("--job_endpoint", "the job server", flags.job_endpoint, JOB_HINT))
    # (a local master, "[local]", "[auto]", "local[4]", has no address: left out below)
    if runner.startswith("flink") and flags.flink_master:
        found.append(("--flink_master", "the Flink master", flags.flink_master, CLUSTER_HINT))
    if runner.startswith("spark") and flags.spark_master_url:
        found.append(("--spark_master_url", "the Spark master", flags.spark_master_url, CLUSTER_HINT))
    if runner.startswith("spark") and flags.spark_rest_url:
        found.append(("--spark_rest_url", "the Spark REST endpoint", flags.spark_rest_url, CLUSTER_HINT))
    if (flags.environment_type or "").upper() == "EXTERNAL":
        address = _external_address(flags)
        if address:
            found.append(("--environment_config", "the SDK worker pool", address, POOL_HINT))
    return [service for service in found if host_port(service[2]) is not None]


def check(beam_argv, wait_s=None):
    """A UsageError (one line) for the first service of `services(beam_argv)` that does
    not accept a TCP connection within `wait_s` (default WAIT_S)."""
    wait_s = WAIT_S if wait_s is None else wait_s
    for flag, what, address, hint in services(beam_argv):
        error = first_refusal(*host_port(address), wait_s=wait_s)
        if error:
            waited = "" if error.startswith(UNRESOLVED) else f" for {wait_s:g} s"
            raise UsageError(f"{flag} {address}: cannot reach {what}{waited} ({error}); {hint}")
