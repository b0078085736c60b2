"""POST requests of the deep web (`--deep_web_post_hosts`): who may get one, and what is
retried (pure; used by hostfetcher).

A POST form submission is not idempotent: sending it twice may file two orders, two
messages, two suggestions. So a POST is

- sent only to a host listed in `FetchConfig.post_hosts` (host, or host:port for one
  port), whatever the frontier holds: a frontier row of a host taken off the list ends
  as FAILED `post_not_allowed`, without a request;
- sent on a new connection (the pool is emptied first), so a failure to connect is
  known to have sent nothing, and a keep-alive connection the server closed meanwhile
  cannot swallow the body;
- retried (in a later round, like any transient failure) only when nothing was sent:
  the failures before the connection was up (`PRE_SEND`) and the fetcher's own refusals
  to start a request (host parked, paused, over its budget, robots.txt unavailable). Any
  failure after the request went out (a read timeout, a reset, a 5xx, a 429/503 with
  Retry-After, the deadline) ends it as FAILED "<reason> (POST not retried)": the server
  may have acted on it;
- never rendered (a browser would load the URL with a GET).
"""
from __future__ import annotations

from schemas.tables import FAILED
from transforms.fetch.records import TRANSIENT
from transforms.urls.request import FORM_ENCODED, POST, is_post

# failures that happen before the request is written: nothing reached the server
PRE_SEND = frozenset({"dns", "connect_refused", "timeout_connect", "connect_error"})


def allowed(post_hosts, host: str, port: int) -> bool:
    """Is a POST to host:port allowed by --deep_web_post_hosts (host, or host:port)?"""
    h = host.lower()
    return h in post_hosts or f"{h}:{port}" in post_hosts


def headers() -> dict:
    return {"Content-Type": FORM_ENCODED}


def settle(res):
    """A POST's result as the crawl keeps it: a transient failure after the request was sent
    becomes final (FAILED), so the POST is never sent again."""
    if res.outcome == TRANSIENT and res.reason not in PRE_SEND:
        res.outcome = FAILED
        res.reason = f"{res.reason} (POST not retried)"
        res.retry_after = None
    return res


__all__ = ["POST", "PRE_SEND", "allowed", "headers", "is_post", "settle"]
