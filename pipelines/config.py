"""One frozen, typed config per round, built once from the effective settings.

The settings (flags > crawl.json defaults > built-in defaults; see pipelines.options) are a
flat dict of validated values. `RoundConfig.build` turns them into the typed objects each
step takes, so a step receives the part it needs and never a raw dict:

    generate     GenerateConfig   (transforms.generate)
    fetch        FetchConfig      (transforms.fetch.records) + fetch_threads, sitemaps,
                 progress_seconds
    scope        UrlFilter        (transforms.urls.scope)
    page         PageConfig       (transforms.page.fate)
    contentseen  ContentSeenConfig
    score        ScoreConfig      (the ordering strategy object and the PageRank path)
    warc_max_bytes  the WARC's rotation size (None when --store keeps no WARC)
    deepweb      ProbeConfig      (strategies.deepweb.planner), None with --deep_web off
    recrawl      RecrawlConfig    (--mode, the revisit policy object; strategies.recrawl)
    shard        ShardConfig (this fleet's shard and the host partitioner) or None
    refusals     {refusal key: signature} of the address guard and scope settings
                 (transforms.urls.refusals), stored with every refusal they decide

A setting that cannot become its typed object (a bad regex, CIDR, resolve entry or
strategy) raises ConfigError naming the flag, before anything is written.
"""
from __future__ import annotations

import dataclasses
import importlib.util
import re
from dataclasses import dataclass

from pipelines import focused, settings_deepweb
from strategies.deepweb.planner import ProbeConfig
from strategies.ordering import CRAWL_ORDERINGS, get_ordering, ordering_params
from strategies.recrawl import get_policy
from strategies.partition import get_partitioner
from transforms.fetch import netguard
from transforms.fetch import render as render_mod
from transforms.fetch.fetchproc import fetch_processes
from transforms.fetch.records import FetchConfig
from transforms.fetch.renderpolicy import RenderConfig
from transforms.page.fate import PageConfig
from transforms.page.formats import ParseLimits
from transforms.procs import AUTO
from transforms.urls import refusals as refusals_mod
from transforms.urls.scope import UrlFilter


class ConfigError(ValueError):
    """A setting's value is unusable; the message names the flag and what to do."""


def csv(value) -> tuple:
    """A comma-separated setting as a tuple of stripped items; '' or None gives ()."""
    if value is None:
        return ()
    if isinstance(value, (list, tuple)):
        return tuple(item for v in value for item in csv(v))
    return tuple(v.strip() for v in str(value).split(",") if v.strip())


@dataclass(frozen=True)
class GenerateConfig:
    max_pages: int
    max_per_host: int
    max_depth: int


@dataclass(frozen=True)
class ContentSeenConfig:
    expand_duplicates: bool
    near_threshold: float


@dataclass(frozen=True)
class RecrawlConfig:
    mode: str                   # batch | incremental | vertical
    refetch_share: float
    policy: object              # a strategies.recrawl.Policy
    expired_threshold: float
    round_interval: float       # seconds; the last gap between rounds replaces it
    explore: float = 0.0        # share of the budget spread uniformly (--refetch_explore)
    estimate: str = "improved"  # the rate estimate policies act on (--refetch_estimate)

    @property
    def incremental(self) -> bool:
        return self.mode == "incremental"


def recrawl(s) -> RecrawlConfig:
    """--mode and the revisit settings; the policy object built with --refetch_params."""
    params = {}
    for item in csv(s.get("refetch_params", "")):
        key, sep, value = item.partition("=")
        if not sep:
            raise ConfigError(f"--refetch_params: {item!r} is not KEY=VALUE")
        params[key.strip()] = _param_value(value.strip())
    try:
        policy = get_policy(s.get("refetch_policy", "optimal"), **params)
    except (ValueError, TypeError) as e:
        raise ConfigError(f"--refetch_policy {s.get('refetch_policy')}: {e}") from None
    return RecrawlConfig(s.get("mode", "batch"), float(s.get("refetch_share", 0.5)), policy,
                         float(s.get("expired_threshold", 0.5)), float(s.get("round_interval", 86400.0)),
                         float(s.get("refetch_explore", 0.0)), s.get("refetch_estimate", "bayes"))


@dataclass(frozen=True)
class ScoreConfig:
    ordering: object            # a strategies.ordering.Ordering
    pagerank_path: str          # memory | beam | auto
    pagerank_beam_edges: int
    pagerank_iterations: int


@dataclass(frozen=True)
class ShardConfig:
    index: int                  # this fleet's shard
    partitioner: object         # a strategies.partition.Partitioner


def _shard_numbers(flag, value):
    try:
        return tuple(int(v) for v in csv(value))
    except ValueError:
        raise ConfigError(f"--{flag} {value}: expected comma-separated shard numbers, e.g. 2 or 1,3") from None


def shard_config(s):
    """The fleet's ShardConfig; None for an unsharded crawl (one shard, none removed)."""
    num, index = int(s.get("num_shards") or 1), int(s.get("shard") or 0)
    removed = _shard_numbers("remove_shard", s.get("remove_shard"))
    if index >= num:
        raise ConfigError(f"--shard {index}: must be below --num_shards {num} (shards are numbered from 0)")
    if num == 1 and not removed:
        return None
    try:
        weights = tuple(float(w) for w in csv(s.get("shard_weights")))
    except ValueError:
        raise ConfigError(f"--shard_weights {s.get('shard_weights')}: expected comma-separated numbers") from None
    if weights and s.get("partition") == "hash_mod":
        raise ConfigError("--shard_weights: only --partition consistent takes weights; clear it or "
                          "use --partition consistent")
    try:
        part = get_partitioner(s.get("partition") or "consistent", num, removed=removed, weights=weights,
                               virtual_nodes=int(s.get("virtual_nodes") or 1000))
    except ValueError as e:
        flag = "--shard_weights" if "weight" in str(e) else "--remove_shard"
        raise ConfigError(f"{flag}: {e}") from None
    return ShardConfig(index, part)


def url_filter(s) -> UrlFilter:
    kwargs = dict(
        allow_hosts=tuple(h.lower() for h in csv(s["allow_hosts"])),
        allow_domains=tuple(d.lower() for d in csv(s["allow_domains"])),
        url_regex_allow=csv(s["url_regex_allow"]),
        url_regex_deny=csv(s["url_regex_deny"]),
        max_url_length=int(s["max_url_length"]),
        max_depth=int(s["max_depth"]) or None,
    )
    for flag in ("url_regex_allow", "url_regex_deny"):
        for pattern in kwargs[flag]:
            try:
                re.compile(pattern)
            except re.error as e:
                raise ConfigError(f"--{flag}: {pattern!r} is not a valid regular expression ({e})") from None
    if s.get("deny_extensions") is not None:
        kwargs["deny_extensions"] = tuple(e.lower().lstrip(".") for e in csv(s["deny_extensions"]))
    return UrlFilter(**kwargs)


def resolve_entries(s) -> tuple:
    """The resolver override: --resolve entries plus the lines of --resolve_file."""
    entries = list(csv(s["resolve"]))
    try:
        mapping = netguard.parse_resolve_entries(entries) if entries else {}
    except ValueError as e:
        raise ConfigError(f"--resolve: {e}; expected HOST:PORT:ADDR[,HOST:PORT:ADDR...]") from None
    if s.get("resolve_file"):
        try:
            mapping.update(netguard.read_resolve_file(s["resolve_file"]))
        except (OSError, ValueError) as e:
            raise ConfigError(f"--resolve_file {s['resolve_file']}: {e}") from None
    return tuple(sorted((h, p, a) for (h, p), a in mapping.items()))


def render_config(s) -> RenderConfig:
    """The --render settings."""
    cfg = RenderConfig(
        mode=s.get("render") or "none", hosts=tuple(h.lower() for h in csv(s.get("render_hosts") or "")),
        browser=s.get("render_browser") or "/usr/bin/chromium", pages=int(s.get("render_pages") or 2),
        recycle_after=int(s.get("render_recycle") or 200), seconds=float(s.get("render_seconds") or 20),
        memory_mb=int(s.get("render_memory_mb") or 1024),
        max_subrequests=int(s["render_subrequests"] if s.get("render_subrequests") is not None else 30),
        subrequest_hosts=tuple(h.lower() for h in csv(s.get("render_subrequest_hosts") or "")))
    return cfg


def check_render(cfg: RenderConfig) -> None:
    """Rendering on needs Playwright and the Chromium executable on this machine."""
    problem = render_mod.unavailable(cfg) if cfg.on else None
    if problem:
        raise ConfigError(f"--render {cfg.mode}: {problem}; or crawl without rendering (--render none)")


def check_http_client() -> None:
    """libcurl's binding must be installed: one line before the round starts, not an
    ImportError from a fetch process once it has begun (a partial install, or a platform
    without a pycurl wheel). Only looked up, not imported."""
    if importlib.util.find_spec("pycurl") is None:
        raise ConfigError("pycurl is not installed: beamcrawl sends every request with libcurl "
                          "through it; install requirements.txt (pip install -r requirements.txt)")


def fetch_config(s) -> FetchConfig:
    try:
        return FetchConfig(
            user_agent=s["user_agent"], delay_per_host=float(s["delay_per_host"]),
            connect_timeout=float(s["connect_timeout"]), read_timeout=float(s["read_timeout"]),
            deadline=float(s["deadline"]), max_body=int(s["max_body"]),
            max_redirects=int(s["max_redirects"]), max_crawl_delay=float(s["max_crawl_delay"]),
            robots_ttl=float(s["robots_ttl"]), obey_robots=bool(s["obey_robots"]),
            allow_loopback=bool(s["allow_loopback"]), deny_addresses=csv(s["deny_addresses"]),
            resolve=resolve_entries(s), conns_per_host=int(s["conns_per_host"]),
            render=render_config(s),
            post_hosts=settings_deepweb.parse_post_hosts(s.get("deep_web_post_hosts"))
            if s.get("deep_web", "off") == "forms" else (),
            dns_servers=csv(s["dns_servers"]), dns_max_ttl=float(s["dns_max_ttl"]),
            politeness_key=s["politeness_key"])
    except ConfigError:
        raise
    except ValueError as e:   # FetchConfig checks the user agent, the CIDRs, the name servers
        text = str(e)
        flag = ("--user_agent" if "agent" in text.lower() or "token" in text.lower()
                else "--dns_servers" if "--dns_servers" in text else "--deny_addresses")
        raise ConfigError(f"{flag}: {text}") from None


def _param_value(text):
    for cast in (int, float):
        try:
            return cast(text)
        except ValueError:
            pass
    return {"true": True, "false": False, "none": None}.get(text.lower(), text)


def ordering(s):
    """The strategy object named by --strategy, with its --strategy_params (and the settings
    named like its parameters: Shark-Search's --topic_decay, --anchor_beta, --shark_gamma)."""
    params = ordering_params(s["strategy"], s) if s["strategy"] in CRAWL_ORDERINGS else {}
    for item in csv(s["strategy_params"]):
        key, sep, value = item.partition("=")
        if not sep:
            raise ConfigError(f"--strategy_params: {item!r} is not KEY=VALUE")
        params[key.strip()] = _param_value(value.strip())
    if s["strategy"] not in CRAWL_ORDERINGS:
        raise ConfigError(f"--strategy {s['strategy']}: unknown ordering {s['strategy']!r}; "
                          f"a crawl can use {', '.join(CRAWL_ORDERINGS)}")
    try:
        return get_ordering(s["strategy"], **params)
    except (ValueError, TypeError) as e:
        raise ConfigError(f"--strategy {s['strategy']}: {e}") from None


def stores(s) -> tuple:
    """(pages table?, WARC?) from --store and its deprecated alias --store_pages."""
    store = s.get("store") or "warc"
    parquet, warc = store in ("parquet", "both"), store in ("warc", "both")
    if s.get("store_pages") is not None:
        parquet = bool(s["store_pages"])
    return parquet, warc


def refusal_signatures(fetch: FetchConfig, scope: UrlFilter) -> dict:
    """{refusal key: signature} of a round's guard and scope settings (urls.refusals)."""
    return refusals_mod.signatures(fetch.allow_loopback, fetch.deny_addresses, fetch.resolve, scope)


def settings_signatures(s) -> dict | None:
    """refusal_signatures of a flat settings dict (a round's options.json); None if unusable."""
    try:
        return refusal_signatures(fetch_config(s), url_filter(s))
    except (ConfigError, KeyError, TypeError, ValueError):
        return None


@dataclass(frozen=True)
class RoundConfig:
    round_no: int
    now: float
    generate: GenerateConfig
    fetch: FetchConfig
    fetch_threads: int
    sitemaps: bool
    scope: UrlFilter
    page: PageConfig
    contentseen: ContentSeenConfig
    score: ScoreConfig
    refusals: tuple = ()        # sorted (key, signature) pairs; see `signatures`
    warc_max_bytes: int | None = None   # WARC files rotate at this size; None: no WARC
    progress_seconds: float = 0.0       # fetch progress line period; 0: none
    max_buffer: int = 0         # vertical crawling: the frontier's bound (0 = none)
    deepweb: ProbeConfig | None = None  # --deep_web forms: how forms are probed
    recrawl: RecrawlConfig | None = None   # --mode and the revisit settings (issue #13)
    shard: ShardConfig | None = None    # a sharded crawl's shard and partitioner
    page_processes: int = 0     # worker processes for the page step (transforms.page.pool); AUTO
    fetch_processes: int = 0     # child processes the fetch threads run in (transforms.fetch.fetchproc); AUTO
    memory_mb: int = 1024               # --memory_mb: the round's memory budget (roundpipeline)

    @property
    def signatures(self) -> dict:
        return dict(self.refusals)

    @classmethod
    def build(cls, settings, round_no=0, now=0.0) -> "RoundConfig":
        s = settings
        if s["pagerank_path"] not in ("auto", "memory", "beam"):
            raise ConfigError(f"--pagerank_path must be auto, memory or beam, not {s['pagerank_path']!r}")
        scope = url_filter(s)
        fetch = fetch_config(s)
        check_render(fetch.render)
        check_http_client()
        sigs = refusal_signatures(fetch, scope)
        near = float(s["near_duplicates"] or 0)
        parquet, warc = stores(s)
        fetch = dataclasses.replace(fetch, keep_http=warc)
        order = ordering(s)
        limits = ParseLimits(seconds=float(s["parse_seconds"]), max_pages=int(s["parse_max_pages"]),
                             max_inflated=int(s["parse_max_inflated"]),
                             text_links=bool(s["text_links"]),
                             detect_language=bool(s["detect_language"]))
        try:
            focus = focused.focus_config(s, dataclasses.replace(fetch, keep_http=False), limits, order)
        except focused.TopicError as e:
            raise ConfigError(str(e)) from None
        return cls(
            round_no=round_no, now=now,
            generate=GenerateConfig(int(s["max_pages"]), int(s["max_per_host"]), int(s["max_depth"])),
            fetch=fetch, fetch_threads=int(s["fetch_threads"]), sitemaps=bool(s["sitemaps"]),
            # "auto": sized where the step runs, by its cores there (transforms.procs.AUTO)
            page_processes=(AUTO if s.get("page_processes", "auto") == "auto" else int(s["page_processes"])),
            fetch_processes=(AUTO if s.get("fetch_process", "auto") == "auto"
                             else fetch_processes(s["fetch_process"])),
            scope=scope,
            page=PageConfig(round_no=round_no, now=now, url_filter=scope,
                            max_retries=int(s["max_retries"]), retry_backoff=float(s["retry_backoff"]),
                            max_redirects=int(s["max_redirects"]),
                            honour_nofollow=bool(s["honour_nofollow"]),
                            ignore_meta_nofollow=bool(s["ignore_meta_nofollow"]),
                            ignore_meta_noindex=bool(s["ignore_meta_noindex"]),
                            store_pages=parquet, archive=warc, minhash=near > 0,
                            guard_signature=sigs[refusals_mod.GUARD],
                            documents=limits, focus=focus,
                            deep_web=s.get("deep_web", "off") == "forms"),
            contentseen=ContentSeenConfig(bool(s["expand_duplicates"]), near),
            score=ScoreConfig(order, s["pagerank_path"], int(s["pagerank_beam_edges"]),
                              int(s["pagerank_iterations"])),
            refusals=tuple(sorted(sigs.items())),
            warc_max_bytes=int(s.get("warc_max_bytes") or 1_000_000_000) if warc else None,
            progress_seconds=float(s.get("progress_seconds") or 0.0),
            max_buffer=int(s.get("max_buffer") or 0),
            deepweb=deepweb_config(s),
            recrawl=recrawl(s),
            shard=shard_config(s),
            memory_mb=int(s.get("memory_mb") or 1024),
        )


def deepweb_config(s) -> ProbeConfig | None:
    """The deep-web probing settings (--deep_web_*), None with --deep_web off."""
    if s.get("deep_web", "off") != "forms":
        return None
    return ProbeConfig(informative=float(s["deep_web_informative"]),
                       max_dimension=int(s["deep_web_max_dimension"]),
                       samples=int(s["deep_web_samples"]), budget=int(s["deep_web_budget"]),
                       words_per_round=int(s["deep_web_words_per_round"]),
                       seed_words=csv(s["deep_web_seed_words"]),
                       post_hosts=settings_deepweb.parse_post_hosts(s.get("deep_web_post_hosts")),
                       host_budgets=settings_deepweb.parse_host_budgets(s.get("deep_web_host_budgets")))
