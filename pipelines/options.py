"""Command-line options of the pipelines: one PipelineOptions subclass per entry point.

`--help` on any entry point lists every flag with its default. Round options given to
`inject` become the crawl's defaults (stored in crawl.json); a flag given to `round` or
`crawl` overrides them for that run only. Each round records the options it ran with in
its own `options.json`.
"""
import argparse
import time

from apache_beam.options.pipeline_options import PipelineOptions

DEFAULT_USER_AGENT = "beamcrawl/0.1 (+https://github.com/beamcrawl/beamcrawl)"


def _csv(value):
    """A comma-separated flag value as a tuple; '' gives ()."""
    if value is None:
        return ()
    if isinstance(value, (list, tuple)):
        out = []
        for v in value:
            out.extend(_csv(v))
        return tuple(out)
    return tuple(v.strip() for v in str(value).split(",") if v.strip())


def _bool(value):
    if isinstance(value, bool):
        return value
    v = str(value).strip().lower()
    if v in ("1", "true", "yes", "on"):
        return True
    if v in ("0", "false", "no", "off"):
        return False
    raise argparse.ArgumentTypeError(f"expected true/false, got {value!r}")


# name -> (type, default, help). The single list of round settings: the argparse flags,
# crawl.json defaults and options.json records are all built from it.
ROUND_SETTINGS = {
    # --- fetch list ---
    "max_pages": (int, 1000, "URLs fetched per round (the fetch list's size)."),
    "max_per_host": (int, 100, "At most this many URLs of one host per round."),
    "max_depth": (int, 0, "Do not queue links deeper than this many hops from a seed (0 = no limit)."),
    "strategy": (str, "bfs", "Ordering strategy that scores the frontier (see strategies/)."),
    "pagerank_path": (str, "auto", "Where graph strategies compute PageRank: 'memory' (numpy on one worker), "
                                   "'beam' (iterated CoGroupByKey steps, for graphs larger than a worker's "
                                   "memory) or 'auto' (beam above --pagerank_beam_edges known links)."),
    "pagerank_beam_edges": (int, 20_000_000, "Known links above which --pagerank_path=auto uses the Beam path."),
    "pagerank_iterations": (int, 30, "Power iterations of the Beam PageRank (its graph is static, so fixed)."),
    "strategy_params": (str, "", "Strategy parameters as KEY=VALUE[,KEY=VALUE...], e.g. 'x=2,y=1' for "
                                 "preference (I(P) = x*IB + y*IL) or 'damping=0.85,tol=1e-8' for partial_pagerank."),
    # --- scope and URL filter ---
    "allow_hosts": (str, "", "Comma-separated host names to stay on (empty = any)."),
    "allow_domains": (str, "", "Comma-separated domains: a host matches the domain or a subdomain."),
    "url_regex_allow": (str, "", "Comma-separated regexes; when set, a URL must match one."),
    "url_regex_deny": (str, "", "Comma-separated regexes; a URL matching one is filtered."),
    "deny_extensions": (str, None, "Comma-separated path extensions not to fetch "
                                   "(default: styles, scripts, fonts, media, archives, executables; '' = none)."),
    "max_url_length": (int, 2048, "Longer URLs are filtered."),
    "honour_nofollow": (_bool, True, "Skip links marked rel=nofollow."),
    "ignore_meta_nofollow": (_bool, False, "Extract links even from pages whose meta robots says nofollow (audits)."),
    "ignore_meta_noindex": (_bool, False, "Store pages even when meta robots / X-Robots-Tag says noindex (audits)."),
    # --- politeness and fetching ---
    "user_agent": (str, DEFAULT_USER_AGENT, "User-Agent header; its first token is matched against robots.txt groups."),
    "delay_per_host": (float, 1.0, "Seconds between two requests to one host (robots Crawl-delay may raise it)."),
    "max_crawl_delay": (float, 30.0, "Hosts whose Crawl-delay exceeds this are deferred and reported."),
    "connect_timeout": (float, 10.0, "TCP connect timeout, seconds."),
    "read_timeout": (float, 30.0, "Socket read timeout, seconds."),
    "deadline": (float, 60.0, "Whole-request deadline, seconds: a trickling server cannot hold a worker longer."),
    "max_body": (int, 10 * 1024 * 1024, "Body size cap in bytes (after decompression); longer bodies are truncated and flagged."),
    "max_redirects": (int, 5, "A URL reached through more redirect hops is recorded as too_many_redirects."),
    "max_retries": (int, 3, "Transient failures are retried in later rounds this many times, then recorded as failed."),
    "retry_backoff": (float, 60.0, "Base of the exponential backoff between retries, seconds."),
    "obey_robots": (_bool, True, "Obey robots.txt (RFC 9309)."),
    "robots_ttl": (float, 86400.0, "Seconds a host's robots.txt is cached across rounds."),
    "allow_loopback": (_bool, False, "Allow connecting to 127.0.0.0/8 and ::1 (tests, local use). Private, "
                                     "link-local and metadata addresses stay refused."),
    "deny_addresses": (str, "", "Comma-separated CIDR ranges never to connect to, on top of the defaults."),
    "resolve": (str, "", "Resolver override in curl syntax: HOST:PORT:ADDR[,HOST:PORT:ADDR...]."),
    "resolve_file": (str, "", "File with one HOST:PORT:ADDR per line (the simulated web writes one)."),
    "fetch_threads": (int, 32, "Hosts fetched concurrently per worker."),
    "store_pages": (_bool, True, "Store fetched bodies in the round's pages table."),
    "expand_duplicates": (_bool, False, "Extract links from pages whose content duplicates an earlier page (mirrors)."),
    "near_duplicates": (float, 0.9, "MinHash Jaccard threshold for near-duplicate pages (0 = off)."),
    "sitemaps": (_bool, True, "Read the sitemaps robots.txt lists (or /sitemap.xml) and queue their URLs."),
}


def add_round_flags(parser):
    for name, (typ, default, help_text) in ROUND_SETTINGS.items():
        try:
            parser.add_argument(f"--{name}", type=typ, default=default,
                                help=f"{help_text} (default: {default!r})")
        except argparse.ArgumentError:
            # Beam defines this flag itself (--user_agent, "a user agent string describing
            # the pipeline to external services"): share it; None means our default.
            pass


def explicit_flags(argv):
    """Names of the flags literally present on a command line."""
    names = set()
    for arg in argv or ():
        if arg.startswith("--"):
            names.add(arg[2:].split("=", 1)[0])
    return names


def effective_round_settings(options, argv, crawl_defaults):
    """Round settings: explicit flags > crawl.json defaults > built-in defaults."""
    given = explicit_flags(argv)
    values = options.get_all_options()
    out = {}
    for name, (_typ, default, _help) in ROUND_SETTINGS.items():
        if name in given and values.get(name) is not None:
            out[name] = values.get(name)
        elif name in crawl_defaults:
            out[name] = crawl_defaults[name]
        else:
            out[name] = default
    return out


class CrawlDirOptions(PipelineOptions):
    @classmethod
    def _add_argparse_args(cls, parser):
        # Not argparse-required: Beam parses every registered options class on any
        # PipelineOptions (tests included); the entry points check it via crawl_dir_of().
        parser.add_argument("--crawl_dir", default=None,
                            help="Crawl directory: a local path or any Beam filesystem (gs://, s3://, ...). Required.")


class RoundOptions(PipelineOptions):
    @classmethod
    def _add_argparse_args(cls, parser):
        add_round_flags(parser)
        parser.add_argument("--round_time", type=float, default=None,
                            help="The round's clock, epoch seconds (default: now). For replays and tests.")


class InjectOptions(PipelineOptions):
    @classmethod
    def _add_argparse_args(cls, parser):
        parser.add_argument("--seeds", default=None, help="File with one seed URL per line ('#' comments).")
        parser.add_argument("--seed", action="append", default=[], help="A seed URL (repeatable).")


class CrawlOptions(PipelineOptions):
    @classmethod
    def _add_argparse_args(cls, parser):
        parser.add_argument("--rounds", type=int, default=None, help="Run this many rounds.")
        parser.add_argument("--max_total_pages", type=int, default=None,
                            help="Stop once this many URLs have been visited in total.")
        parser.add_argument("--until_empty", action="store_true",
                            help="Run rounds until the frontier has nothing due.")


def crawl_dir_of(options):
    path = options.view_as(CrawlDirOptions).crawl_dir
    if not path:
        from pipelines.crawldir import CrawlStateError
        raise CrawlStateError("--crawl_dir is required (a local path or gs://, s3://, ... URL)")
    return path


def now_or(value):
    return time.time() if value is None else float(value)


def settings_csv(settings, name):
    return _csv(settings.get(name))
