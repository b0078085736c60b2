"""Run the simulated web in a subprocess (what the pytest fixtures use)."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]


class SimWebProcess:
    """A ``python -m tests.simweb serve`` subprocess.

    Attributes: hostmap_file, log_path, clock_file (None unless sim clock), port, web (the
    in-process model with the same seed/config/port), seeds, ground_truth (dict of Arrow
    tables), hostmap_lines. Methods: requests() (the request log so far), set_time(t),
    stop().
    """

    def __init__(self, config="small", seed: int = 1, hostile: bool = False, workdir=None,
                 clock_file: "bool | Path | None" = None, sim_start: float | None = None,
                 timeout: float = 120.0, extra_args=(), **overrides):
        """``config``: preset name, JSON file or dict; ``overrides``: SimConfig fields
        (e.g. ``trickle_seconds=3``), written with the config to ``workdir/config.json``."""
        import json
        from .model import build_web
        self.workdir = Path(workdir or tempfile.mkdtemp(prefix="simweb-"))
        self.workdir.mkdir(parents=True, exist_ok=True)
        if isinstance(config, dict) or overrides:
            d = dict(config) if isinstance(config, dict) else {"base": str(config)}
            d.update(overrides)
            cfg_file = self.workdir / "config.json"
            cfg_file.write_text(json.dumps(d))
            config = str(cfg_file)
        self.config, self.seed, self.hostile = config, seed, hostile
        self.hostmap_file = self.workdir / "hostmap.txt"
        self.log_path = self.workdir / "requests.jsonl"
        if self.hostmap_file.exists():
            self.hostmap_file.unlink()
        self.clock_file = None
        cmd = [sys.executable, "-m", "tests.simweb", "serve", "--config", str(config),
               "--seed", str(seed), "--port", "0", "--hostmap", str(self.hostmap_file),
               "--log", str(self.log_path), "--quiet"]
        if hostile:
            cmd.append("--hostile")
        if clock_file:
            self.clock_file = Path(clock_file) if not isinstance(clock_file, bool) else self.workdir / "clock.txt"
            cmd += ["--clock-file", str(self.clock_file)]
            if sim_start is not None:
                cmd += ["--sim-start", str(sim_start)]
        cmd += list(extra_args)
        self._stderr = open(self.workdir / "server.stderr", "w")
        self.proc = subprocess.Popen(cmd, cwd=REPO_ROOT, stdout=subprocess.DEVNULL,
                                     stderr=self._stderr, start_new_session=True)
        deadline = time.time() + timeout
        while not self.hostmap_file.exists():
            if self.proc.poll() is not None:
                raise RuntimeError(f"simweb server exited with {self.proc.returncode}: "
                                   f"{(self.workdir / 'server.stderr').read_text()[-2000:]}")
            if time.time() > deadline:
                self.stop()
                raise TimeoutError("simweb server did not write its hostmap in time")
            time.sleep(0.05)
        self.hostmap_lines = [l for l in self.hostmap_file.read_text().splitlines() if l.strip()]
        self.port = int(self.hostmap_lines[0].split(":")[1])
        self.web = build_web(config, seed, port=self.port, hostile=hostile or None)
        if sim_start is not None or self.clock_file:
            from .clock import FileClock
            self.web.clock = FileClock(self.clock_file, sim_start if sim_start is not None
                                       else self.web.cfg.sim_start)
        self.seeds = self.web.seeds
        self._truth = None

    @property
    def ground_truth(self) -> dict:
        if self._truth is None:
            self._truth = self.web.ground_truth()
        return self._truth

    @property
    def forbidden_addrs(self) -> list[str]:
        return self.web.forbidden_addrs

    @property
    def resolve_arg(self) -> str:
        """The hostmap as one ``--resolve`` value (HOST:PORT:ADDR,...)."""
        return ",".join(self.hostmap_lines)

    def requests(self) -> list[dict]:
        from .requestlog import read_log
        return read_log(self.log_path)

    def set_time(self, t: float) -> None:
        from .clock import set_file_clock
        if not self.clock_file:
            raise RuntimeError("this simweb runs on real time (start it with clock_file=True)")
        set_file_clock(self.clock_file, t)

    def stop(self, timeout: float = 10.0) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)
        self._stderr.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()
