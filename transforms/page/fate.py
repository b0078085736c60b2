"""The fate of a fetched page: one fetch result in, everything the round keeps of it out.

`page_fate(page, config)` is the page step of the loop as a plain function, callable and
testable without a runner (the way Common Crawl's jobs test `process_record`):

    page (a fetch result with the frontier columns it carries) + PageConfig
      -> PageFate(result, visited, stored, links, filtered)

- `result`: what URL-seen needs to move the URL out of the frontier (final) or keep it
  there with its retry state (transient failures, backoff in `outcome.classify`);
- `visited`: the visited row (final outcomes only; it may carry the page's main-content
  blocks under `boilerplate.BLOCKS_FOR_MINHASH`: the host's template blocks are dropped
  and the rest signed per batch when the table is built);
- the body is parsed by the parser registered for its sniffed type (`formats.PARSERS`:
  HTML, PDF, .docx, RSS/Atom, plain text, sitemaps), within the round's per-document budget
  (`formats.ParseLimits`); the row gets the sniffed type, title, description, language,
  canonical, published/modified dates, text length and fingerprint, and the text blocks for
  MinHash whatever the format; a parser's reason (encrypted, corrupt, over budget) joins
  `reason`. X-Robots-Tag noindex/nofollow applies to every format. Other types stay terminal;
- `stored`: the PAGES row of the body (2xx, unless noindex or store_pages is off);
- `links`: candidate bundles the URL filter kept (links one hop deeper; a redirect target
  with one more hop; a sitemap's pages with their lastmod and its child sitemaps);
- `filtered`: bundles of the URLs the filter dropped, with the reason of each;
- `deepweb`: with `deep_web` on, an HTML page's forms (with the page's words, seeds for
  text boxes) and, for a page fetched as a form submission (source `form`), its result
  digest (`transforms.page.forms`); such a page's links back to its own search endpoint
  (other queries, next pages) are left to the deep-web stage, which decides what to submit;
- `archived`: with `archive` on, the capture for the WARC (transforms.archive): the URL, its
  HTTP exchange as sent and received (fetch.exchange), the payload as received and the
  page's outlinks with their hop type; every fetch that got an HTTP response, except
  noindex pages (the rule of the pages table).
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

from schemas import tables
from transforms.contentseen import fingerprints as contentseen
from transforms.page import forms as forms_mod
from transforms.page import sitemaps as sitemaps_mod
from transforms.page.formats import ParseLimits, parse_document
from transforms.page.formats import sniff as sniff_mod
from transforms.page.boilerplate import BLOCK_FPS, BLOCKS_FOR_MINHASH, block_fps
from transforms.page.focus import FocusConfig, carry_redirect, focus_page
from transforms.page.outcome import classify, robots_directives
from transforms.urls import canonical as urls_mod
from transforms.urls.request import request_key
from transforms.urls.scope import UrlFilter

HTML_TYPES = ("text/html", "application/xhtml+xml")
VISITED_FROM_PAGE = ("fp", "url", "host", "depth", "discovered_round", "first_parent", "retries",
                     "fetch_time", "http_status", "content_type", "truncated", "elapsed_ms", "etag",
                     "last_modified", "source")
RENDER_FROM_PAGE = ("rendered", "render_links")   # set only when rendering was tried (#19)
POST_FROM_PAGE = ("method", "request_body")        # set only for a deep-web POST (#17)


@dataclass(frozen=True)
class PageConfig:
    """The settings the page step reads; built once per round from the crawl's config."""
    round_no: int
    now: float
    url_filter: UrlFilter = field(default_factory=UrlFilter)
    max_retries: int = 3
    retry_backoff: float = 60.0
    max_redirects: int = 5
    honour_nofollow: bool = True
    ignore_meta_nofollow: bool = False
    ignore_meta_noindex: bool = False
    store_pages: bool = True
    archive: bool = False       # keep each fetch's capture for the WARC (`--store warc|both`)
    minhash: bool = True        # carry the page text for MinHash (near-duplicates on)
    guard_signature: str | None = None   # refused_by of forbidden_address rows (urls.refusals)
    documents: ParseLimits = field(default_factory=ParseLimits)   # parsers' budget (formats)
    focus: FocusConfig | None = None     # vertical crawling: topic relevance, link scores (focus.py)
    deep_web: bool = False      # forms and form results for the deep-web stage (--deep_web forms)


@dataclass
class PageFate:
    result: dict
    visited: dict | None = None
    stored: dict | None = None
    links: list = field(default_factory=list)
    filtered: list = field(default_factory=list)
    archived: dict | None = None
    deepweb: dict | None = None


ARCHIVE_HOPS = {tables.SOURCE_LINK: "L", tables.SOURCE_REDIRECT: "R", tables.SOURCE_SITEMAP: "S",
                tables.SOURCE_SITEMAP_FILE: "X"}


def archived_capture(page, bundles):
    """The WARC capture of `page` (None without an HTTP exchange): the payload as received
    (the decoded body is that payload when the response had no Content-Encoding)."""
    http = page.get("http")
    if not http:
        return None
    payload = http["payload"] if http.get("payload") is not None else (page.get("body") or b"")
    outlinks = [(u, ARCHIVE_HOPS.get(b.get("source"), "L")) for b in bundles for u in b["dst"]]
    return {"url": page["url"], "fetch_time": page["fetch_time"], "elapsed_ms": page.get("elapsed_ms"),
            "http": {k: v for k, v in http.items() if k != "payload"}, "payload": payload,
            "outlinks": outlinks}


def filter_reasons(bundle, url_filter):
    """Each candidate's reason to be filtered out (None: kept). Sitemap documents are judged
    by scope only: their .xml/.gz extension is not a reason."""
    urls = bundle["dst"]
    reasons = url_filter.reasons(urls, [bundle["depth"]] * len(urls))
    if bundle.get("source") == tables.SOURCE_SITEMAP_FILE:
        reasons = [None if r == "extension" else r for r in reasons]
    return reasons


def split_by_reasons(bundle, reasons):
    """(kept bundle or None, filtered bundle or None) of a bundle and its `filter_reasons`."""
    urls, anchors = bundle["dst"], bundle.get("anchor") or [""] * len(bundle["dst"])
    lastmod = bundle.get("lastmod")
    keep = [i for i, r in enumerate(reasons) if r is None]
    kept = filtered = None
    if keep:
        kept = dict(bundle, dst=[urls[i] for i in keep], anchor=[anchors[i] for i in keep])
        if bundle.get("topic_score") is not None:   # vertical crawling (focus.py)
            kept["topic_score"] = [bundle["topic_score"][i] for i in keep]
        if lastmod is not None:
            kept["lastmod"] = [lastmod[i] for i in keep]
    if len(keep) < len(urls):
        drop = [i for i, r in enumerate(reasons) if r is not None]
        filtered = {"src": bundle.get("src"), "url": [urls[i] for i in drop],
                    "reason": [reasons[i] for i in drop], "depth": bundle["depth"],
                    "source": bundle.get("source")}
    return kept, filtered


def filter_bundle(bundle, url_filter):
    """Split a candidates bundle by the URL filter: (kept bundle or None, filtered bundle or None)."""
    urls, reasons = bundle["dst"], filter_reasons(bundle, url_filter)
    if not any(reasons) and type(urls) is list and type(bundle.get("anchor")) is list \
            and len(bundle["anchor"]) == len(urls) and urls:
        return bundle, None   # all kept (the common case): the bundle as it is, no copies
    return split_by_reasons(bundle, reasons)


def link_bundle(page, urls, anchors, source):
    """A page's candidates: links one hop deeper; redirect and sitemap targets carry the
    redirect hop count or sit one level below the sitemap."""
    is_redirect = source == tables.SOURCE_REDIRECT
    return {"src": page["url"], "src_fp": page["fp"],
            "depth": int(page.get("depth") or 0) + (0 if is_redirect else 1), "source": source,
            "redirects": int(page.get("redirects") or 0) + (1 if is_redirect else 0),
            "dst": list(urls), "anchor": list(anchors)}


def _sitemap_bundles(page, body, visited):
    entries, children = sitemaps_mod.parse_sitemap(body, page["url"])
    visited["outlinks"] = len(entries) + len(children)
    entries = [(u, lm) for u, lm in ((urls_mod.normalize(u), lm) for u, lm in entries) if u]
    children = [u for u in (urls_mod.normalize(u) for u in children) if u]
    bundles = []
    if entries:
        b = link_bundle(page, [u for u, _ in entries], [""] * len(entries), tables.SOURCE_SITEMAP)
        b["lastmod"] = [lm for _, lm in entries]
        bundles.append(b)
    if children:
        bundles.append(link_bundle(page, children, [""] * len(children), tables.SOURCE_SITEMAP_FILE))
    return bundles


def _document(page, doc, body, reason, visited, config, filtered):
    """A parsed document into `visited`; returns (link bundles, body to store). X-Robots-Tag
    applies to every format, meta robots to HTML; a parser's reason joins the fetch's."""
    html = doc.html
    flags = robots_directives(html.meta_robots if html is not None else None, page.get("x_robots_tag"))
    visited.update(title=doc.title, canonical=doc.canonical,
                   outlinks=len(doc.links) + len(doc.sitemaps),
                   meta_robots=",".join(sorted(flags)) or None,
                   text_fp=contentseen.text_fingerprint(doc.text), text_chars=len(doc.text),
                   description=doc.description, language=doc.language,
                   published=doc.published, modified=doc.modified)
    if html is not None:
        visited["charset"] = html.charset
    if doc.reason:
        visited["reason"] = f"{reason}; {doc.reason}" if reason else doc.reason
    if config.minhash:  # host template dropped, then signed in batches by visited_table
        visited[BLOCKS_FOR_MINHASH] = doc.blocks
        visited[BLOCK_FPS] = block_fps(doc.blocks)   # hashed once: host template and signing
    bundles = []
    if "nofollow" not in flags or config.ignore_meta_nofollow:
        if doc.links:
            source = tables.SOURCE_SITEMAP if doc.type == sniff_mod.SITEMAP else tables.SOURCE_LINK
            bundle = link_bundle(page, doc.links, doc.anchors, source)
            if doc.lastmod and any(lm is not None for lm in doc.lastmod):
                bundle["lastmod"] = list(doc.lastmod)
            bundles.append(bundle)
        if doc.sitemaps:
            bundles.append(link_bundle(page, doc.sitemaps, [""] * len(doc.sitemaps),
                                       tables.SOURCE_SITEMAP_FILE))
    if config.focus is not None:   # relevance, link scores; links past the depth bound
        bundles, stopped = focus_page(page, doc.text, bundles, visited, config.focus)
        filtered.extend(stopped)
    if "noindex" in flags and not config.ignore_meta_noindex:
        body = b""
    return bundles, body


def _parse_limits(config, page):
    deep_web = ("results" if page.get("source") == tables.SOURCE_FORM else "forms") if config.deep_web else ""
    return dataclasses.replace(config.documents, honour_nofollow=config.honour_nofollow,
                               ignore_meta_nofollow=config.ignore_meta_nofollow, deep_web=deep_web)


def _deep_web(page, doc):
    """The page's forms and result digest for the deep-web stage (None when it has neither);
    a result page's links to its own endpoint are taken out of `doc` (the stage decides)."""
    html = doc.html
    if html is None or not (html.forms or html.result is not None):
        return None
    forms = html.forms if html.result is None else []   # a result page repeats its form
    if html.result is not None:
        own = page["url"].split("?", 1)[0]
        keep = [i for i, u in enumerate(doc.links) if u.split("?", 1)[0] != own]
        doc.links, doc.anchors = [doc.links[i] for i in keep], [doc.anchors[i] for i in keep]
    key = request_key(page["url"], page.get("method"), page.get("request_body"))   # a POST's own key
    return {"url": key, "fp": page["fp"], "host": page.get("host"),
            "depth": int(page.get("depth") or 0), "forms": forms, "result": html.result,
            "words": forms_mod.page_words(doc.text) if forms else [],
            "links": doc.links[:500] if forms else []}


def page_fate(page: dict, config: PageConfig) -> PageFate:
    """What the round keeps of one fetched page (see the module docstring)."""
    outcome, reason, retry = classify(page, config.now, config.max_retries, config.retry_backoff,
                                      config.max_redirects)
    if retry is not None:
        return PageFate(result=dict(fp=page["fp"], final=False, **retry),
                        archived=archived_capture(page, []) if config.archive else None)
    fate = PageFate(result=dict(fp=page["fp"], final=True))
    body = page.get("body") or b""
    visited = {k: page.get(k) for k in VISITED_FROM_PAGE}
    visited.update({k: page[k] for k in RENDER_FROM_PAGE + POST_FROM_PAGE if page.get(k) is not None})
    visited.update(round=config.round_no, outcome=outcome, reason=reason, bytes=len(body),
                   redirect_to=page.get("redirect_to"))
    if outcome == tables.FORBIDDEN_ADDRESS:   # refused by a setting: retried once it changes
        visited["refused_by"] = config.guard_signature
    bundles, noindex = [], False
    if outcome == tables.REDIRECT and page.get("redirect_to"):
        target = urls_mod.normalize(page["redirect_to"])
        if target:
            visited["redirect_to"] = target
            bundles.append(link_bundle(page, [target], [""], tables.SOURCE_REDIRECT))
            if page.get("method") and page.get("http_status") in (307, 308):   # 301/302/303: GET
                bundles[-1].update(method=page["method"], request_body=[page.get("request_body") or ""])
            if config.focus is not None:
                carry_redirect(page, bundles[-1])
    elif outcome == tables.OK and body and page.get("source") == tables.SOURCE_SITEMAP_FILE:
        bundles = _sitemap_bundles(page, body, visited)
    elif outcome == tables.OK and body:
        visited["content_fp"] = contentseen.body_fingerprint(body, page["url"])
        ctype = (page.get("content_type") or "").lower()
        kind = visited["doc_type"] = sniff_mod.sniff(body, ctype)
        if kind == sniff_mod.OCTET and (ctype in HTML_TYPES or not ctype):
            why = "binary body served as html" if ctype else "binary body"
            visited["reason"] = f"{reason}; {why}" if reason else why
        else:
            doc = parse_document(body, page["url"], kind, _parse_limits(config, page),
                                 page.get("content_type_header"))
            if doc is not None and config.deep_web:
                fate.deepweb = _deep_web(page, doc)
            if doc is not None:
                bundles, body = _document(page, doc, body, reason, visited, config, fate.filtered)
                noindex = not body
        if config.store_pages and body:
            fate.stored = {"fp": page["fp"], "url": page["url"], "round": config.round_no,
                           "content_type": page.get("content_type"), "body": body}
    fate.visited = visited
    if config.archive and not noindex:
        fate.archived = archived_capture(page, bundles)
    for bundle in bundles:
        kept, filtered = filter_bundle(bundle, config.url_filter)
        if kept:
            fate.links.append(kept)
        if filtered:
            fate.filtered.append(filtered)
    return fate
