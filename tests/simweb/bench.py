"""Throughput of the simulated web: ``python -m tests.simweb bench --config large``.

Starts the server in a subprocess, writes a wrk Lua script that requests a deterministic
random sample of page URLs over all hosts (Host header per request, connections to one
host address), runs ``wrk`` (Debian package ``wrk``) and prints its summary.
"""
from __future__ import annotations

import random
import shutil
import subprocess
import tempfile
from pathlib import Path

from .process import SimWebProcess


def lua_script(web, data_file: Path, n: int = 5000, seed: int = 0) -> str:
    """Write ``n`` random "HOST PATH" lines to ``data_file``; return a Lua script cycling them."""
    rnd = random.Random(seed)
    lines = []
    for _ in range(n):
        i = rnd.randrange(web.N)
        h = web.hosts[web.page_host[i]]
        lines.append(f"{web.netloc(h.name)} {web.paths[i]}")
    data_file.write_text("\n".join(lines) + "\n")
    return (f'local reqs = {{}}\n'
            f'for line in io.lines("{data_file}") do\n'
            '  local h, p = line:match("^(%S+) (%S+)$")\n'
            '  reqs[#reqs + 1] = wrk.format("GET", p, {["Host"] = h, ["User-Agent"] = "wrk-bench"})\n'
            'end\n'
            'local n = #reqs\nlocal k = math.random(n)\n'
            'request = function()\n  k = k % n + 1\n  return reqs[k]\nend\n')


def run(config="small", seed=1, duration=10, threads=1, connections=16, workdir=None, urls=5000):
    wrk = shutil.which("wrk")
    if not wrk:
        raise SystemExit("wrk not found: apt-get install -y wrk")
    workdir = Path(workdir or tempfile.mkdtemp(prefix="simweb-bench-"))
    with SimWebProcess(config, seed=seed, workdir=workdir) as w:
        script = workdir / "bench.lua"
        script.write_text(lua_script(w.web, workdir / "bench-urls.txt", n=urls))
        addr = w.web.hosts[0].addr
        cmd = [wrk, f"-t{threads}", f"-c{connections}", f"-d{duration}s", "-s", str(script),
               f"http://{addr}:{w.port}/"]
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=duration + 60).stdout
        print("$ " + " ".join(cmd))
        print(out)
        return out
