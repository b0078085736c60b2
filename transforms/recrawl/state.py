"""Revisit scheduling state (schemas.tables.RECRAWL), pure.

Invariant (docs/round.md "Guarantees"): every URL ever discovered is in exactly one of
frontier, visited or filtered; a visited page is never back in the frontier. In
incremental mode, when it is due again is said by its latest `recrawl` row: the policy
(strategies/recrawl) gives it a revisit frequency f from its estimated change rate, and it
is due once (now − last_visit) × f ≥ 1 (or a sitemap lastmod is newer than its last visit).
A round appends one row per page it visited; the latest row of a fp wins.
"""
from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from schemas import tables
from strategies.recrawl.base import PageSet, due_priority, known_rates, within_rounds
from strategies.recrawl.bayes import posterior_rate
from strategies.recrawl.cluster import url_pattern
from strategies.recrawl.estimate import expected_freshness_now, expired, improved_rate
from transforms.generate.select import rank_within_group

KEEP_OUTCOMES = (tables.OK, tables.NOT_MODIFIED, tables.DUPLICATE)
DUE = 1.0 - 1e-9


def latest(state: pa.Table) -> pa.Table:
    """The state of each visited page: its latest visit row (highest round), with `lastmod`
    the newest of every row of the fp (sitemap hint rows have no last_visit)."""
    if state.num_rows == 0:
        return state
    lastmod = state.group_by("fp").aggregate([("lastmod", "max")])
    visits = state.filter(pc.is_valid(state.column("last_visit")))
    if visits.num_rows == 0:
        return visits
    order = pc.sort_indices(visits, sort_keys=[("fp", "ascending"), ("round", "descending")])
    s = visits.take(order)
    fp = s.column("fp").to_numpy(zero_copy_only=False)
    s = s.filter(pa.array(np.r_[True, fp[1:] != fp[:-1]]))
    idx = pc.index_in(s.column("fp"), value_set=lastmod.column("fp"))
    return s.set_column(s.schema.get_field_index("lastmod"), "lastmod",
                        lastmod.column("lastmod_max").take(idx))


def lastmod_hints(candidates: pa.Table, round_no: int) -> pa.Table:
    """RECRAWL hint rows (no last_visit) for candidates that carry a sitemap lastmod: a
    visited page whose lastmod is newer than its last visit is due (see `select_revisits`)."""
    c = candidates.filter(pc.is_valid(candidates.column("lastmod")))
    n = c.num_rows
    cols = {f.name: pa.nulls(n, f.type) for f in tables.RECRAWL}
    cols.update(fp=c.column("dst_fp"), url=c.column("dst"), host=c.column("host"),
                round=pa.array(np.full(n, round_no, np.int32)), lastmod=c.column("lastmod"))
    return pa.table(cols, schema=tables.RECRAWL)


def _np(t, name, fill):
    return t.column(name).fill_null(fill).to_numpy(zero_copy_only=False)


ESTIMATES = ("bayes", "improved")


def estimated_rates(state: pa.Table, estimate: str = "improved", cycle: float = 86400.0) -> np.ndarray:
    """Changes per second from (n, X, Σ intervals). `improved`: Cho & Garcia-Molina's
    improved estimator over the mean interval (strategies/recrawl/estimate.py), nan before
    the first revisit; `bayes`: the posterior mean under the rate distribution fitted over
    these pages (strategies/recrawl/bayes.py; its grid in changes per `cycle`)."""
    n = _np(state, "intervals", 0).astype(np.float64)
    total = _np(state, "interval_sum", 0.0).astype(np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        mean = np.where(n > 0, total / np.maximum(n, 1), np.nan)
    if estimate == "bayes":
        return posterior_rate(n, _np(state, "changes", 0), mean, scale=cycle)
    if estimate != "improved":
        raise ValueError(f"estimate must be one of {ESTIMATES}, not {estimate!r}")
    return improved_rate(n, _np(state, "changes", 0), mean)


def page_set(state: pa.Table, prior: float, estimate: str = "improved", cycle: float = 86400.0) -> PageSet:
    urls = state.column("url").to_pylist()
    return PageSet(
        rates=estimated_rates(state, estimate, cycle), weights=_np(state, "score", 0.0).astype(np.float64),
        groups=np.asarray(state.column("host").to_pylist()),
        features={"url_pattern": [url_pattern(u) for u in urls],
                  "content_type": state.column("content_type").to_pylist(),
                  "host": state.column("host").to_pylist(),
                  "depth": _np(state, "depth", 0), "size": _np(state, "bytes", 0)},
        visits=_np(state, "intervals", 0).astype(np.float64),
        changes=_np(state, "changes", 0).astype(np.float64), prior=prior)


def copy_stats(state: pa.Table, now: float, threshold: float) -> dict:
    """The seeds' expired set (estimated P(changed since the last visit) > threshold) and
    the estimated freshness of the copy (mean P(unchanged)), over active visited pages;
    pages without a rate estimate yet count with the mean estimated rate."""
    s = state.filter(pc.fill_null(state.column("active"), True)) if state.num_rows else state
    if s.num_rows == 0:
        return {"expired": 0, "estimated_freshness": None, "rated_pages": 0}
    rates = estimated_rates(s)
    elapsed = np.maximum(now - _np(s, "last_visit", now), 0.0)
    filled = known_rates(PageSet(rates), prior=0.0 if np.isnan(rates).all() else None)
    return {"expired": int(expired(filled, elapsed, threshold).sum()),
            "estimated_freshness": round(float(expected_freshness_now(filled, elapsed).mean()), 4),
            "rated_pages": int(np.isfinite(rates).sum())}


def first_phase(fps) -> np.ndarray:
    """A deterministic phase in (0, 1] per fp (splitmix64 of the fingerprint)."""
    x = np.asarray(fps, dtype=np.int64).view(np.uint64) + np.uint64(0x9E3779B97F4A7C15)
    with np.errstate(over="ignore"):
        x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        x = x ^ (x >> np.uint64(31))
    return ((x >> np.uint64(11)).astype(np.float64) + 1.0) / float(2 ** 53)


def select_revisits(state, now, budget, cycle, policy, max_per_host, explore=0.0, estimate="improved"):
    """(fetch-list rows of the due revisits, most overdue first, ≤ budget and ≤ max_per_host
    per host; stats). A page with a sitemap lastmod newer than its last visit is due first.
    `explore`: share of the budget spread uniformly over the pages whatever the policy.
    `estimate`: the rate estimate the policy sees (`estimated_rates`). No page gets more
    than one visit per round (`within_rounds`)."""
    s = state.filter(pc.fill_null(state.column("active"), True)) if state.num_rows else state
    if s.num_rows == 0 or budget <= 0:
        return None, {"revisits_due": 0}
    # a round-dependent order: the members `sampling` / `cluster` sample come first, so
    # their samples rotate from round to round (ties between equal priorities too)
    salt = np.int64(int(now // cycle) & 0x7FFFFFFF)
    s = s.take(pa.array(np.argsort(first_phase(_np(s, "fp", 0) ^ salt), kind="stable")))
    # never revisited: `improved` assumes one change per round, `bayes` the prior mean
    pages = page_set(s, prior=1.0 / cycle, estimate=estimate, cycle=cycle)
    rate = budget / cycle
    spread = min(explore * rate / len(pages), 1.0 / cycle)     # the explore share, per page
    freqs = spread + within_rounds(policy, pages, (1 - explore) * rate, cycle, 1.0 / cycle - spread)
    last = _np(s, "last_visit", now)
    # due once (now − last) × f ≥ φ: φ = 1 after a revisit; before a page's first revisit φ
    # is a phase in (0, 1] hashed from its fp, so pages first fetched together do not all
    # fall due in the same round (their first revisits spread over one period)
    # and a page is due in the round nearest its due time (half a gap early is as good as
    # half a gap late, and never sooner than half a gap after its last visit; always waiting for the round after it would visit every page less
    # often than its f, by up to a factor 2 for f near one visit per round)
    phase = np.where(_np(s, "intervals", 0) > 0, 1.0, first_phase(_np(s, "fp", 0)))
    overdue = due_priority(freqs, np.maximum(now - last, 0.0))
    prio = overdue / phase
    lastmod = _np(s, "lastmod", -np.inf)
    prio = np.where(lastmod > last, np.inf, prio)
    elapsed = np.maximum(now - last, 0.0)
    early = (freqs > 0) & (elapsed >= 0.5 * cycle) & (overdue + 0.5 * freqs * cycle >= phase * DUE)
    due_mask = (prio >= DUE) | early
    due = np.flatnonzero(due_mask)
    # the rest of the budget goes to the pages nearest their due time (f > 0 only, by the
    # same priority): Σ f is the budget, but rounds are discrete and estimates move, so
    # fewer than a budget's worth can fall due; an early visit beats an unspent one, and a
    # page the policy gives no visits (f = 0) is never filled in, nor one visited less
    # than half a round gap ago
    fill = np.flatnonzero(~due_mask & (freqs > 0) & (elapsed >= 0.5 * cycle))
    fill = fill[np.lexsort((_np(s, "fp", 0)[fill], -prio[fill]))]
    order = np.r_[due[np.lexsort((_np(s, "fp", 0)[due], -prio[due]))], fill].astype(np.int64)
    hosts = np.asarray(s.column("host").to_pylist(), dtype=object)[order]
    _, codes = np.unique(hosts.astype(str), return_inverse=True) if len(order) else (None, np.zeros(0, int))
    keep = order[rank_within_group(codes) < max_per_host][: int(budget)] if len(order) else order
    picked = s.take(pa.array(keep, type=pa.int64()))
    n = picked.num_rows
    rows = pa.table({
        "fp": picked.column("fp"), "url": picked.column("url"), "host": picked.column("host"),
        "depth": picked.column("depth"), "score": picked.column("score"),
        "discovered_round": picked.column("discovered_round"), "source": picked.column("source"),
        "first_parent": pa.nulls(n, pa.string()), "retries": pa.array(np.zeros(n, np.int32)),
        "redirects": pa.array(np.zeros(n, np.int32)), "inlinks": pa.array(np.zeros(n, np.int64)),
        "etag": picked.column("etag"), "last_modified": picked.column("last_modified")})
    return rows, {"revisits_due": int(len(due)), "revisits_scheduled": n}


def _prev_lookup(prev: pa.Table | None):
    if prev is None or prev.num_rows == 0:
        return {}
    return {r["fp"]: r for r in prev.to_pylist()}


def next_state(visited: pa.Table, prev_rows: dict, scores: dict, round_no: int, now: float):
    """(RECRAWL rows for this round's visited rows, stats). `prev_rows`: fp → the page's
    previous state row (revisits); `scores`: fp → fetch-list score. A change is detected by
    a full response whose body fingerprint (or, without one, ETag) differs from the last;
    a 304 is no change and costs no body (its last body size is counted as bytes saved)."""
    out, stats = [], {"revisited": 0, "not_modified": 0, "bytes_saved": 0, "changes_detected": 0}
    cols = ("fp", "url", "host", "outcome", "content_fp", "etag", "last_modified", "bytes",
            "depth", "discovered_round", "source", "content_type", "method")
    for r in visited.select([c for c in cols if c in visited.column_names]).to_pylist():
        if r.get("method"):
            continue          # a deep-web POST is never revisited: that would resubmit it
        prev = prev_rows.get(r["fp"])
        ok = r.get("outcome") in KEEP_OUTCOMES
        if prev is None and not ok:
            continue          # a first visit that found no page: nothing to schedule
        row = {"fp": r["fp"], "url": r["url"], "host": r["host"], "round": round_no,
               "last_visit": now, "active": ok, "score": scores.get(r["fp"], (prev or {}).get("score")),
               "depth": r.get("depth"), "discovered_round": r.get("discovered_round"),
               "source": r.get("source"), "lastmod": None}
        full = r.get("outcome") in (tables.OK, tables.DUPLICATE)
        if full:
            row.update(etag=r.get("etag"), last_modified=r.get("last_modified"),
                       content_fp=r.get("content_fp"), bytes=r.get("bytes"),
                       content_type=r.get("content_type"))
        elif prev is not None:
            row.update({k: prev.get(k) for k in ("etag", "last_modified", "content_fp", "bytes",
                                                 "content_type")})
        if prev is None:
            row.update(intervals=0, changes=0, interval_sum=0.0, changed=False)
        else:
            stats["revisited"] += 1
            changed = not ok     # gone (4xx, failed): the copy no longer matches
            if r.get("outcome") == tables.NOT_MODIFIED:
                stats["not_modified"] += 1
                stats["bytes_saved"] += int(prev.get("bytes") or 0)
            elif full:
                if r.get("content_fp") is not None and prev.get("content_fp") is not None:
                    changed = r["content_fp"] != prev["content_fp"]
                else:
                    changed = (r.get("etag") or "") != (prev.get("etag") or "")
            stats["changes_detected"] += int(changed)
            row.update(intervals=int(prev.get("intervals") or 0) + 1,
                       changes=int(prev.get("changes") or 0) + int(changed),
                       interval_sum=float(prev.get("interval_sum") or 0.0)
                       + max(now - (now if prev.get("last_visit") is None
                                    else float(prev["last_visit"])), 0.0),
                       changed=changed)
        out.append(row)
    table = pa.Table.from_pylist(out, schema=tables.RECRAWL) if out else tables.RECRAWL.empty_table()
    return table, stats
