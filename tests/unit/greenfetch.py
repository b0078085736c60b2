"""Tests of the host fetcher on every engine: `GreenHostFetcher` is a HostFetcher(green=True)
whose calls run as jobs of a GreenPool (as --fetch_engine loop runs them), driven from the
test's thread; `every_engine` parametrizes a test module over the three engines (the two
thread engines, curl and threads, differ in their config's `engine` only)."""
import functools

import pytest

from transforms.fetch.greenpool import GreenPool
from transforms.fetch.hostfetcher import HostFetcher


class GreenHostFetcher:
    def __init__(self, config, *args, **kw):
        self._pool = GreenPool(2)
        self._fetcher = HostFetcher(config, *args, green=True, **kw)

    def _call(self, fn, *args, **kw):
        return self._pool.submit(functools.partial(fn, *args, **kw)).result(timeout=120)

    def fetch_host(self, *args, **kw):
        return self._call(self._fetcher.fetch_host, *args, **kw)

    def close(self):
        try:
            self._call(self._fetcher.close)
        finally:
            self._pool.shutdown()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __getattr__(self, name):
        return getattr(self._fetcher, name)


def every_engine(module_globals):
    """An autouse fixture running each test of a module on libcurl, then urllib3 (threaded
    fetchers), then the green fetcher; the module's `loopback_config` gives configs of that
    engine (the fetch step's pool and the fetcher's sender follow it)."""
    @pytest.fixture(autouse=True, params=["curl", "threads", "loop"])
    def engine(request, monkeypatch):
        if request.param == "loop":
            monkeypatch.setitem(module_globals, "HostFetcher", GreenHostFetcher)
        config = module_globals.get("loopback_config")
        if config is not None:
            monkeypatch.setitem(module_globals, "loopback_config",
                                functools.partial(config, engine=request.param))
        return request.param
    return engine
