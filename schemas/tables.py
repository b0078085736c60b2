"""Arrow schemas of every crawl-directory table.

This module is the only place a column is named: readers, writers and transforms import
the schemas (and the column-name constants below) from here. Bump SCHEMA_VERSION when a
change is not backwards compatible; `crawl.json` records the version a crawl was made with.

Conventions
- `fp` is the 64-bit fingerprint of the canonical URL (see transforms.urls.fingerprint),
  stored as int64. It is the join key of every table; the URL string travels with it.
- `host` is the politeness key: lower-case host name, plus ":port" when not the default.
- Times are float seconds since the epoch (UTC), so a notebook can do arithmetic on them
  without timezone surprises.
"""
import pyarrow as pa

SCHEMA_VERSION = 2
# crawl.json versions this beamcrawl reads: a version-1 crawl's tables lack the columns
# added since (LATER_COLUMNS), which read as nulls.
READABLE_VERSIONS = (1, 2)

# Outcomes of a fetch, recorded in visited.outcome. A URL ends in visited exactly once,
# with one of these; transient failures stay in the frontier until they succeed or
# exhaust their retries (then they end as FAILED with the last reason).
OK = "ok"                      # 2xx, body stored
NOT_MODIFIED = "not_modified"  # 304 on a conditional re-fetch
REDIRECT = "redirect"          # 3xx; the target is a new URL (recorded in redirect_to)
HTTP_ERROR = "http_error"      # permanent 4xx (404, 410, ...)
ROBOTS_DENIED = "robots_denied"
FORBIDDEN_ADDRESS = "forbidden_address"
TOO_MANY_REDIRECTS = "too_many_redirects"
FAILED = "failed"              # transient failure after --max_retries
DUPLICATE = "duplicate"        # fetched, content already seen (links not expanded)
OUTCOMES = (OK, NOT_MODIFIED, REDIRECT, HTTP_ERROR, ROBOTS_DENIED, FORBIDDEN_ADDRESS,
            TOO_MANY_REDIRECTS, FAILED, DUPLICATE)

# How a URL entered the frontier.
SOURCE_SEED = "seed"
SOURCE_LINK = "link"
SOURCE_REDIRECT = "redirect"
SOURCE_SITEMAP = "sitemap"            # a page listed in a sitemap
SOURCE_SITEMAP_FILE = "sitemap_file"  # a sitemap (or sitemap index) document itself
SOURCE_FORM = "form"                  # a form submission or one of its result pages (deep web)

FRONTIER = pa.schema([
    ("fp", pa.int64()),
    ("url", pa.string()),
    ("host", pa.string()),
    ("depth", pa.int32()),              # link distance from the nearest seed
    ("score", pa.float64()),            # strategy score: generate sorts by it, descending
    ("discovered_round", pa.int32()),
    ("source", pa.string()),            # seed / link / redirect / sitemap / sitemap_file
    ("first_parent", pa.string()),      # URL of the first page seen linking here (null for seeds)
    ("inlinks", pa.int64()),            # distinct known pages linking here
    ("anchors", pa.list_(pa.string())), # up to MAX_ANCHORS anchor texts, first seen first
    ("retries", pa.int32()),            # transient failures so far
    ("not_before", pa.float64()),       # do not fetch before this time (backoff); 0 = now
    ("last_error", pa.string()),        # reason of the last transient failure
    ("cash", pa.float64()),             # OPIC cash (strategies/opic); 0 when unused
    ("history", pa.float64()),          # OPIC history
    ("lastmod", pa.float64()),          # sitemap lastmod if known, else null
    ("redirects", pa.int32()),          # redirect hops that led here (source=redirect)
    # vertical crawling (strategies/ordering/focused.py): the best link score of a focused
    # strategy, the inherited score (Shark-Search) and the depth bound left (Fish/Shark-Search)
    ("topic_score", pa.float64()),
    ("topic_inherited", pa.float64()),
    ("depth_left", pa.int32()),
    # deep web (--deep_web_post_hosts): a POST form submission; null method = GET. The body is
    # form-encoded and part of the request's identity: `fp` of a POST is
    # transforms.urls.request.request_fingerprint(url, method, body), never the URL's
    ("method", pa.string()),
    ("request_body", pa.string()),
])

# The frontier columns a fetched page carries forward into its visited row and its links
# (transforms/fetch/hostjob). A fetch list needs only these and the score: the rest of a
# frontier row (anchors, OPIC cash, backoff) stays in the frontier, which URL-seen reads.
FETCH_CARRIED = ("fp", "url", "host", "depth", "discovered_round", "first_parent", "retries",
                 "redirects", "source", "inlinks", "topic_score", "topic_inherited", "depth_left",
                 "method", "request_body")

VISITED = pa.schema([
    ("fp", pa.int64()),
    ("url", pa.string()),
    ("host", pa.string()),
    ("depth", pa.int32()),
    ("round", pa.int32()),              # round that fetched it
    ("discovered_round", pa.int32()),
    ("fetch_time", pa.float64()),       # start of the request
    ("outcome", pa.string()),           # one of OUTCOMES
    ("reason", pa.string()),            # human-readable detail for non-ok outcomes
    ("http_status", pa.int32()),        # null when no response (network error, robots, ...)
    ("content_type", pa.string()),      # media type without parameters
    ("charset", pa.string()),
    ("bytes", pa.int64()),              # body bytes received (after decoding)
    ("truncated", pa.bool_()),          # body hit the size cap
    ("elapsed_ms", pa.float64()),
    ("redirect_to", pa.string()),       # absolute canonical target of a 3xx / meta refresh
    ("etag", pa.string()),
    ("last_modified", pa.string()),
    ("content_fp", pa.int64()),         # fingerprint of the body (exact duplicates)
    ("text_fp", pa.int64()),            # fingerprint of the extracted text
    ("duplicate_of", pa.string()),      # first URL (earliest round, then fp) with the same content
    ("canonical", pa.string()),         # rel=canonical target, recorded not followed
    ("meta_robots", pa.string()),       # e.g. "noindex,nofollow" from meta / X-Robots-Tag
    ("title", pa.string()),
    ("outlinks", pa.int32()),           # links extracted (before filtering)
    ("retries", pa.int32()),
    ("first_parent", pa.string()),
    ("minhash", pa.list_(pa.uint32())),  # MinHash of the visible text (transforms/contentseen.py)
    # LSH band keys of minhash (contentseen.LSH_PARAMS: 16 int64 keys), the narrow column a
    # round probes old pages by: [] for a page without minhash or an exact duplicate (never
    # an earlier near-duplicate); null in files written before the column (keys recomputed)
    ("lsh_keys", pa.list_(pa.int64())),
    ("source", pa.string()),            # how the URL entered the frontier (seed/link/...)
    # signature of the settings that refused the URL (transforms/urls/refusals.py), for a
    # forbidden_address outcome; null otherwise. A later row of the same URL supersedes it.
    ("refused_by", pa.string()),
    # the near-duplicate cluster the page joined (transforms/contentseen/clusters.py): its
    # earliest member by (round, fp); null when the page joined none (or is a cluster's head)
    ("near_cluster_fp", pa.int64()),
    ("near_cluster_round", pa.int32()),
    # documents (transforms/page/formats, #18): what the page step read of an ok body
    ("doc_type", pa.string()),          # media type sniffed from the body (magic bytes, markup)
    ("text_chars", pa.int64()),         # characters of extracted text (any format)
    ("description", pa.string()),       # meta description / PDF subject / feed description
    ("language", pa.string()),          # primary subtag ('en'): stated by the markup, else detected
    ("published", pa.float64()),        # date the document states it was published (epoch s)
    ("modified", pa.float64()),         # date the document states it was last modified (epoch s)
    # TF-IDF cosine similarity of the page's text with the crawl's topic (strategies/topic.py);
    # null without a topic, or for a page without parsed text
    ("relevance", pa.float64()),
    # JavaScript rendering (transforms/fetch/render.py, #19): the body parsed was the DOM
    # headless Chromium rendered (false: rendering was tried and failed; null: not tried)
    ("rendered", pa.bool_()),
    ("render_links", pa.int32()),       # links the rendered DOM added over the static HTML
    ("method", pa.string()),            # POST for a form submitted by POST (see FRONTIER); null = GET
    ("request_body", pa.string()),
])

# Columns added after files of SCHEMA_VERSION 1 were written: a file may lack them (readers
# fill nulls through `conform`, and the round's file check accepts their absence).
LATER_COLUMNS = {"visited": ("lsh_keys", "source", "refused_by", "near_cluster_fp",
                             "near_cluster_round", "doc_type", "text_chars", "description",
                             "language", "published", "modified", "relevance", "rendered",
                             "render_links", "method", "request_body"),
                 "frontier": ("topic_score", "topic_inherited", "depth_left", "method", "request_body"),
                 "hosts": ("render_helped",
                           # version 2: DNS kept across rounds, robots.txt unreachable for how long
                           "address_expires", "dns_lookups", "robots_unreachable_since"),
                 "filtered": ("depth", "source", "refused_by"),
                 "near_duplicates": ("host", "cluster_fp", "cluster_round")}

LINKS = pa.schema([
    ("src_fp", pa.int64()),
    ("dst_fp", pa.int64()),
    ("src", pa.string()),
    ("dst", pa.string()),
    ("anchor", pa.string()),
    ("round", pa.int32()),
])

PAGES = pa.schema([
    ("fp", pa.int64()),
    ("url", pa.string()),
    ("round", pa.int32()),
    ("content_type", pa.string()),
    ("body", pa.binary()),
])

HOSTS = pa.schema([
    ("host", pa.string()),
    ("robots_status", pa.int32()),       # HTTP status of robots.txt; null on network error
    ("robots_state", pa.string()),       # parsed / allow_all / disallow_all
    ("robots_body", pa.string()),        # first 500 KiB of robots.txt as text
    ("robots_fetched_at", pa.float64()), # cache time: refetched after robots_ttl
    ("robots_unreachable_since", pa.float64()),  # first of the failed robots.txt fetches (5xx, network) since it was last reached; null when reached
    ("crawl_delay", pa.float64()),       # seconds, as robots.txt declares it (a host over --max_crawl_delay is deferred)
    ("sitemaps", pa.list_(pa.string())),
    ("address", pa.string()),            # last resolved address
    ("address_expires", pa.float64()),   # the address is reused until then (its DNS TTL, at most --dns_max_ttl); null: resolve before use
    ("dns_lookups", pa.int64()),         # cumulative DNS lookups made for the host
    ("fetches", pa.int64()),             # cumulative requests made to the host
    ("errors", pa.int64()),              # cumulative failed requests
    ("consecutive_failures", pa.int32()),
    ("last_error", pa.string()),
    ("last_fetch_time", pa.float64()),
    ("render_helped", pa.bool_()),       # --render auto: rendering found more links/text here (null: never rendered)
])

# Filtered URLs are recorded with their reason so "every URL ever discovered is in exactly
# one of visited or frontier, or recorded as filtered" holds.
FILTERED = pa.schema([
    ("fp", pa.int64()),
    ("url", pa.string()),
    ("reason", pa.string()),
    ("round", pa.int32()),
    ("first_parent", pa.string()),
    ("depth", pa.int32()),              # link depth it was refused at
    ("source", pa.string()),
    ("refused_by", pa.string()),        # signature of the scope flag behind `reason`
])

# Near-duplicates found in a round (transforms/contentseen/clusters.py): one row per page of
# the round that joined a near-duplicate cluster (never one per pair). cluster_* name the
# cluster's earliest member by (round, fp); of_* the earlier page it was matched with (the
# head itself when it matched it) and jaccard the MinHash estimate to that page. Files
# written before clusters hold one row per pair and no host/cluster_* (read as null: the
# pair's of_* page stands for the cluster).
NEAR_DUPLICATES = pa.schema([
    ("fp", pa.int64()),
    ("url", pa.string()),
    ("round", pa.int32()),
    ("of_fp", pa.int64()),
    ("of_url", pa.string()),
    ("of_round", pa.int32()),
    ("jaccard", pa.float64()),
    ("host", pa.string()),
    ("cluster_fp", pa.int64()),
    ("cluster_round", pa.int32()),
])

# Revisit scheduling state (incremental mode, issue #13; transforms/recrawl): one row per
# page visited in the round (first visits and revisits), appended as a delta; a page's
# state is its row of the latest round. Visits stay history in `visited`; this table says
# when a visited page is due again. Times are the round's clock (--round_time).
RECRAWL = pa.schema([
    ("fp", pa.int64()),
    ("url", pa.string()),
    ("host", pa.string()),
    ("round", pa.int32()),              # round of the last visit
    ("last_visit", pa.float64()),       # the round clock of the last visit
    ("intervals", pa.int32()),          # n: revisit intervals observed (visits - 1)
    ("changes", pa.int32()),            # X: intervals in which a change was detected
    ("interval_sum", pa.float64()),     # seconds summed over the n intervals
    ("changed", pa.bool_()),            # the last visit detected a change
    ("active", pa.bool_()),             # false: the last visit found no page (4xx, failed)
    ("etag", pa.string()),              # validators of the last full response
    ("last_modified", pa.string()),
    ("content_fp", pa.int64()),         # body fingerprint of the last full response
    ("bytes", pa.int64()),              # body bytes of the last full response
    ("score", pa.float64()),            # importance: the strategy score it was fetched with
    ("depth", pa.int32()),
    ("discovered_round", pa.int32()),
    ("source", pa.string()),
    ("content_type", pa.string()),
    ("lastmod", pa.float64()),          # newest sitemap lastmod seen for it (null: none)
])

# OPIC state (strategies/opic.py) of every known page, visited or pending; written only by
# crawls whose strategy uses OPIC. The row with fp = 0 is the virtual page: its history is
# the cash it has paid back to all pages (its cash is always 0 between rounds).
OPIC = pa.schema([
    ("fp", pa.int64()),
    ("cash", pa.float64()),
    ("history", pa.float64()),
])
OPIC_VIRTUAL_FP = 0

# Document frequencies of the topic's TF-IDF (strategies/topic.py), one delta per round:
# the documents of the round containing each hashed term; the row with term = -1 holds the
# number of documents. The view (all rounds summed) is the crawl's document frequency.
DOCFREQ = pa.schema([
    ("term", pa.int64()),
    ("df", pa.int64()),
])

MAX_ANCHORS = 8

# Deep web (transforms/deepweb, strategies/deepweb; --deep_web forms). FORMS: one row per
# form found on a page fetched this round (a delta table); inputs as JSON
# [{"name", "kind", "values", "default"}] (transforms/page/forms.py).
FORMS = pa.schema([
    ("page_fp", pa.int64()),
    ("page", pa.string()),
    ("host", pa.string()),               # the host of the action (where it would be submitted)
    ("round", pa.int32()),
    ("action", pa.string()),
    ("method", pa.string()),             # get / post (post forms are never submitted)
    ("form_key", pa.string()),           # action + sorted input names: one form across pages
    ("inputs", pa.string()),
])
# DEEPWEB: the probing state of each host with forms (a full snapshot each round): counters
# and the planner's state as JSON (strategies/deepweb/planner.py: forms, templates tried with
# their informativeness, submissions with the records each found, words used, record ids).
DEEPWEB = pa.schema([
    ("host", pa.string()),
    ("round", pa.int32()),               # the round that last advanced it
    ("forms", pa.int32()),
    ("submissions", pa.int64()),         # form submissions made (counted against the budget)
    ("result_pages", pa.int64()),        # result pages beyond the first, emitted
    ("records", pa.int64()),             # distinct records seen on result pages
    ("state", pa.string()),
])

# ---- in flight within a round (URL-seen's inputs), never written as crawl tables
# A fetch result as the URL-seen join needs it.
RESULTS = pa.schema([
    ("fp", pa.int64()),
    ("final", pa.bool_()),           # left the frontier (its visited row is written)
    ("retries", pa.int32()),         # for transient results: the new retry count
    ("not_before", pa.float64()),
    ("last_error", pa.string()),
    ("dropped", pa.bool_()),         # final without a visited row: recorded as filtered instead
])

# A discovered URL before the join: a link, a redirect target, a seed or a sitemap entry.
CANDIDATES = pa.schema([
    ("dst_fp", pa.int64()),
    ("dst", pa.string()),
    ("host", pa.string()),
    ("depth", pa.int32()),
    ("src_fp", pa.int64()),          # 0 for seeds
    ("src", pa.string()),            # null for seeds
    ("anchor", pa.string()),
    ("source", pa.string()),
    ("redirects", pa.int32()),
    ("lastmod", pa.float64()),
    ("topic_score", pa.float64()),   # vertical crawling: see FRONTIER
    ("topic_inherited", pa.float64()),
    ("depth_left", pa.int32()),
    ("method", pa.string()),         # deep web: see FRONTIER (dst_fp of a POST is its request's)
    ("request_body", pa.string()),
])

FP_ONLY = pa.schema([("fp", pa.int64())])

# A table written as deltas over a full snapshot (pipelines/crawldir.py LAYERED) has, in a
# delta round, "<table>_removed": the keys that left the view in that round (a host never
# leaves the hosts table: its form exists for the machinery's sake, never written today).
REMOVED = FP_ONLY
HOSTS_REMOVED = pa.schema([("host", pa.string())])

# A sharded crawl's outbox (rounds/N/outbox/to-SS-*.parquet): the URL-seen candidates of
# hosts another shard owns, one file set per destination shard SS (pipelines/fleet.py).
OUTBOX = CANDIDATES

FILTERED_CANDIDATES = pa.schema([
    ("fp", pa.int64()),
    ("url", pa.string()),
    ("reason", pa.string()),
    ("first_parent", pa.string()),
    ("depth", pa.int32()),
    ("source", pa.string()),
])

class ParquetReadError(IOError):
    """A crawl-table file that passed the footer check could not be read."""


TABLES = {
    "frontier": FRONTIER,
    "visited": VISITED,
    "links": LINKS,
    "pages": PAGES,
    "hosts": HOSTS,
    "filtered": FILTERED,
    "opic": OPIC,
    "near_duplicates": NEAR_DUPLICATES,
    "docfreq": DOCFREQ,
    "forms": FORMS,
    "deepweb": DEEPWEB,
    "recrawl": RECRAWL,
    "outbox": OUTBOX,
    "frontier_removed": REMOVED,
    "hosts_removed": HOSTS_REMOVED,
}


def conform(table: pa.Table, schema: pa.Schema) -> pa.Table:
    """`table` with exactly `schema`'s columns, in order; missing nullable columns as nulls.

    Raises ValueError naming the columns that are missing or cannot be cast, so a
    wrong-schema file is reported instead of silently corrupting state.
    """
    columns = []
    for field in schema:
        if field.name in table.column_names:
            col = table.column(field.name)
            if not col.type.equals(field.type):
                try:
                    col = col.cast(field.type)
                except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as e:
                    raise ValueError(
                        f"column {field.name!r} has type {col.type}, expected {field.type}: {e}"
                    ) from e
            columns.append(col)
        else:
            columns.append(pa.nulls(table.num_rows, field.type))
    return pa.Table.from_arrays(columns, schema=schema)
