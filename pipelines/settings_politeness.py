"""The politeness settings (README "Politeness", docs/politeness.md), one definition each.

`pipelines.settings` builds them with its own `Setting` class and checks (passed in, as for
settings_deepweb.py: `python -m pipelines.settings` runs settings.py as __main__).
"""
from __future__ import annotations

POLITENESS_KEY_HELP = (
    "What shares one delay (--delay_per_host) and one connection budget (--conns_per_host) "
    "in a round, across fetch processes and workers: ip (the default: every host name on one "
    "server address, so 200 blogs of one shared server are fetched one request at a time, "
    "not 200 at once, as Heritrix and Nutch can queue by IP), domain (the hosts of one "
    "registrable domain, by the Public Suffix List) or host (each host name alone; a CDN "
    "address serves many unrelated sites, and ip fetches them one at a time too). "
    "robots.txt, Crawl-delay, --max_per_host and the hosts table stay per host.")


def settings(S, at_least, between, one_of, non_empty, parse_bool, default_user_agent):
    """The politeness group's settings, in README's order."""
    return [
        S("max_per_host", int, 100, "politeness", "At most this many URLs of one host per round.", at_least(1)),
        S("delay_per_host", float, 1.0, "politeness", "Seconds between two requests to one host, "
          "and to one server (--politeness_key); robots Crawl-delay raises it for its host.",
          at_least(0, " s")),
        S("max_crawl_delay", float, 30.0, "politeness", "Hosts whose robots Crawl-delay exceeds this "
          "many seconds are deferred and reported.", at_least(0, " s")),
        S("obey_robots", parse_bool, True, "politeness", "Obey robots.txt (RFC 9309)."),
        S("robots_ttl", float, 86400.0, "politeness", "Seconds a host's robots.txt is cached across "
          "rounds (in the hosts table). One unreachable (5xx, network) for 30 days is taken as "
          "its last copy reached (RFC 9309 2.3.1.4).", at_least(0, " s"), shown="86400 (24 h)"),
        S("user_agent", str, default_user_agent, "politeness",
          "User-Agent header; its product token (or the bot a 'Mozilla/5.0 (compatible; Bot/1.0)' "
          "one names) is matched against robots.txt groups.", non_empty),
        S("conns_per_host", int, 1, "politeness", "Connections to one host, and to one server "
          "(--politeness_key), at once (up to 8, for one's own sites); each keeps --delay_per_host "
          "between its requests; a robots Crawl-delay or a Retry-After forces 1 for its host.",
          between(1, 8)),
        S("politeness_key", str, "ip", "politeness", POLITENESS_KEY_HELP, one_of("ip", "domain", "host")),
    ]
