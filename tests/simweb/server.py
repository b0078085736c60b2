"""HTTP/1.1 server for a SimWeb: one asyncio event loop, one listening socket per host
address (all in 127.0.0.0/8), the same port on every address.

``SimWebServer(web).start()`` runs the loop in a background thread (in-process use);
``serve_forever`` runs it in the calling thread (the ``serve`` CLI).
"""
from __future__ import annotations

import asyncio
import errno
import ipaddress
import json
import random
import socket
import struct
import threading
import time
from pathlib import Path

from .clock import RealClock
from .model import SimWeb

LOGGED_HEADERS = {"user-agent": "User-Agent", "if-none-match": "If-None-Match",
                  "if-modified-since": "If-Modified-Since", "accept-encoding": "Accept-Encoding",
                  "content-type": "Content-Type"}
MAX_HEAD = 64 * 1024
POST_KINDS = ("library",)   # hosts whose forms answer POST (library.py); others: 405
_REASONS = {200: "OK", 301: "Moved Permanently", 302: "Found", 304: "Not Modified",
            400: "Bad Request", 404: "Not Found", 405: "Method Not Allowed",
            429: "Too Many Requests", 431: "Request Header Fields Too Large",
            500: "Internal Server Error", 503: "Service Unavailable"}


def _check_loopback(addr: str) -> None:
    if not ipaddress.ip_address(addr) in ipaddress.ip_network("127.0.0.0/8"):
        raise ValueError(f"simweb refuses to bind {addr}: only 127.0.0.0/8 is allowed")


class RequestLog:
    """Appends one JSON object per request to a file (flushed per request) and keeps them
    in memory (``records``) for in-process tests."""

    def __init__(self, path: "Path | None", keep: int = 200_000):
        self.path = Path(path) if path else None
        self._f = open(self.path, "a", encoding="utf-8") if self.path else None
        self.records: list[dict] = []
        self.keep = keep

    def write(self, rec: dict) -> None:
        if len(self.records) < self.keep:
            self.records.append(rec)
        if self._f:
            self._f.write(json.dumps(rec, ensure_ascii=False) + "\n")
            self._f.flush()

    def close(self):
        if self._f:
            self._f.close()
            self._f = None


class _Conn(asyncio.Protocol):
    def __init__(self, srv: "SimWebServer"):
        self.srv = srv
        self.buf = b""
        self.busy = False
        self.t = None
        self.local = None

    def connection_made(self, transport):
        self.t = transport
        self.lost = asyncio.Event()      # set when the client goes away (ends a trickle at once)
        sn = transport.get_extra_info("sockname")
        self.local = sn[0] if sn else None
        self.srv._conns.add(self)

    def connection_lost(self, exc):
        self.srv._conns.discard(self)
        self.t = None
        self.lost.set()

    def data_received(self, data):
        self.buf += data
        if len(self.buf) > MAX_HEAD and b"\r\n\r\n" not in self.buf[:MAX_HEAD + 4]:
            self._raw_error(431)
            return
        self._process()

    def _raw_error(self, status):
        if self.t:
            body = _REASONS.get(status, "error").encode()
            self.t.write(b"HTTP/1.1 %d %s\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s"
                         % (status, body, len(body), body))
            self.t.close()

    def _process(self):
        while not self.busy and self.t is not None:
            idx = self.buf.find(b"\r\n\r\n")
            if idx < 0:
                return
            head = self.buf[:idx].decode("latin-1")
            self.buf = self.buf[idx + 4:]
            start = time.time()
            lines = head.split("\r\n")
            try:
                method, target, version = lines[0].split(" ", 2)
            except ValueError:
                self._raw_error(400)
                return
            hdrs = {}
            for ln in lines[1:]:
                k, sep, v = ln.partition(":")
                if sep:
                    hdrs[k.strip().lower()] = v.strip()
            try:
                clen = int(hdrs.get("content-length", "0") or 0)
            except ValueError:
                clen = 0
            body = b""
            if clen:
                if len(self.buf) < clen:   # wait for the whole body (a POST's: the library's forms)
                    self.buf = head.encode("latin-1") + b"\r\n\r\n" + self.buf
                    return
                body, self.buf = self.buf[:clen], self.buf[clen:]
            close = hdrs.get("connection", "").lower() == "close" or version == "HTTP/1.0"
            self.srv._handle(self, method, target, hdrs, close, start, body)

    # ------------------------------------------------------------------ writing
    def send(self, status, headers, body, close, head_only=False):
        out = [f"HTTP/1.1 {status} {_REASONS.get(status, 'Status')}"]
        has_len = False
        for k, v in headers:
            if k == "Content-Length":
                has_len = True
            out.append(f"{k}: {v}")
        if not has_len and status != 304:
            out.append(f"Content-Length: {len(body)}")
        if close:
            out.append("Connection: close")
        data = ("\r\n".join(out) + "\r\n\r\n").encode("latin-1")
        if not head_only and status != 304:
            data += body
        self.t.write(data)
        if close:
            self.t.close()


class SimWebServer:
    """Serve ``web`` on its host addresses. ``start()``/``stop()`` (background thread)."""

    def __init__(self, web: SimWeb, log_path=None, port: "int | None" = None,
                 keep_requests: int = 200_000):
        """``keep_requests``: how many log records ``requests`` keeps in memory."""
        self.web = web
        self.log = RequestLog(log_path, keep=keep_requests)
        self.port = web.port if port is None else port
        self.loop: asyncio.AbstractEventLoop | None = None
        self._thread = None
        self._servers = []
        self._socks = []
        self._conns = set()
        self._tasks = set()
        self._ready = threading.Event()
        self._stopped = threading.Event()
        self._error = None
        self.sim = not isinstance(web.clock, RealClock)

    # ------------------------------------------------------------------ sockets
    def _bind_all(self) -> int:
        addrs = list(dict.fromkeys(h.addr for h in self.web.hosts))   # (shared hosting: one socket)
        for a in addrs:
            _check_loopback(a)
        rnd = random.Random()
        for attempt in range(50):
            port = self.port
            if not port:
                s = socket.socket()
                s.bind((addrs[0], 0))
                port = s.getsockname()[1]
                s.close()
                if attempt > 0:
                    port = rnd.randrange(20000, 60000)
            socks = []
            try:
                for a in addrs:
                    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
                    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                    socks.append(s)
                    s.bind((a, port))
                    s.listen(1024)
                    s.setblocking(False)
            except OSError as e:
                for s in socks:
                    s.close()
                if e.errno == errno.EADDRINUSE and not self.port:
                    continue
                raise
            self._socks = socks
            return port
        raise OSError("simweb: no free port on all host addresses after 50 attempts")

    async def _start_servers(self):
        for s in self._socks:
            srv = await self.loop.create_server(lambda: _Conn(self), sock=s, backlog=1024)
            self._servers.append(srv)

    def _prepare(self):
        port = self._bind_all()
        self.port = port
        self.web.port = port

    def start(self, timeout: float = 60.0) -> "SimWebServer":
        self._prepare()
        self._thread = threading.Thread(target=self._run, name="simweb", daemon=True)
        self._thread.start()
        if not self._ready.wait(timeout):
            raise RuntimeError("simweb server did not start")
        if self._error:
            raise self._error
        return self

    def _run(self):
        self.loop = asyncio.new_event_loop()
        asyncio.set_event_loop(self.loop)
        try:
            self.loop.run_until_complete(self._start_servers())
        except Exception as e:  # pragma: no cover
            self._error = e
            self._ready.set()
            return
        self._ready.set()
        try:
            self.loop.run_forever()
        finally:
            self._shutdown_sync()

    def serve_forever(self, on_ready=None):
        """Run in the calling thread until ``stop()`` (or a signal handler calls it)."""
        self._prepare()
        self.loop = asyncio.new_event_loop()
        asyncio.set_event_loop(self.loop)
        self.loop.run_until_complete(self._start_servers())
        self._ready.set()
        if on_ready:
            on_ready(self)
        try:
            self.loop.run_forever()
        finally:
            self._shutdown_sync()

    def _shutdown_sync(self):
        for srv in self._servers:
            srv.close()
        for c in list(self._conns):
            if c.t:
                c.t.abort()
        for t in list(self._tasks):
            t.cancel()
        try:
            self.loop.run_until_complete(asyncio.sleep(0))
        except Exception:
            pass
        self.loop.close()
        self.log.close()
        self._stopped.set()

    def stop(self, timeout: float = 10.0):
        if self.loop and not self.loop.is_closed():
            try:
                self.loop.call_soon_threadsafe(self.loop.stop)
            except RuntimeError:
                pass
        if self._thread:
            self._thread.join(timeout)
        for s in self._socks:
            try:
                s.close()
            except OSError:
                pass

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()

    # ------------------------------------------------------------------ hostmap
    @property
    def hostmap_lines(self) -> list[str]:
        return self.web.hostmap_lines()

    def write_hostmap(self, path) -> Path:
        path = Path(path)
        tmp = path.with_name(path.name + ".tmp")
        tmp.write_text("\n".join(self.hostmap_lines) + "\n")
        tmp.replace(path)
        return path

    @property
    def requests(self) -> list[dict]:
        return self.log.records

    # ------------------------------------------------------------------ handling
    def _handle(self, conn: _Conn, method, target, hdrs, close, start, body=b""):
        web = self.web
        host = web.host_for(hdrs.get("host"), conn.local)
        status = 0
        nbytes = 0
        if host is None:
            self._log(conn, host, method, target, hdrs, 404, start, 12)
            conn.send(404, [("Content-Type", "text/plain")], b"unknown host", close)
            return
        elif method == "POST" and host.kind in POST_KINDS:
            r = web.respond(host, target, hdrs, method, body=body)
            self._log(conn, host, method, target, hdrs, r.status, start, len(r.body), body)
            conn.send(r.status, r.headers, r.body, close)
            return
        elif method not in ("GET", "HEAD"):
            self._log(conn, host, method, target, hdrs, 405, start, 18)
            conn.send(405, [("Allow", "GET, HEAD")], b"method not allowed", close)
            return
        else:
            try:
                r = web.respond(host, target, hdrs, method)
            except Exception as e:  # a bug must not kill the server: answer 500 and log it
                import traceback
                traceback.print_exc()
                r = web._simple(500, f"simweb error: {e!r}".encode())
            status = r.status
            if r.action is None and web.cfg.hold_seconds > 0:
                r.action = ("hold", web.cfg.hold_seconds)   # the server's work on it
            if r.action is not None:
                conn.busy = True
                task = self.loop.create_task(self._action(conn, r, method, target, hdrs, host, start))
                self._tasks.add(task)
                task.add_done_callback(self._tasks.discard)
                return
            # log first (the response is complete in memory), so a client that got the
            # response always finds its request in the log
            nbytes = 0 if method == "HEAD" or r.status == 304 else len(r.body)
            self._log(conn, host, method, target, hdrs, status, start, nbytes)
            conn.send(r.status, r.headers, r.body, close, head_only=(method == "HEAD"))

    def _log(self, conn, host, method, target, hdrs, status, start, nbytes, body=None, end=None):
        rec = {
            "host": host.name if host else (hdrs.get("host") or ""),
            "path": target,
            "method": method,
            "status": status,
            "start": start,
            "end": time.time() if end is None else end,
            "headers": {name: hdrs[k] for k, name in LOGGED_HEADERS.items() if k in hdrs},
            "addr": conn.local,
            "bytes": nbytes,
        }
        if body is not None:       # a POST's body (the library's forms)
            rec["body"] = body.decode("latin-1")[:4000]
        if self.sim:
            rec["sim_time"] = self.web.clock()
        self.log.write(rec)

    async def _action(self, conn: _Conn, r, method, target, hdrs, host, start):
        kind = r.action[0]
        sent = 0
        end = None   # when a whole response was handed to the socket (before the loop moves on)
        try:
            if kind == "trickle":
                body, interval = r.action[1], r.action[2]
                conn.send(r.status, r.headers, b"", False)
                for k in range(len(body)):
                    try:     # the log's end is when the client hung up, not the next tick
                        await asyncio.wait_for(conn.lost.wait(), interval)
                    except asyncio.TimeoutError:
                        pass
                    if conn.t is None:
                        break
                    conn.t.write(body[k:k + 1])
                    sent += 1
                if conn.t:
                    conn.t.close()
            elif kind == "reset":
                conn.send(r.status, r.headers, r.action[1], False)
                sent = len(r.action[1])
                await asyncio.sleep(0.05)
                if conn.t:
                    sock = conn.t.get_extra_info("socket")
                    if sock is not None:
                        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                    conn.t.abort()
            elif kind == "hold":
                await asyncio.sleep(r.action[1])
                if conn.t:
                    end = time.time()
                    conn.send(r.status, r.headers, r.body, False, head_only=(method == "HEAD"))
                    sent = 0 if method == "HEAD" or r.status == 304 else len(r.body)
                    conn.busy = False
                    conn._process()
            elif kind == "bomb":
                from .hostile import bomb_body
                body = await self.loop.run_in_executor(None, bomb_body, r.action[1])
                if conn.t:
                    end = time.time()
                    conn.send(r.status, r.headers, body, False, head_only=(method == "HEAD"))
                    sent = len(body)
                    conn.busy = False
                    conn._process()
        except Exception:  # pragma: no cover
            if conn.t:
                conn.t.abort()
        finally:
            # a held response's end is stamped as it is sent: logged after the next request
            # was taken up, a loaded event loop would stamp it late (and a gap look short)
            self._log(conn, host, method, target, hdrs, r.status, start, sent, end=end)
