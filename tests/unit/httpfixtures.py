"""Tiny HTTP servers for fetcher tests: loopback only, threaded, bounded in time.

    with LocalServer({"/": page(b"<html>hi</html>")}) as srv:
        srv.url("/")              # http://127.0.0.1:PORT/
        srv.requests              # [(time, method, path, headers)], in arrival order
        srv.connections           # TCP connections accepted

A route is a callable(handler) that writes a response; `page`, `status`, `raw`, `trickle`
and `reset_mid_body` build the common ones. Every handler thread stops when the server
stops (or after MAX_HANDLER_SECONDS), so no test can hang on a server.
"""
from __future__ import annotations

import http.server
import socket
import ssl
import struct
import threading
import time

MAX_HANDLER_SECONDS = 15.0


class _Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    timeout = MAX_HANDLER_SECONDS        # socket timeout: an idle client cannot hold a thread

    def log_message(self, *args):        # keep test output quiet
        pass

    def do_GET(self):
        srv = self.server.owner
        path = self.path.split("?", 1)[0] if srv.ignore_query else self.path
        with srv.lock:
            srv.requests.append((time.time(), "GET", self.path, dict(self.headers)))
        route = srv.routes.get(path) or srv.routes.get("*")
        if route is None:
            send(self, 404, b"not found", {"Content-Type": "text/plain"})
        else:
            route(self)

    do_HEAD = do_GET

    def do_POST(self):
        """A POST: its body is read and kept in `bodies` (path, body); routed like a GET."""
        srv = self.server.owner
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        with srv.lock:
            srv.requests.append((time.time(), "POST", self.path, dict(self.headers)))
            srv.bodies.append((self.path, body))
        route = srv.routes.get(self.path.split("?", 1)[0]) or srv.routes.get("*")
        if route is None:
            send(self, 404, b"not found", {"Content-Type": "text/plain"})
        else:
            route(self)


class _Server(http.server.ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False
    allow_reuse_address = True

    def handle_error(self, request, client_address):   # clients hanging up are expected
        pass

    def get_request(self):
        conn, addr = super().get_request()
        with self.owner.lock:
            self.owner.connections += 1
        if self.owner.tls is not None:
            conn = self.owner.tls.wrap_socket(conn, server_side=True)
        return conn, addr


class LocalServer:
    def __init__(self, routes: dict, host: str = "127.0.0.1", tls: ssl.SSLContext | None = None,
                 ignore_query: bool = False):
        assert host.startswith("127."), "test servers listen on loopback only"
        self.routes = routes
        self.tls = tls
        self.ignore_query = ignore_query
        self.lock = threading.Lock()
        self.requests: list = []
        self.bodies: list = []           # (path, body) of each POST
        self.connections = 0
        self.stopping = threading.Event()
        self._srv = _Server((host, 0), _Handler)
        self._srv.owner = self
        self.host, self.port = self._srv.server_address[:2]
        self._thread = threading.Thread(target=self._srv.serve_forever, kwargs={"poll_interval": 0.05},
                                        daemon=True)

    def url(self, path: str = "/", host: str | None = None) -> str:
        scheme = "https" if self.tls else "http"
        return f"{scheme}://{host or self.host}:{self.port}{path}"

    def paths(self) -> list[str]:
        with self.lock:
            return [r[2] for r in self.requests]

    def times(self, path: str | None = None) -> list[float]:
        with self.lock:
            return [r[0] for r in self.requests if path is None or r[2] == path]

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self.stopping.set()
        self._srv.shutdown()
        self._srv.server_close()
        self._thread.join(5)


# --------------------------------------------------------------------------- route builders

def send(h, code: int, body: bytes = b"", headers: dict | None = None) -> None:
    h.send_response(code)
    headers = dict(headers or {})
    headers.setdefault("Content-Length", str(len(body)))
    for k, v in headers.items():
        h.send_header(k, v)
    h.end_headers()
    if body and h.command != "HEAD":
        h.wfile.write(body)


def page(body: bytes, content_type: str = "text/html; charset=utf-8", headers: dict | None = None):
    def route(h):
        send(h, 200, body, {"Content-Type": content_type, **(headers or {})})
    return route


def status(code: int, body: bytes = b"", headers: dict | None = None):
    def route(h):
        send(h, code, body, headers)
    return route


def sequence(*routes):
    """Route that answers with the next route of `routes` each time (last one repeats)."""
    it = iter(routes)
    last = [routes[-1]]

    def route(h):
        r = next(it, last[0])
        r(h)
    return route


def trickle(prefix: bytes = b"<html>", every: float = 0.2, headers_too: bool = False):
    """200 whose body (or, with headers_too, whose status line) arrives one byte per `every`
    seconds, forever (until the client gives up or the server stops)."""
    def route(h):
        srv = h.server.owner
        start = time.monotonic()
        try:
            if headers_too:
                data = b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nX-Pad: " + b"a" * 10_000
            else:
                h.send_response(200)
                h.send_header("Content-Type", "text/html")
                h.send_header("Content-Length", "1000000")
                h.end_headers()
                h.wfile.flush()
                data = prefix + b"x" * 1_000_000
            for i in range(len(data)):
                if srv.stopping.is_set() or time.monotonic() - start > MAX_HANDLER_SECONDS:
                    break
                h.wfile.write(data[i:i + 1])
                h.wfile.flush()
                time.sleep(every)
        except OSError:
            pass
        h.close_connection = True
    return route


def reset_mid_body(sent: int = 1000, declared: int = 100_000):
    """Declares `declared` bytes, sends `sent`, then resets the connection (RST)."""
    def route(h):
        h.send_response(200)
        h.send_header("Content-Type", "text/html")
        h.send_header("Content-Length", str(declared))
        h.end_headers()
        h.wfile.write(b"<html>" + b"x" * (sent - 6))
        h.wfile.flush()
        time.sleep(0.05)
        h.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        h.connection.close()
        h.close_connection = True
    return route


def raw_body(body: bytes, headers: dict):
    """200 with `body` sent as-is under `headers` (e.g. a Content-Encoding)."""
    def route(h):
        send(h, 200, body, headers)
    return route


def streamed(total: int, chunk: int = 64 * 1024, content_type: str = "text/html"):
    """200 with a `total`-byte body generated on the fly (Content-Length set)."""
    def route(h):
        h.send_response(200)
        h.send_header("Content-Type", content_type)
        h.send_header("Content-Length", str(total))
        h.end_headers()
        sent = 0
        block = b"<p>" + b"y" * (chunk - 3)
        try:
            while sent < total:
                n = min(chunk, total - sent)
                h.wfile.write(block[:n])
                sent += n
        except OSError:
            pass
        h.close_connection = True
    return route


def hang(seconds: float = MAX_HANDLER_SECONDS):
    """Accepts the request and says nothing (until the server stops or `seconds` pass)."""
    def route(h):
        h.server.owner.stopping.wait(seconds)
        h.close_connection = True
    return route


def loopback_config(names: dict, **kw):
    """FetchConfig for tests: `names` maps invented host names to LocalServers (resolved to
    the server's loopback address via FetchConfig.resolve), loopback allowed, tiny delays."""
    from transforms.fetch.records import FetchConfig

    resolve = tuple((name, srv.port, srv.host) for name, srv in names.items())
    defaults = dict(delay_per_host=0.01, connect_timeout=2.0, read_timeout=2.0, deadline=5.0,
                    allow_loopback=True, resolve=resolve)
    defaults.update(kw)
    return FetchConfig(**defaults)


def self_signed_cert(tmpdir, hostname: str):
    """(certfile, keyfile) for `hostname`, made with the openssl CLI; None if unavailable."""
    import os
    import shutil
    import subprocess

    if shutil.which("openssl") is None:
        return None
    cert, key = os.path.join(tmpdir, "cert.pem"), os.path.join(tmpdir, "key.pem")
    try:
        subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", key,
                        "-out", cert, "-days", "2", "-subj", f"/CN={hostname}",
                        "-addext", f"subjectAltName=DNS:{hostname}"],
                       check=True, capture_output=True, timeout=30)
    except (subprocess.SubprocessError, OSError):
        return None
    return cert, key
