"""nginx serving a static simweb export (tests/simweb/static.py) on 127.0.0.1:PORT.

One unprivileged foreground nginx (``daemon off``, its own prefix in a temp dir), one
server block per host (name-based virtual hosts), keep-alive on, and an access log with
the fields the politeness checks need (tab-separated)::

    msec  request_time  status  bytes  host  request_uri  user_agent  connection
"""
from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path

LOG_FORMAT = "$msec\\t$request_time\\t$status\\t$body_bytes_sent\\t$host\\t$request_uri\\t$http_user_agent\\t$connection"


def _q(s: str) -> str:
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


def build_conf(export_dir, prefix, port: int, workers: int = 1) -> str:
    export_dir = Path(export_dir).resolve()
    prefix = Path(prefix).resolve()
    m = json.loads((export_dir / "manifest.json").read_text())
    lines = []
    if os.geteuid() == 0:
        lines.append("user root;")
    lines += [f"worker_processes {workers};", "daemon off;", f"pid {prefix}/nginx.pid;",
              f"error_log {prefix}/error.log warn;",
              "events { worker_connections 8192; multi_accept on; }", "http {",
              f"  log_format bench '{LOG_FORMAT}';",
              f"  access_log {prefix}/access.log bench buffer=256k flush=1s;",
              f"  client_body_temp_path {prefix}/tmp_body;", f"  proxy_temp_path {prefix}/tmp_proxy;",
              f"  fastcgi_temp_path {prefix}/tmp_fcgi;", f"  uwsgi_temp_path {prefix}/tmp_uwsgi;",
              f"  scgi_temp_path {prefix}/tmp_scgi;",
              "  include /etc/nginx/mime.types;",
              f"  default_type {m.get('default_type', 'text/html')};", "  sendfile on; tcp_nopush on; tcp_nodelay on;",
              "  keepalive_timeout 75s; keepalive_requests 1000000;",
              "  server_tokens off; etag on; gzip off;",
              "  server_names_hash_max_size 8192; server_names_hash_bucket_size 128;",
              "  map_hash_max_size 262144; map_hash_bucket_size 256;",
              # a page with a query is the file $uri + "__Q__" + $args (static.file_path)
              '  map $args $qs { "" ""; default "__Q__$args"; }',
              # the charset the simweb names in Content-Type; $pagekey = host + path + $qs, set in
              # the server's rewrite phase (before try_files and index change $uri)
              '  map $pagekey $pagecharset { default "";']
    for host, hd in sorted(m["hosts"].items()):
        for target, cs in sorted(hd["charsets"].items()):
            path, _, query = target.partition("?")
            key = host + path + (f"__Q__{query}" if query else "")
            lines.append(f"    {_q(key)} {_q(cs)};")
    lines += ["  }", "  charset $pagecharset;",
              f"  server {{ listen 127.0.0.1:{port} default_server backlog=4096; "
              "server_name _; return 404; }"]
    for host, hd in sorted(m["hosts"].items()):
        root = export_dir / "www" / host
        lines.append(f"  server {{ listen 127.0.0.1:{port}; server_name {host}; root {root};")
        lines.append('    index index.html; set $pagekey "$host$uri$qs";')
        lines.append("    location / { try_files $uri$qs ${uri}index.html =404; }")
        if hd["robots_status"] >= 500:
            lines.append(f"    location = /robots.txt {{ return {hd['robots_status']}; }}")
        for target, (status, loc) in sorted(hd["redirects"].items()):
            if "?" in target:
                raise ValueError(f"redirect with a query cannot be served statically: {host}{target}")
            lines.append(f"    location = {_q(target)} {{ return {status} {_q(loc)}; }}")
        lines.append("  }")
    lines.append("}")
    return "\n".join(lines) + "\n"


class Nginx:
    """``with Nginx(export_dir, port, prefix) as ng:`` ... ``ng.access_log``."""

    def __init__(self, export_dir, port: int, prefix, workers: int = 1, binary: str = "nginx"):
        self.export_dir, self.port, self.prefix = Path(export_dir), int(port), Path(prefix)
        self.workers, self.binary = workers, binary
        self.proc = None

    @property
    def access_log(self) -> Path:
        return self.prefix / "access.log"

    def start(self):
        if shutil.which(self.binary) is None:
            raise SystemExit("error: nginx not found; install it (apt-get install -y nginx)")
        try:
            socket.create_connection(("127.0.0.1", self.port), timeout=0.5).close()
            raise SystemExit(f"error: 127.0.0.1:{self.port} is already in use; stop what listens "
                             "there or pick another --port")
        except OSError:
            pass
        self.prefix.mkdir(parents=True, exist_ok=True)
        conf = self.prefix / "nginx.conf"
        conf.write_text(build_conf(self.export_dir, self.prefix, self.port, self.workers))
        for f in ("access.log", "error.log"):
            (self.prefix / f).unlink(missing_ok=True)
        self.proc = subprocess.Popen([self.binary, "-p", str(self.prefix), "-c", str(conf)],
                                     stdout=subprocess.DEVNULL, stderr=open(self.prefix / "stderr.txt", "wb"))
        deadline = time.time() + 30
        while time.time() < deadline:
            if self.proc.poll() is not None:
                raise SystemExit(f"error: nginx exited: {(self.prefix / 'stderr.txt').read_text()[-2000:]}")
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=0.5).close()
                return self
            except OSError:
                time.sleep(0.1)
        raise SystemExit("error: nginx did not start listening within 30 s")

    def cpu_seconds(self) -> float:
        """User + system CPU seconds of the server's processes so far (its master and
        workers): the web's share of the machine beside the crawler's."""
        import psutil
        total = 0.0
        try:
            master = psutil.Process(self.proc.pid)
            for p in [master] + master.children(recursive=True):
                t = p.cpu_times()
                total += t.user + t.system
        except psutil.Error:
            pass
        return total

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGQUIT)   # graceful: workers flush the buffered log
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()

    def __enter__(self):
        return self.start()

    def __exit__(self, *a):
        self.stop()
