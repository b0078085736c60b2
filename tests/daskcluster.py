"""A dask.distributed cluster started as a user starts one: `dask scheduler` and `dask worker`.

    cluster = DaskCluster(workdir, workers=2, worker_env={1: {...}})
    ... --runner pipelines.daskrunner.DaskRunner --dask_client_address cluster.address
    cluster.stop()

The scheduler and each worker are processes of their own on 127.0.0.1, each worker in its
own working directory (and dask local directory), so nothing leans on a shared local path:
the crawl directory has to be one every process reaches (the S3 server, tests/s3server.py).
Workers run without a nanny (a killed worker stays dead, as a machine that went away) and
with one thread each. `worker_env` adds environment variables to one worker (e.g. a crash
point for a worker-kill test). `cpus` pins processes to cores with `taskset -c`: {"scheduler":
"0-1", 1: "0", 2: "1"} (a key left out: not pinned); a worker's helper processes (page
workers, fetch processes) inherit its affinity, and size themselves by it
(transforms.procs.usable_cores). Logs: workdir/scheduler.log, workdir/worker-N/worker.log.
"""
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


class DaskCluster:
    def __init__(self, workdir, workers=2, threads=1, worker_env=None, python=sys.executable, cpus=None):
        self.workdir = Path(workdir)
        cpus = cpus or {}
        pin = lambda who: ["taskset", "-c", str(cpus[who])] if who in cpus else []   # noqa: E731
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.python, self.procs, self.workers = python, [], {}
        env = {**os.environ, "PYTHONPATH": str(REPO)}
        scheduler_file = self.workdir / "scheduler.json"
        self._start([*pin("scheduler"), python, "-m", "dask", "scheduler", "--host", "127.0.0.1", "--port", "0",
                     "--no-dashboard", "--scheduler-file", str(scheduler_file)],
                    self.workdir, self.workdir / "scheduler.log", env)
        self._wait(lambda: scheduler_file.exists() and scheduler_file.stat().st_size > 0, "scheduler")
        self.address = json.loads(scheduler_file.read_text())["address"]
        for i in range(1, workers + 1):
            d = self.workdir / f"worker-{i}"
            d.mkdir(exist_ok=True)
            self.workers[i] = self._start(
                [*pin(i), python, "-m", "dask", "worker", self.address, "--host", "127.0.0.1", "--nthreads", str(threads),
                 "--no-dashboard", "--no-nanny", "--death-timeout", "60", "--name", f"worker-{i}",
                 "--local-directory", str(d / "dask")],
                d, d / "worker.log", {**env, **((worker_env or {}).get(i, {}))})
        self.wait_for_workers(workers)

    def _start(self, argv, cwd, log, env):
        with open(log, "wb") as out:
            proc = subprocess.Popen(argv, cwd=cwd, env=env, stdout=out, stderr=subprocess.STDOUT)
        self.procs.append(proc)
        return proc

    def _wait(self, done, what, timeout=120.0):
        deadline = time.monotonic() + timeout
        while not done():
            if time.monotonic() > deadline or any(p.poll() is not None for p in self.procs):
                self.stop()
                raise RuntimeError(f"the dask {what} did not start; logs in {self.workdir}")
            time.sleep(0.1)   # polling the processes' own readiness files

    def wait_for_workers(self, n, timeout=120):
        from distributed import Client
        with Client(self.address, timeout=timeout) as c:
            c.wait_for_workers(n, timeout=timeout)

    def beam_flags(self):
        """The runner flags a command takes to run on this cluster."""
        return ["--runner", "pipelines.daskrunner.DaskRunner", "--dask_client_address", self.address]

    def pids(self):
        """Process ids of the scheduler and the workers still alive."""
        return [p.pid for p in self.procs if p.poll() is None]

    def stop(self):
        for p in reversed(self.procs):   # workers first, then the scheduler
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
        for p in self.procs:
            try:
                p.wait(timeout=15)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()
