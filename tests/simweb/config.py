"""Configuration of a simulated web: presets ``small``/``medium``/``large`` or a JSON file.

Every field has a documented default; a JSON config names a ``base`` preset (default
``small``) and overrides fields, e.g. ``{"base": "medium", "n_hosts": 80, "hostile": true}``.
"""
from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass, field
from pathlib import Path


@dataclass
class SimConfig:
    name: str = "small"
    # --- scale -------------------------------------------------------------------------
    n_hosts: int = 3                  # regular hosts siteN.simweb.test
    n_pages: int = 90                 # pages (documents) over all regular hosts
    min_host_pages: int = 5           # every regular host has at least this many
    zipf_s: float = 1.0               # host sizes ~ 1 / rank**zipf_s
    # --- graph -------------------------------------------------------------------------
    mean_extra_links: float = 4.0     # extra (non-tree) links per HTML page, mean
    cross_host_share: float = 0.15    # share of extra links that go to another host
    popularity_alpha: float = 1.2     # Pareto shape of page popularity (power-law in-degree)
    max_depth: int = 15               # tree depth cap inside a host
    n_topics: int = 4                 # K topics, each with its own vocabulary
    host_topic_share: float = 0.75    # share of a host's pages in its main topic
    topic_homophily: float = 0.8      # P(extra link goes to a page of the same topic)
    nofollow_share: float = 0.05      # share of extra links with rel=nofollow
    nonhtml_share: float = 0.08       # pdf / images / .doc terminal documents
    query_page_share: float = 0.06    # pages whose URL has a query (?cat=..&id=..)
    redirect_share: float = 0.03      # legacy URLs answering 301 to a page
    frameset_share: float = 0.02
    refresh_share: float = 0.02       # pages with <meta http-equiv=refresh>
    base_href_share: float = 0.05     # pages with <base href>
    # encodings of HTML pages: utf8, gbk with meta, gbk header only, gbk undeclared, latin1
    encoding_shares: tuple = (0.72, 0.07, 0.07, 0.04, 0.10)
    gzip_host_share: float = 0.25     # hosts that gzip responses when the client accepts it
    # --- duplicates ----------------------------------------------------------------------
    n_mirrors: int = 1                # whole mirror hosts (mirrorN.simweb.test)
    near_dup_share: float = 0.03      # planted near-duplicates (copy + small edit)
    near_dup_pairs: int = 0           # > 0: plant exactly this many near-duplicates instead
                                      # (as many as the hosts' pages allow), each copying a
                                      # distinct original, so every planted pair is one pair
    # --- text --------------------------------------------------------------------------
    paragraphs: tuple = (2, 5)        # paragraphs of a page's text: lo <= k < hi (15-40 words each)
    # --- robots ---------------------------------------------------------------------------
    robots_variant_hosts: bool = True  # robots404/500/redirect/garbage/huge special hosts
    robots_variant_share: float = 0.0  # (medium/large) regular hosts given those variants too
    # --- change ----------------------------------------------------------------------------
    epoch: float = 1767225600.0       # 2026-01-01T00:00:00Z: the change processes start here
    sim_start: float = 1769904000.0   # 2026-02-01: simulated clock's default "now"
    news_rate_per_day: float = 24.0   # /news/ pages change about hourly
    base_rate_per_day: float = 0.1    # median rate of other pages (lognormal per host)
    static_share: float = 0.2         # pages that (practically) never change
    # --- deep web ------------------------------------------------------------------------
    deep_web: bool = True             # jobs.simweb.test, a search form over records
    n_records: int = 10000
    results_per_page: int = 10
    jobs_count: bool = True           # its result pages state the count ("N jobs found"); False: none
    template_pages: int = 0           # > 0: docs.simweb.test, a book of this many template pages
    similar_pairs: int = 0            # > 0: drafts.simweb.test, this many pairs of drafts that share
                                      # much text but are not near-duplicates (drafthost.py)
    similar_jaccard: tuple = (0.55, 0.75)   # word-bigram Jaccard of those pairs, spread evenly
    documents: bool = False           # files.simweb.test: PDF, Word, feeds, text (tests/simweb/documents.py)
    library: bool = False             # library.simweb.test: a second search form (tests/simweb/library.py)
    library_records: int = 12000      # books in its catalogue
    library_vocab: int = 5000         # its Zipf vocabulary (pseudo-words)
    library_zipf: float = 1.0         # Zipf exponent of the words of titles and blurbs
    library_per_page: int = 20
    library_max_results: int = 1000   # results of one query it lets you page through
    scripted: bool = False            # app/feed.simweb.test: links and text built by JavaScript (scripted.py)
    scripted_pages: int = 6           # pages besides / on each scripted host
    # --- hostile -------------------------------------------------------------------------
    hostile: bool = False
    trickle_seconds: int = 20         # trickle: this many body bytes at 1 byte/s, then close
    big_page_bytes: int = 10 * 1024 * 1024
    gzip_bomb_bytes: int = 1024 * 1024 * 1024   # decompressed size of the gzip bomb
    ratelimit_min_gap: float = 1.0    # ratelimit host: 429 when requests come faster
    flaky_period: int = 10            # flaky host: 503 for the first 3 of every period requests
    long_url_chars: int = 10000
    # --- serving ---------------------------------------------------------------------------
    port: int = 0                     # 0 = pick a free port at start
    addr_prefix: str = "127.77"       # hosts get 127.77.X.Y (X.Y from the host index)
    shared_hosts: int = 0             # the first N regular hosts share site0's address (one
                                      # shared-hosting server, many names: --politeness_key ip)
    hold_seconds: float = 0.0         # every response is held this long before it is sent (a
                                      # server's work), so requests in flight at once show in the log
    seed_hosts: int = 0               # seed URLs: roots of the first N regular hosts (0 = all)

    def to_json(self) -> str:
        return json.dumps(dataclasses.asdict(self), indent=1, sort_keys=True)


PRESETS: dict[str, dict] = {
    "small": {},
    "medium": dict(name="medium", n_hosts=40, n_pages=3000, mean_extra_links=6.0,
                   n_topics=6, n_mirrors=2, robots_variant_share=0.1, seed_hosts=5),
    "large": dict(name="large", n_hosts=1000, n_pages=100000, mean_extra_links=8.0,
                  n_topics=10, n_mirrors=10, min_host_pages=3, robots_variant_share=0.05,
                  seed_hosts=20, near_dup_share=0.01),
}
PRESETS["hostile"] = dict(name="hostile", hostile=True)
# Many near-duplicate pairs (a recall rate over hundreds of pairs), texts long enough that a
# copy's edit keeps word-bigram Jaccard well above 0.9; nothing changes while it is crawled.
# A few large hosts and ~100 links per page (issue #11: ordering on a web shaped like a
# real site crawl): 4 hosts of about 4 400 / 2 200 / 1 500 / 1 100 pages, nothing changes.
PRESETS["bighosts"] = dict(name="bighosts", n_hosts=4, n_pages=9000, mean_extra_links=100.0,
                           n_mirrors=0, robots_variant_hosts=False, deep_web=False,
                           near_dup_share=0.0, news_rate_per_day=0.0, base_rate_per_day=0.0)
# Shared hosting (issue #52): 10 of 12 hosts on one address, nothing changes.
PRESETS["shared"] = dict(name="shared", n_hosts=12, n_pages=180, shared_hosts=10, hold_seconds=0.02, n_mirrors=0,
                         robots_variant_hosts=False, deep_web=False, near_dup_share=0.0,
                         news_rate_per_day=0.0, base_rate_per_day=0.0)
PRESETS["neardup"] = dict(name="neardup", n_pages=700, near_dup_pairs=240, paragraphs=(5, 8),
                          n_mirrors=0, robots_variant_hosts=False, deep_web=False,
                          news_rate_per_day=0.0, base_rate_per_day=0.0)


def load_config(spec: "str | Path | SimConfig | dict" = "small", **overrides) -> SimConfig:
    """A preset name, a JSON file path, a dict of overrides or a SimConfig (copied)."""
    if isinstance(spec, SimConfig):
        cfg = dataclasses.replace(spec)
    elif isinstance(spec, dict):
        d = dict(spec)
        base = d.pop("base", "small")
        cfg = load_config(base)
        cfg = _apply(cfg, d)
    elif str(spec) in PRESETS:
        cfg = SimConfig()
        cfg = _apply(cfg, PRESETS[str(spec)])
    else:
        p = Path(spec)
        if not p.exists():
            raise ValueError(f"unknown simweb config {spec!r}: not a preset "
                             f"({', '.join(PRESETS)}) and no such file")
        d = json.loads(p.read_text())
        d.setdefault("name", p.stem)
        return load_config(d, **overrides)
    return _apply(cfg, {k: v for k, v in overrides.items() if v is not None})


def _apply(cfg: SimConfig, d: dict) -> SimConfig:
    names = {f.name for f in dataclasses.fields(SimConfig)}
    bad = set(d) - names
    if bad:
        raise ValueError(f"unknown simweb config fields: {sorted(bad)}")
    d = {k: (tuple(v) if isinstance(v, list) else v) for k, v in d.items()}
    return dataclasses.replace(cfg, **d)
