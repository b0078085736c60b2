"""A name server for the simulated web, on loopback UDP (tests only).

``SimDns({"site0.simweb.test": "127.77.0.1", ...}, ttl=3600).start()`` answers A queries
for its names with that TTL (NXDOMAIN for any other name, an empty answer for other types)
and logs every query it receives (``queries``: (time, name, type)); ``stall=True`` receives
queries and never answers (a resolver that hangs). ``address`` is ``127.0.0.1:PORT``, as
``--dns_servers`` takes it. Messages are read and written with dnspython.
"""
from __future__ import annotations

import socket
import threading
import time

import dns.message
import dns.rcode
import dns.rdataclass
import dns.rdatatype
import dns.rrset


class SimDns:
    def __init__(self, names: dict[str, str], ttl: int = 3600, stall: bool = False):
        self.names = {n.lower().rstrip("."): a for n, a in names.items()}
        self.ttl, self.stall = int(ttl), stall
        self.queries: list[tuple[float, str, str]] = []
        self.lock = threading.Lock()
        self._sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self._sock.bind(("127.0.0.1", 0))
        self._sock.settimeout(0.2)
        self.port = self._sock.getsockname()[1]
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, name="simdns", daemon=True)

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    @classmethod
    def for_hostmap(cls, path, **kw) -> "SimDns":
        """Names and addresses of a simulated web's host map (HOST:PORT:ADDR lines)."""
        names = {}
        for line in open(path, encoding="utf-8").read().splitlines():
            if line.strip():
                host, _port, addr = line.strip().rsplit(":", 2)
                names[host] = addr
        return cls(names, **kw)

    def start(self) -> "SimDns":
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(5)
        self._sock.close()

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()

    def counts(self) -> dict[str, int]:
        """Queries received per name."""
        out: dict[str, int] = {}
        with self.lock:
            for _t, name, _type in self.queries:
                out[name] = out.get(name, 0) + 1
        return out

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                data, peer = self._sock.recvfrom(4096)
            except (socket.timeout, OSError):
                continue
            try:
                query = dns.message.from_wire(data)
            except Exception:   # noqa: BLE001 - not a DNS message: nothing to answer
                continue
            q = query.question[0]
            name = q.name.to_text().lower().rstrip(".")
            with self.lock:
                self.queries.append((time.time(), name, dns.rdatatype.to_text(q.rdtype)))
            if self.stall:
                continue
            reply = dns.message.make_response(query)
            if name not in self.names:
                reply.set_rcode(dns.rcode.NXDOMAIN)
            elif q.rdtype == dns.rdatatype.A:
                reply.answer.append(dns.rrset.from_text(q.name, self.ttl, dns.rdataclass.IN,
                                                        dns.rdatatype.A, self.names[name]))
            self._sock.sendto(reply.to_wire(), peer)
