"""Every setting of the crawler, defined once.

Each `Setting` (name, type, default, group, help, check) generates the argparse flags and
`--help` of every entry point (pipelines.cli), the round defaults stored in crawl.json,
each round's options.json, and README's defaults table:

    python -m pipelines.settings --markdown      # the table between README's markers

Round settings resolve as: flag given now > crawl.json `round_defaults` > the default here.
Checks here are the per-value ones (ranges, non-empty); what needs the value built into an
object (regexes, CIDRs, --resolve, the strategy) is checked by pipelines.config.RoundConfig.
Nothing here imports Beam, so entry points can configure logging before Beam loads.
"""
from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from dataclasses import dataclass

from pipelines import settings_deepweb, settings_politeness

DEFAULT_USER_AGENT = "beamcrawl/0.1 (+https://github.com/beamcrawl/beamcrawl)"
GROUPS = {
    "scope": "which URLs the crawl may queue",
    "politeness": "how hard one host is hit, and robots.txt",
    "fetching": "timeouts, limits and where connections may go",
    "ordering": "what the next round fetches first",
    "duplicates": "exact and near-duplicate pages",
    "documents": "which formats are parsed, and each document's parsing budget",
    "storage": "what the round tables keep",
    "vertical": "topic-focused crawling: the topic, its relevance and the focused strategies",
    "deepweb": "filling forms to reach records behind them (ISIT templates, keyword probing)",
    "recrawl": "batch, incremental or vertical crawling (--mode); revisits, change estimation, freshness",
    "sharding": "several crawler fleets, each owning a share of the hosts (docs/scale-out.md)",
    "runner": "the round's clock; Beam's own flags (--runner, --direct_num_workers, "
              "--direct_running_mode, --job_endpoint, --environment_type, ...) pass through to Beam",
}


class UsageError(Exception):
    """A command line or setting value that cannot be used; the message names it."""


def parse_bool(value):
    """true/false, yes/no, on/off, 1/0 (any case) as a bool."""
    if isinstance(value, bool):
        return value
    v = str(value).strip().lower()
    if v in ("1", "true", "yes", "on"):
        return True
    if v in ("0", "false", "no", "off"):
        return False
    raise argparse.ArgumentTypeError(f"expected true or false, got {value!r}")


parse_bool.__name__ = "true/false"   # argparse names the type in its messages


def at_least(low, unit=""):
    def check(v):
        return None if v >= low else f"must be at least {low}{unit}"
    return check


def between(low, high):
    def check(v):
        return None if low <= v <= high else f"must be between {low} and {high}"
    return check


def one_of(*choices):
    def check(v):
        return None if v in choices else f"must be one of {', '.join(choices)}"
    return check


def non_empty(v):
    return None if str(v).strip() else "must not be empty"


def crawl_strategy(v):
    if v == "omniscient":
        from strategies.ordering import CRAWL_ORDERINGS
        return ("is for pipelines.evaluate only (it needs the true PageRank); a crawl can use "
                + ", ".join(CRAWL_ORDERINGS))
    return None   # an unknown name is refused by RoundConfig.build (it lists the known ones)


@dataclass(frozen=True)
class Setting:
    name: str
    type: Callable
    default: object
    group: str
    help: str
    check: Callable | None = None   # value -> problem text or None
    shown: str | None = None        # the default as README and --help print it

    @property
    def flag(self):
        return f"--{self.name}"

    def default_text(self):
        if self.shown is not None:
            return self.shown
        if isinstance(self.default, bool):
            return str(self.default).lower()
        return "''" if self.default == "" else str(self.default)

    def coerce(self, value, origin=""):
        """`value` (typed, or text from a flag or crawl.json) checked and typed."""
        where = f" (from {origin})" if origin else ""
        text = value if isinstance(value, str) and value.strip() and " " not in value else repr(value)
        if value is None and self.default is None:
            return None
        try:
            typed = self.type(value)
        except (TypeError, ValueError, argparse.ArgumentTypeError):
            kind = {int: "a whole number", float: "a number"}.get(self.type, "true or false"
                                                                   if self.type is parse_bool else "text")
            raise UsageError(f"{self.flag} {text}{where}: expected {kind}; "
                             f"see --help for its meaning") from None
        problem = self.check(typed) if self.check else None
        if problem:
            raise UsageError(f"{self.flag} {text}{where}: {problem}")
        return typed


S = Setting
ROUND_SETTINGS = {s.name: s for s in [
    # --- scope ---
    S("allow_hosts", str, "", "scope", "Comma-separated host names to stay on (empty = any)."),
    S("allow_domains", str, "", "scope", "Comma-separated domains: a host matches the domain or a subdomain."),
    S("url_regex_allow", str, "", "scope", "Comma-separated regexes; when set, a URL must match one."),
    S("url_regex_deny", str, "", "scope", "Comma-separated regexes; a URL matching one is filtered."),
    S("deny_extensions", str, None, "scope", "Comma-separated path extensions not to fetch; '' = none.",
      shown="styles, scripts, fonts, media, archives, executables"),
    S("max_url_length", int, 2048, "scope", "Longer URLs are filtered (`url_too_long`).", at_least(1)),
    S("max_depth", int, 0, "scope", "Links deeper than this many hops from a seed are filtered "
      "(`depth`); 0 = no limit.", at_least(0)),
    S("honour_nofollow", parse_bool, True, "scope", "Skip links marked rel=nofollow."),
    S("ignore_meta_nofollow", parse_bool, False, "scope",
      "Extract links even from pages whose meta robots says nofollow (audits)."),
    S("sitemaps", parse_bool, True, "scope", "Read the sitemaps robots.txt lists (else /sitemap.xml) "
      "and queue their URLs with lastmod."),
    # --- politeness (pipelines/settings_politeness.py) ---
    *settings_politeness.settings(S, at_least, between, one_of, non_empty, parse_bool,
                                  DEFAULT_USER_AGENT),
    # --- fetching ---
    S("connect_timeout", float, 10.0, "fetching", "TCP connect timeout, seconds.", at_least(0.001, " s")),
    S("read_timeout", float, 30.0, "fetching", "Socket read timeout, seconds.", at_least(0.001, " s")),
    S("deadline", float, 60.0, "fetching", "Whole-request deadline, seconds: a trickling server "
      "cannot hold a worker longer.", at_least(0.001, " s")),
    S("max_body", int, 10 * 1024 * 1024, "fetching", "Body cap in bytes after decompression; "
      "longer bodies are truncated and flagged.", at_least(1, " byte"), shown="10485760 (10 MiB)"),
    S("max_redirects", int, 5, "fetching", "A URL reached through more redirect hops is recorded "
      "as too_many_redirects.", at_least(0)),
    S("max_retries", int, 3, "fetching", "Transient failures are retried in later rounds this "
      "many times, then recorded as failed.", at_least(0)),
    S("retry_backoff", float, 60.0, "fetching", "Seconds before the first retry; the k-th waits "
      "this × 2^k.", at_least(0, " s")),
    S("fetch_threads", int, 32, "fetching", "Hosts fetched concurrently per worker.", at_least(1)),
    S("page_processes", str, "auto", "fetching", "Processes parsing a worker's pages beside its fetch "
      "threads (rounds planning 256 pages or more); auto = cores - 1, 0 = parse in the fetching process.",
      lambda v: None if v == "auto" or v.isdigit() else "must be auto or a whole number ≥ 0"),
    S("fetch_process", str, "auto", "fetching", "Processes fetching beside the round's, the hosts divided "
      "among them (rounds of 256+ URLs; not with --render); true = 1, false = 0; auto = 2 where there "
      "are 2+ cores.", lambda v: None if v in ("auto", "true", "false") or v.isdigit()
      else "must be auto, true, false or a whole number ≥ 0"),
    S("progress_seconds", float, 5.0, "fetching", "While a round fetches, a progress line on "
      "stderr every this many seconds (a live bar where stderr is a terminal); 0 = none.",
      at_least(0, " s")),
    S("allow_loopback", parse_bool, False, "fetching", "Allow connecting to 127.0.0.0/8 and ::1 "
      "(tests, local use); private, link-local and metadata addresses stay refused."),
    S("deny_addresses", str, "", "fetching", "Comma-separated CIDR ranges never to connect to, "
      "on top of the built-in ones."),
    S("resolve", str, "", "fetching", "Resolver override in curl syntax: HOST:PORT:ADDR[,HOST:PORT:ADDR...]."),
    S("resolve_file", str, "", "fetching", "File with one HOST:PORT:ADDR per line "
      "(the simulated web writes one)."),
    S("dns_servers", str, "", "fetching", "Comma-separated name servers (ADDR or ADDR:PORT) the "
      "crawler asks; '' = the system's (/etc/hosts, then /etc/resolv.conf's servers)."),
    S("dns_max_ttl", float, 21600.0, "fetching", "A host's DNS answer is reused across rounds "
      "(hosts table) for its TTL, at most this many seconds (0: looked up every round); again "
      "after a failed connection. A lookup counts inside --deadline.", at_least(0, " s"),
      shown="21600 (6 h)"),
    # --- rendering JavaScript pages (transforms/fetch/render.py, #19) ---
    S("render", str, "none", "fetching", "Render HTML pages in headless Chromium before parsing: "
      "none, auto (pages whose static HTML looks script-built, and every page of a host where "
      "rendering found more) or always (every HTML page of --render_hosts; of every host if "
      "that is empty).", one_of("none", "auto", "always")),
    S("render_hosts", str, "", "fetching", "Comma-separated hosts (host, or host:port for one "
      "port) whose every HTML page is rendered when --render is not none."),
    S("render_browser", str, "/usr/bin/chromium", "fetching", "The Chromium executable rendering "
      "drives (Debian's chromium package; never downloaded).", non_empty),
    S("render_pages", int, 2, "fetching", "Pages rendered at once per worker.", at_least(1)),
    S("render_recycle", int, 200, "fetching", "The browser is restarted after this many pages "
      "(and after a crash).", at_least(1)),
    S("render_seconds", float, 20.0, "fetching", "Deadline of one page's rendering: load, scripts "
      "and their sub-requests (which keep --delay_per_host).", at_least(1, " s")),
    S("render_memory_mb", int, 1024, "fetching", "The browser is restarted when its processes hold "
      "more than this many MiB resident.", at_least(128, " MiB")),
    S("render_subrequests", int, 30, "fetching", "Requests (scripts, XHR, fetch()) one rendered page "
      "may make; images, styles, frames and navigations are never requested.", at_least(0)),
    S("render_subrequest_hosts", str, "", "fetching", "Comma-separated other hosts (host or "
      "host:port, e.g. a CDN) a rendered page's scripts may be loaded from, with their own "
      "robots.txt and --delay_per_host (per worker); requests to any other host are refused."),
    # --- ordering ---
    S("max_pages", int, 1000, "ordering", "URLs fetched per round (the fetch list's size).", at_least(1)),
    S("round_growth", float, 0.1, "ordering", "A round fetches max(--max_pages, this share of the "
      "pages downloaded so far), at most --max_round_pages: the crawl-DB work a page costs stays "
      "flat as the crawl grows, the round's memory grows with it (0: every round --max_pages; "
      "pipelines/roundsize.py).", between(0.0, 1.0)),
    S("max_round_pages", int, 50000, "ordering", "Cap of a round grown by --round_growth (0: none; "
      "a 45 000-page round's processes peaked at 0.5-0.8 GB, benchmarks/RESULTS.md).", at_least(0)),
    S("strategy", str, "bfs", "ordering", "Ordering that scores the frontier: bfs, backlinks, "
      "url_importance, preference, partial_pagerank, opic, larger_sites_first, random; dfs "
      "(deepest first: to reach a site's deep section in few rounds, with --max_depth; a poor "
      "importance order, below random: docs/ordering.md); focused: best_first, "
      "shark_search, fish_search (see --topic).", crawl_strategy),
    S("strategy_params", str, "", "ordering", "KEY=VALUE,... for the strategy, e.g. x=2,y=1 "
      "(preference) or damping=0.85,tol=1e-8 (partial_pagerank)."),
    S("pagerank_path", str, "auto", "ordering", "Where PageRank strategies compute it: memory "
      "(one worker), beam (a Beam job) or auto (beam above --pagerank_beam_edges links).",
      one_of("auto", "memory", "beam")),
    S("pagerank_beam_edges", int, 20_000_000, "ordering",
      "Known links above which --pagerank_path auto uses the Beam path.", at_least(0)),
    S("pagerank_iterations", int, 30, "ordering", "Power iterations of the Beam PageRank.", at_least(1)),
    # --- duplicates ---
    S("expand_duplicates", parse_bool, False, "duplicates",
      "Extract links from pages whose content duplicates an earlier page (mirrors)."),
    S("near_duplicates", float, 0.9, "duplicates", "MinHash Jaccard threshold for near-duplicate "
      "page pairs (0 = off).", between(0.0, 1.0)),
    # --- documents ---
    S("parse_seconds", float, 5.0, "documents", "Wall-clock budget of parsing one document "
      "(checked between PDF pages, paragraphs, feed items); past it the document keeps what was "
      "read, with the reason.", at_least(0.01, " s")),
    S("parse_max_pages", int, 200, "documents", "PDF pages read per document.", at_least(1)),
    S("parse_max_inflated", int, 50 * 1024 * 1024, "documents", "Bytes any decompression inside "
      "one document (PDF streams, .docx parts, gzip sitemaps) may give.", at_least(1024),
      shown="52428800 (50 MiB)"),
    S("text_links", parse_bool, False, "documents", "Plain-text documents: URLs written in the "
      "text become outlinks."),
    S("detect_language", parse_bool, True, "documents", "Detect a document's language (py3langid) "
      "when its markup states none."),
    # --- storage ---
    S("keep_snapshots", int, 2, "storage", "Rounds whose frontier, hosts and opic snapshots are "
      "kept; older rounds' are deleted after each commit (0 = keep all). Visited, links, "
      "filtered and the archive are never pruned.", at_least(0)),
    S("compact_ratio", float, 0.25, "storage", "A round writes only the frontier rows it changed and the "
      "hosts it fetched (deltas) until a table's deltas since its last full copy exceed this share "
      "of it; then it writes that table whole again (0 = whole tables every round).", at_least(0.0)),
    S("store", str, "warc", "storage", "What keeps fetched content: warc (WARC 1.1 files with a "
      "CDXJ index under rounds/N/warc/), parquet (the pages table), both, or none. Noindex pages "
      "are never stored.", one_of("warc", "parquet", "both", "none")),
    S("warc_max_bytes", int, 1_000_000_000, "storage", "A WARC file is closed and the next one "
      "started once it reaches this many bytes.", at_least(1), shown="1000000000 (1 GB)"),
    S("store_pages", parse_bool, None, "storage", "Deprecated alias: true adds the pages table "
      "to --store (warc -> both), false removes it (both -> warc).", shown="unset"),
    S("ignore_meta_noindex", parse_bool, False, "storage",
      "Store pages even when meta robots / X-Robots-Tag says noindex (audits)."),
    # --- vertical (focused) crawling: docs/vertical.md ---
    S("topic", str, "", "vertical", "Comma-separated keywords of the topic; each visited page "
      "gets its TF-IDF cosine relevance to it (visited.relevance)."),
    S("topic_pages", str, "", "vertical", "Comma-separated example pages of the topic: files "
      "(any format the parsers read) or http(s) URLs (fetched once per round, politely)."),
    S("relevance_threshold", float, 0.2, "vertical", "A page is relevant when its relevance is "
      "at least this: the harvest rate's numerator, Fish-Search's binary relevance, and the "
      "'relevant parent' test of Shark-Search and the depth bound.", between(0.0, 1.0)),
    S("harvest_floor", float, 0.05, "vertical", "--mode vertical stops after a round whose "
      "harvest rate (relevant / visited) falls below this.", between(0.0, 1.0)),
    S("depth_bound", int, 3, "vertical", "D of Fish-/Shark-Search: links are followed at most "
      "this many hops below the last relevant page (enforced in --mode vertical).", at_least(0)),
    S("topic_decay", float, 0.5, "vertical", "δ of Shark-Search: the share of a page's "
      "relevance (or inherited score) its links inherit.", between(0.0, 1.0)),
    S("anchor_beta", float, 0.8, "vertical", "β of Shark-Search: weight of the anchor text "
      "against its context in a link's neighbourhood score.", between(0.0, 1.0)),
    S("shark_gamma", float, 0.5, "vertical", "γ of Shark-Search: weight of the inherited score "
      "against the neighbourhood score in a link's potential.", between(0.0, 1.0)),
    S("anchor_window", int, 10, "vertical", "Words either side of an anchor that make its "
      "context (Shark-Search).", at_least(0)),
    S("max_buffer", int, 0, "vertical", "MAX_BUFFER: the frontier keeps at most this many URLs, "
      "dropping its lowest-scored to filtered (reason buffer_full); 0 = unbounded (Best-First "
      "used 256 for a page-at-a-time crawler; a round needs at least --max_pages).", at_least(0)),
    # --- deep web (#17; strategies/deepweb): defined in pipelines/settings_deepweb.py ---
    *settings_deepweb.settings(S, at_least, between, one_of),
    # --- recrawl (issue #13: incremental crawling) ---
    S("mode", str, "batch", "recrawl", "batch: fetch each URL once; incremental: every round "
      "mixes new URLs and due revisits of visited pages (docs/incremental.md); "
      "vertical: a topic-focused crawl, needs --topic or --topic_pages, rounds go on while the "
      "harvest rate stays at or above --harvest_floor (docs/vertical.md).",
      one_of("batch", "incremental", "vertical")),
    S("refetch_share", float, 0.5, "recrawl", "Incremental: revisits take at most this share "
      "of --max_pages per round; new URLs the rest.", between(0.0, 1.0)),
    S("refetch_policy", str, "optimal", "recrawl", "Incremental: how the revisit budget is "
      "spread: uniform, proportional, optimal, importance, sampling, cluster.",
      one_of("uniform", "proportional", "optimal", "importance", "sampling", "cluster")),
    S("refetch_params", str, "", "recrawl", "KEY=VALUE,... for the revisit policy, e.g. "
      "sample_size=2 (sampling, cluster) or k=20 (cluster)."),
    S("refetch_explore", float, 0.1, "recrawl", "Incremental: share of the revisit budget spread "
      "uniformly over visited pages whatever the policy, so rate estimates keep learning (with "
      "--refetch_estimate improved a page seen unchanged is estimated 0 and a rate policy alone "
      "would never revisit it).", between(0.0, 1.0)),
    S("refetch_estimate", str, "bayes", "recrawl", "Incremental: the change-rate estimate the "
      "revisit policy acts on: bayes (a page's few visits read against the rate distribution fitted "
      "over the crawl's pages: empirical Bayes, strategies/recrawl/bayes.py) or improved (Cho & Garcia-Molina's estimator "
      "from the page's own visits alone).", one_of("bayes", "improved")),
    S("expired_threshold", float, 0.5, "recrawl", "A visited page is expired when its estimated "
      "probability of having changed since its last visit exceeds this.", between(0.0, 1.0)),
    S("round_interval", float, 86400.0, "recrawl", "Incremental: seconds between rounds the "
      "revisit budget is planned over, until two rounds have run (then the last gap).",
      at_least(1.0), shown="86400 (1 day)"),
    # --- sharding (issue #15; pipelines/fleet.py, strategies/partition) ---
    S("shard", int, 0, "sharding", "This fleet's shard, 0..--num_shards-1; with --num_shards > 1 "
      "its --crawl_dir is ROOT/shard-NN (NN = this number, two digits).", at_least(0)),
    S("num_shards", int, 1, "sharding", "Crawler fleets sharing the hosts; links to another "
      "shard's hosts go to its inbox. 1 = not sharded.", at_least(1)),
    S("partition", str, "consistent", "sharding", "How hosts are assigned to shards: consistent "
      "(hash ring with virtual nodes) or hash_mod (hash(host) mod live shards).",
      one_of("consistent", "hash_mod")),
    S("virtual_nodes", int, 1000, "sharding", "Points per shard on the consistent-hashing ring.",
      at_least(1)),
    S("shard_weights", str, "", "sharding", "Comma-separated relative capacity per shard "
      "(consistent only), e.g. 1,1,2; '' = equal."),
    S("remove_shard", str, "", "sharding", "Comma-separated shards taken off the ring: their hosts "
      "pass to the next shard on the ring (consistent) or are re-spread (hash_mod)."),
    # --- memory budget (issue #12; docs/memory.md) ---
    S("memory_mb", int, 1024, "runner", "Memory budget of a round's buffers, in MB (pages to parse, spill files, "
      "link batches, URL-seen buckets); not of the process, whose peak grows with --max_pages. Below 1024, "
      "freed memory goes back to the OS at once, a few % more CPU (docs/memory.md).", at_least(64, " MB")),
]}

CRAWL_DIR = S("crawl_dir", str, None, "command", "Crawl directory: a local path or any Beam "
              "filesystem (gs://, s3://, ...).", non_empty, shown="required")
ROUND_TIME = S("round_time", float, None, "runner", "The round's clock, epoch seconds, for "
               "replays and tests.", shown="now")
COMMAND_FLAGS = {
    "inject": [CRAWL_DIR,
               S("seeds", str, None, "command", "File of seed URLs, one per line ('#' comments).", shown="none"),
               S("seed", str, None, "command", "A seed URL (repeatable).", shown="none")],
    "round": [CRAWL_DIR, ROUND_TIME],
    "show": [CRAWL_DIR,
             S("headers_only", parse_bool, False, "command", "Print the status line and headers only."),
             S("raw", parse_bool, False, "command", "Print the body as received (still "
               "Content-Encoding'd) instead of decoded.")],
    "crawl": [CRAWL_DIR, ROUND_TIME,
              S("rounds", int, None, "command", "Run at most this many rounds.", at_least(1),
                shown="none"),
              S("max_total_pages", int, None, "command", "Stop once this many URLs have been "
                "visited in total.", at_least(1), shown="none"),
              S("until_empty", parse_bool, False, "command", "Run rounds until nothing is due.")],
}
USAGE = {
    "inject": "start a crawl (round 0) or add seeds to one; round flags become the crawl's defaults",
    "round": "run the next round of a crawl",
    "crawl": "run rounds until --rounds, --max_total_pages or --until_empty says stop",
    "show": "print the latest WARC capture of a URL: status line, headers, body",
}


def markdown_table():
    """README's defaults table, generated from ROUND_SETTINGS."""
    rows = ["| flag | group | default | meaning |", "| --- | --- | --- | --- |"]
    for s in sorted(ROUND_SETTINGS.values(), key=lambda s: list(GROUPS).index(s.group)):
        rows.append(f"| `{s.flag}` | {s.group} | `{s.default_text()}` | {s.help} |")
    return "\n".join(rows)


def effective_round_settings(given, crawl_defaults):
    """Every round setting, typed and checked: given flags > crawl.json > defaults.

    A bad value in crawl.json is named as coming from there; raises UsageError."""
    out = {}
    for name, s in ROUND_SETTINGS.items():
        if name in given:
            out[name] = given[name]
        elif name in crawl_defaults:
            out[name] = s.coerce(crawl_defaults[name], origin="crawl.json round_defaults")
        else:
            out[name] = s.default
    return out


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m pipelines.settings", description=__doc__.split("\n\n")[0])
    parser.add_argument("--markdown", action="store_true", help="Print README's defaults table.")
    args = parser.parse_args(argv)
    try:
        if args.markdown:
            print(markdown_table())
        else:
            for s in ROUND_SETTINGS.values():
                print(f"{s.flag:24s} {s.group:11s} {s.default_text()}")
    except BrokenPipeError:   # e.g. piped into head
        sys.stderr.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
