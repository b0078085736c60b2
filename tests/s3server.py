"""An S3-compatible object store on loopback for the tests: moto's standalone server.

    python -m tests.s3server --address_file F [--bucket B ...]

starts moto's S3 server on 127.0.0.1 at a port the OS picks, creates the buckets, and
writes `http://127.0.0.1:PORT` to F once it serves (so no test guesses a free port). The
`s3_server` fixture runs it as a process of its own, as a user's object store would be,
and hands tests the Beam flags that reach it (`S3Server.beam_flags`).

Why moto: it is one `pip install moto[server]` (in CI too), needs no daemon, root or
configuration, and speaks the S3 REST API boto3 (Beam's S3 filesystem) sends: objects,
prefix listings, multipart uploads, batch deletes, server-side copy.
"""
import argparse
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
BUCKET = "beamcrawl"
KEYS = {"access": "testing-key", "secret": "testing-secret", "region": "us-east-1"}


class S3Server:
    """A running moto server process and what a client needs to reach it."""

    def __init__(self, workdir, buckets=(BUCKET,)):
        self.address_file = Path(workdir) / "s3-address"
        self.address_file.unlink(missing_ok=True)   # a killed server's: not this one's address
        self.log = open(Path(workdir) / "s3server.log", "wb")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "tests.s3server", "--address_file", str(self.address_file),
             *[a for b in buckets for a in ("--bucket", b)]],
            cwd=REPO, stdout=self.log, stderr=subprocess.STDOUT)
        self.endpoint = self._wait_for_address()

    def _wait_for_address(self, timeout=60.0):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.address_file.exists() and self.address_file.read_text().endswith("\n"):
                return self.address_file.read_text().strip()
            if self.proc.poll() is not None:
                break
            time.sleep(0.05)   # polling a file the server writes when it serves
        self.stop()
        raise RuntimeError(f"the S3 server did not start; see {self.log.name}")

    def beam_flags(self):
        """Beam's S3 options for this server (what a user passes to every command)."""
        return ["--s3_endpoint_url", self.endpoint, "--s3_access_key_id", KEYS["access"],
                "--s3_secret_access_key", KEYS["secret"], "--s3_region_name", KEYS["region"]]

    def env(self):
        """The same as environment variables (boto3's own: for notebooks and other tools)."""
        return {"AWS_ENDPOINT_URL": self.endpoint, "AWS_ACCESS_KEY_ID": KEYS["access"],
                "AWS_SECRET_ACCESS_KEY": KEYS["secret"], "AWS_DEFAULT_REGION": KEYS["region"]}

    def client(self):
        import boto3
        return boto3.client("s3", endpoint_url=self.endpoint, aws_access_key_id=KEYS["access"],
                            aws_secret_access_key=KEYS["secret"], region_name=KEYS["region"])

    def keys(self, bucket=BUCKET, prefix=""):
        """Every object key under `prefix` in `bucket`."""
        pages = self.client().get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix)
        return sorted(o["Key"] for page in pages for o in page.get("Contents", []))

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()


@pytest.fixture(scope="session")
def s3_server(tmp_path_factory):
    """moto's S3 server on 127.0.0.1 (a process of its own) with the bucket `beamcrawl`."""
    server = S3Server(tmp_path_factory.mktemp("s3server"))
    try:
        yield server
    finally:
        server.stop()


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python -m tests.s3server")
    ap.add_argument("--address_file", required=True)
    ap.add_argument("--bucket", action="append", default=[])
    a = ap.parse_args(argv)
    from moto.server import ThreadedMotoServer
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    endpoint = f"http://{host}:{port}"
    import boto3
    s3 = boto3.client("s3", endpoint_url=endpoint, aws_access_key_id=KEYS["access"],
                      aws_secret_access_key=KEYS["secret"], region_name=KEYS["region"])
    for bucket in a.bucket:
        s3.create_bucket(Bucket=bucket)
    tmp = a.address_file + ".tmp"
    with open(tmp, "w") as f:
        f.write(endpoint + "\n")
    os.replace(tmp, a.address_file)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    stop.wait()
    server.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
