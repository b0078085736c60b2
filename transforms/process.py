"""Process a fetched page: decide its outcome, parse it, normalise and filter its links.

`classify` (pure) turns a fetch result into the page's fate: a final visited row, or a
retry for a later round. `ProcessPages` wraps it with parsing (transforms.parse) and the
URL filter (transforms.urls) and emits, per page, one element on each of its outputs:
  visited     the visited row (final outcomes only)
  results     what URL-seen needs to move the URL out of the frontier or back into it
  pages       the stored body (2xx, unless noindex or --store_pages=false)
  links       one element per page with its links as arrays (kept links only)
  filtered    (url, reason) of links the filter dropped
A fetched sitemap (source sitemap_file) is parsed as a sitemap, not as HTML: its URLs
become candidates with source `sitemap` and their lastmod; an index's children are
queued as further sitemap files.
"""
import time

import apache_beam as beam
import numpy as np
import pyarrow as pa
from apache_beam.transforms.window import GlobalWindow
from apache_beam.utils.timestamp import MIN_TIMESTAMP
from apache_beam.utils.windowed_value import WindowedValue

from schemas import tables
from transforms import contentseen
from transforms import fetcher as fetcher_mod
from transforms import parse as parse_mod
from transforms import sitemaps as sitemaps_mod
from transforms import urls as urls_mod

HTML_TYPES = ("text/html", "application/xhtml+xml")
TEXT_FOR_MINHASH = "_text"  # visited-row key carrying a page's text to visited_table


def visited_table(rows):
    """VISITED table of a batch of visited rows; MinHash signatures of the rows that carry
    their text, and their LSH band keys (`lsh_keys`, [] for the other rows), are computed
    here for the whole batch in one call."""
    texts = [(i, r.pop(TEXT_FOR_MINHASH)) for i, r in enumerate(rows) if TEXT_FOR_MINHASH in r]
    sigs = np.zeros((len(rows), contentseen.NUM_PERM), np.uint32)
    has = np.zeros(len(rows), bool)
    if texts:
        idx = [i for i, _ in texts]
        sigs[idx], has[idx] = contentseen.minhash_signatures([t for _, t in texts])
        for i in np.flatnonzero(has):
            rows[i]["minhash"] = sigs[i].tolist()
    table = pa.Table.from_pylist(rows, schema=tables.VISITED)
    return table.set_column(table.schema.get_field_index("lsh_keys"), "lsh_keys",
                            contentseen.lsh_key_column(sigs, has))


def classify(page, now, max_retries, retry_backoff, max_redirects):
    """(final_outcome or None, reason, retry_state or None) for a fetched page.

    Transient failures are retried in later rounds with exponential backoff (at least the
    server's Retry-After) until `max_retries`, then end as FAILED with the last reason. A
    redirect reached through more than `max_redirects` hops ends as TOO_MANY_REDIRECTS.
    """
    outcome, reason = page["outcome"], page.get("reason")
    if outcome == fetcher_mod.TRANSIENT:
        retries = int(page.get("retries") or 0) + 1
        if retries > max_retries:
            return tables.FAILED, f"{reason} (after {retries} attempts)", None
        wait = retry_backoff * (2 ** (retries - 1))
        if page.get("retry_after"):
            wait = max(wait, float(page["retry_after"]))
        return None, reason, {"retries": retries, "not_before": now + wait, "last_error": reason}
    if outcome == tables.REDIRECT and int(page.get("redirects") or 0) >= max_redirects:
        return tables.TOO_MANY_REDIRECTS, f"more than {max_redirects} redirects", None
    return outcome, reason, None


def _robots_directives(parsed_meta, header):
    flags = set()
    for part in (parsed_meta or "", header or ""):
        for token in part.replace(";", ",").split(","):
            token = token.strip().lower()
            if ":" in token:  # "googlebot: noindex" style X-Robots-Tag: keep the directive
                token = token.split(":", 1)[1].strip()
            if token == "none":
                flags.update(("noindex", "nofollow"))
            elif token:
                flags.add(token)
    return flags


def filter_bundle(bundle, url_filter):
    """Split a candidates bundle by the URL filter: (kept bundle or None, filtered bundle or None).

    Sitemap documents are judged by scope only: their .xml/.gz extension is not a reason.
    """
    urls, anchors = bundle["dst"], bundle.get("anchor") or [""] * len(bundle["dst"])
    lastmod = bundle.get("lastmod")
    reasons = url_filter.reasons(urls, [bundle["depth"]] * len(urls))
    if bundle.get("source") == tables.SOURCE_SITEMAP_FILE:
        reasons = [None if r == "extension" else r for r in reasons]
    keep = [i for i, r in enumerate(reasons) if r is None]
    kept = filtered = None
    if keep:
        kept = dict(bundle, dst=[urls[i] for i in keep], anchor=[anchors[i] for i in keep])
        if lastmod is not None:
            kept["lastmod"] = [lastmod[i] for i in keep]
    if len(keep) < len(urls):
        drop = [i for i, r in enumerate(reasons) if r is not None]
        filtered = {"src": bundle.get("src"), "url": [urls[i] for i in drop],
                    "reason": [reasons[i] for i in drop]}
    return kept, filtered


class FilterBundles(beam.DoFn):
    """Candidates bundles -> kept bundles (main) and filtered bundles (tag `filtered`)."""

    def __init__(self, url_filter):
        self.url_filter = url_filter

    def process(self, bundle):
        kept, filtered = filter_bundle(bundle, self.url_filter)
        if kept:
            yield kept
        if filtered:
            yield beam.pvalue.TaggedOutput("filtered", filtered)


class ProcessPages(beam.DoFn):
    def __init__(self, round_no, now, settings, url_filter):
        self.round_no, self.now, self.url_filter = round_no, now, url_filter
        self.max_retries = int(settings["max_retries"])
        self.retry_backoff = float(settings["retry_backoff"])
        self.max_redirects = int(settings["max_redirects"])
        self.honour_nofollow = bool(settings["honour_nofollow"])
        self.ignore_meta_nofollow = bool(settings["ignore_meta_nofollow"])
        self.ignore_meta_noindex = bool(settings["ignore_meta_noindex"])
        self.store_pages = bool(settings["store_pages"])
        self.minhash = float(settings.get("near_duplicates") or 0) > 0

    def start_bundle(self):
        self._seconds = 0.0

    def finish_bundle(self):
        if self._seconds:
            yield beam.pvalue.TaggedOutput("stats", WindowedValue(
                {"seconds_parse": self._seconds}, MIN_TIMESTAMP, [GlobalWindow()]))

    def process(self, page):
        started = time.perf_counter()
        try:
            yield from self._process(page)
        finally:
            self._seconds += time.perf_counter() - started

    def _process(self, page):
        outcome, reason, retry = classify(page, self.now, self.max_retries, self.retry_backoff,
                                          self.max_redirects)
        if retry is not None:
            yield beam.pvalue.TaggedOutput("results", dict(fp=page["fp"], final=False, **retry))
            return
        yield beam.pvalue.TaggedOutput("results", dict(fp=page["fp"], final=True))
        body = page.get("body") or b""
        visited = {k: page.get(k) for k in ("fp", "url", "host", "depth", "discovered_round",
                                            "first_parent", "retries", "fetch_time", "http_status",
                                            "content_type", "truncated", "elapsed_ms", "etag",
                                            "last_modified")}
        visited.update(round=self.round_no, outcome=outcome, reason=reason, bytes=len(body),
                       redirect_to=page.get("redirect_to"))
        bundles = []
        if outcome == tables.REDIRECT and page.get("redirect_to"):
            target = urls_mod.normalize(page["redirect_to"])
            if target:
                visited["redirect_to"] = target
                bundles.append(self._bundle(page, [target], [""], tables.SOURCE_REDIRECT))
        elif outcome == tables.OK and body and page.get("source") == tables.SOURCE_SITEMAP_FILE:
            entries, children = sitemaps_mod.parse_sitemap(body, page["url"])
            visited["outlinks"] = len(entries) + len(children)
            entries = [(u, lm) for u, lm in ((urls_mod.normalize(u), lm) for u, lm in entries) if u]
            children = [u for u in (urls_mod.normalize(u) for u in children) if u]
            if entries:
                b = self._bundle(page, [u for u, _ in entries], [""] * len(entries), tables.SOURCE_SITEMAP)
                b["lastmod"] = [lm for _, lm in entries]
                bundles.append(b)
            if children:
                bundles.append(self._bundle(page, children, [""] * len(children), tables.SOURCE_SITEMAP_FILE))
        elif outcome == tables.OK and body:
            visited["content_fp"] = contentseen.body_fingerprint(body, page["url"])
            ctype = (page.get("content_type") or "").lower()
            if ctype in HTML_TYPES or not ctype:
                if parse_mod.looks_binary(body):
                    why = "binary body served as html" if ctype else "binary body"
                    visited["reason"] = f"{reason}; {why}" if reason else why
                else:
                    parsed = parse_mod.parse_html(
                        body, page["url"], page.get("content_type_header"),
                        honour_nofollow=self.honour_nofollow,
                        ignore_meta_nofollow=self.ignore_meta_nofollow)
                    flags = _robots_directives(parsed.meta_robots, page.get("x_robots_tag"))
                    visited.update(charset=parsed.charset, title=(parsed.title or None),
                                   canonical=parsed.canonical, outlinks=len(parsed.links),
                                   meta_robots=",".join(sorted(flags)) or None,
                                   text_fp=contentseen.text_fingerprint(parsed.text))
                    if self.minhash:  # signed in batches by visited_table (4x cheaper than one by one)
                        visited[TEXT_FOR_MINHASH] = parsed.text
                    if parsed.links and ("nofollow" not in flags or self.ignore_meta_nofollow):
                        bundles.append(self._bundle(page, parsed.links, parsed.anchors, tables.SOURCE_LINK))
                    if "noindex" in flags and not self.ignore_meta_noindex:
                        body = b""
            if self.store_pages and body:
                yield beam.pvalue.TaggedOutput("pages", {
                    "fp": page["fp"], "url": page["url"], "round": self.round_no,
                    "content_type": page.get("content_type"), "body": body})
        yield visited

        for bundle in bundles:
            kept, filtered = filter_bundle(bundle, self.url_filter)
            if kept:
                yield beam.pvalue.TaggedOutput("links", kept)
            if filtered:
                yield beam.pvalue.TaggedOutput("filtered", filtered)

    @staticmethod
    def _bundle(page, urls, anchors, source):
        """A page's candidates: links one hop deeper; redirect and sitemap targets carry the
        redirect hop count or sit one level below the sitemap."""
        is_redirect = source == tables.SOURCE_REDIRECT
        return {"src": page["url"], "src_fp": page["fp"],
                "depth": int(page.get("depth") or 0) + (0 if is_redirect else 1), "source": source,
                "redirects": int(page.get("redirects") or 0) + (1 if is_redirect else 0),
                "dst": list(urls), "anchor": list(anchors)}
