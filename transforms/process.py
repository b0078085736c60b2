"""Process a fetched page: decide its outcome, parse it, normalise and filter its links.

`classify` (pure) turns a fetch result into the page's fate: a final visited row, or a
retry for a later round. `ProcessPages` wraps it with parsing (transforms.parse) and the
URL filter (transforms.urls) and emits, per page, one element on each of its outputs:
  visited     the visited row (final outcomes only)
  results     what URL-seen needs to move the URL out of the frontier or back into it
  pages       the stored body (2xx, unless noindex or --store_pages=false)
  links       one element per page with its links as arrays (kept links only)
  filtered    (url, reason) of links the filter dropped
"""
import hashlib

import apache_beam as beam

from schemas import tables
from transforms import fetcher as fetcher_mod
from transforms import parse as parse_mod
from transforms import urls as urls_mod

HTML_TYPES = ("text/html", "application/xhtml+xml")


def content_fingerprint(data: bytes) -> int:
    if not data:
        return 0
    return int.from_bytes(hashlib.blake2b(data, digest_size=8).digest(), "little", signed=True)


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

    def process(self, page):
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
        links, anchors = [], []
        source = tables.SOURCE_LINK
        if outcome == tables.REDIRECT and page.get("redirect_to"):
            target = urls_mod.normalize(page["redirect_to"])
            if target:
                visited["redirect_to"] = target
                links, anchors, source = [target], [""], tables.SOURCE_REDIRECT
        elif outcome == tables.OK and body:
            visited["content_fp"] = content_fingerprint(body)
            ctype = (page.get("content_type") or "").lower()
            if ctype in HTML_TYPES or (not ctype and not parse_mod.looks_binary(body)):
                if parse_mod.looks_binary(body):
                    visited["reason"] = "binary body served as html"
                else:
                    parsed = parse_mod.parse_html(
                        body, page["url"], page.get("content_type_header"),
                        honour_nofollow=self.honour_nofollow,
                        ignore_meta_nofollow=self.ignore_meta_nofollow)
                    flags = _robots_directives(parsed.meta_robots, page.get("x_robots_tag"))
                    visited.update(charset=parsed.charset, title=(parsed.title or None),
                                   canonical=parsed.canonical, outlinks=len(parsed.links),
                                   meta_robots=",".join(sorted(flags)) or None,
                                   text_fp=content_fingerprint(parsed.text.encode("utf-8")))
                    if "nofollow" not in flags or self.ignore_meta_nofollow:
                        links, anchors = parsed.links, parsed.anchors
                    if "noindex" in flags and not self.ignore_meta_noindex:
                        body = b""
            if self.store_pages and body:
                yield beam.pvalue.TaggedOutput("pages", {
                    "fp": page["fp"], "url": page["url"], "round": self.round_no,
                    "content_type": page.get("content_type"), "body": body})
        yield visited

        if links:
            is_redirect = source == tables.SOURCE_REDIRECT
            depth = int(page.get("depth") or 0) + (0 if is_redirect else 1)
            reasons = self.url_filter.reasons(links, [depth] * len(links))
            keep_urls, keep_anchors, dropped = [], [], []
            for url, anchor, why in zip(links, anchors, reasons):
                if why is None:
                    keep_urls.append(url)
                    keep_anchors.append(anchor)
                else:
                    dropped.append((url, why))
            if keep_urls:
                yield beam.pvalue.TaggedOutput("links", {
                    "src": page["url"], "src_fp": page["fp"], "depth": depth, "source": source,
                    "redirects": int(page.get("redirects") or 0) + (1 if is_redirect else 0),
                    "dst": keep_urls, "anchor": keep_anchors})
            if dropped:
                yield beam.pvalue.TaggedOutput("filtered", {
                    "src": page["url"], "url": [u for u, _ in dropped],
                    "reason": [r for _, r in dropped]})
