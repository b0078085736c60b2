"""A fetched page's outcome: final, or a retry with backoff (pure)."""

from schemas import tables
from transforms.fetch.records import TRANSIENT


def classify(page, now, max_retries, retry_backoff, max_redirects):
    """(final_outcome or None, reason, retry_state or None) for a fetched page.

    Transient failures are retried in later rounds with exponential backoff (at least the
    server's Retry-After) until `max_retries`, then end as FAILED with the last reason. A
    redirect reached through more than `max_redirects` hops ends as TOO_MANY_REDIRECTS.
    """
    outcome, reason = page["outcome"], page.get("reason")
    if outcome == TRANSIENT:
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


def robots_directives(parsed_meta, header):
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
    urls, _anchors = bundle["dst"], bundle.get("anchor") or [""] * len(bundle["dst"])
    bundle.get("lastmod")
    reasons = url_filter.reasons(urls, [bundle["depth"]] * len(urls))
    if bundle.get("source") == tables.SOURCE_SITEMAP_FILE:
        reasons = [None if r == "extension" else r for r in reasons]
