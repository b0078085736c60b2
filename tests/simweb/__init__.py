"""The simulated web: a deterministic, loopback-only web for tests, benchmarks and demos.

See tests/simweb/README.md. Main entry points::

    from tests.simweb import build_web, SimWebServer
    web = build_web("small", seed=1)      # model only, no sockets
    srv = SimWebServer(web).start()       # binds 127.77.x.y:PORT for every host
"""
from .clock import FileClock, RealClock, SimClock, set_file_clock
from .config import SimConfig, load_config
from .model import Response, SimWeb, build_web


def __getattr__(name):
    if name == "SimWebServer":
        from .server import SimWebServer
        return SimWebServer
    if name == "SimWebProcess":
        from .process import SimWebProcess
        return SimWebProcess
    raise AttributeError(name)


__all__ = ["build_web", "SimWeb", "SimWebServer", "SimWebProcess", "SimConfig", "load_config",
           "Response", "RealClock", "SimClock", "FileClock", "set_file_clock"]
