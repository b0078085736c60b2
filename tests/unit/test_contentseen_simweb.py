"""Content-seen on the medium simulated web, rendered in-process (no server).

Every URL of the ground truth is "fetched" with `SimWeb.respond` at one fixed time, in four
rounds (a seeded random assignment, so duplicates meet across rounds), parsed with
transforms.parse, and run through transforms.contentseen's pure functions round by round
against the earlier rounds, as the round pipeline does with the visited view.

Truth: two 200 responses are the same content when the model served the same document
(`Response.page`): a mirror host's copy or a query-order variant of a page. Planted
near-duplicates (`dup_kind == "near"`) are a copy of another document with a small edit;
their near-duplicate group is the document they copy. Two near copies of one document
are rendered with the same edit, so when their bytes on their own host are identical
(but for a self-referencing rel=canonical tag) they are one content too: the model's index
tells them apart, their bodies do not.
"""
from __future__ import annotations

import re

import numpy as np
import pyarrow as pa
import pytest

from transforms.contentseen import duplicates as contentseen_duplicates
from transforms.contentseen import fingerprints as contentseen_fingerprints
from transforms.page import parse as parse_mod

ROUNDS = 4
NOW = 1769904000.0 + 3600.0


def _fetch_all(web):
    """One row per 200 response of a ground-truth URL: url, host, page, body fp, text."""
    pages = web.ground_truth()["pages"]
    rows = []
    for url, host, status in zip(pages.column("url").to_pylist(), pages.column("host").to_pylist(),
                                 pages.column("status").to_pylist()):
        if status != 200:
            continue
        target = url.split("://", 1)[1]
        target = target[target.index("/"):] if "/" in target else "/"
        r = web.respond(host, target, {}, now=NOW)
        if r.status != 200:
            continue
        ctype = dict(r.headers).get("Content-Type", "")
        text = ""
        if ctype.startswith("text/html"):
            text = parse_mod.parse_html(r.body, url, ctype).text
        page = int(r.page) if r.page is not None else -1
        key = page
        if page >= 0 and web.dup_of[page] >= 0:      # near copy: (original, bytes on its own host)
            own = web.hosts[web.page_host[page]].name
            body = r.body if own == host else web.respond(own, target, {}, now=NOW).body
            key = ("near", int(web.dup_of[page]), re.sub(rb"<link rel=\"canonical\"[^>]*>", b"", body))
        rows.append(dict(url=url, host=host, page=page, key=key,
                         content_fp=contentseen_fingerprints.body_fingerprint(r.body, url),
                         text_fp=contentseen_fingerprints.text_fingerprint(text), text=text))
    return rows


@pytest.fixture(scope="module")
def medium():
    from tests.simweb import build_web
    web = build_web("medium", seed=1)
    rows = _fetch_all(web)
    rng = np.random.default_rng(11)
    rnd = rng.integers(1, ROUNDS + 1, size=len(rows))
    for i, r in enumerate(rows):
        r["round"] = int(rnd[i])
        r["fp"] = hash_url(r["url"])
        r["page_key"] = r["key"] if r["page"] >= 0 else -(i + 1)   # unknown page: unique
    return web, rows


def hash_url(url: str) -> int:
    import hashlib
    return int.from_bytes(hashlib.blake2b(url.encode(), digest_size=8).digest(), "big", signed=True)


def _table(rows, cols):
    return pa.Table.from_pylist([{c: r[c] for c in cols} for r in rows])


def _exact_by_round(rows, key):
    dups = []
    for rnd in range(1, ROUNDS + 1):
        new = [r for r in rows if r["round"] == rnd]
        old = [r for r in rows if r["round"] < rnd]
        d = contentseen_duplicates.exact_duplicates(_table(new, ["fp", "url", "host", key]),
                                _table(old, ["fp", "url", "host", "round", key]) if old else None,
                                rnd, key)
        dups.append(d)
    return pa.concat_tables(dups)


def _exact_scores(rows, dups):
    by_url = {r["url"]: r for r in rows}
    flagged = dups.to_pylist()
    tp = sum(by_url[d["url"]]["page_key"] == by_url[d["duplicate_of"]]["page_key"] for d in flagged)
    counts = {}
    for r in rows:
        counts[r["page_key"]] = counts.get(r["page_key"], 0) + 1
    expected = sum(c - 1 for c in counts.values())
    return tp, len(flagged) - tp, expected


def test_exact_duplicates_find_mirror_hosts_and_never_flag_distinct_pages(medium):
    web, rows = medium
    dups = _exact_by_round(rows, "content_fp")
    tp, false_flags, expected = _exact_scores(rows, dups)
    print(f"\nexact (normalised body): {tp} true of {expected} expected, {false_flags} false flags")
    assert false_flags == 0
    assert expected > 100 and tp / expected >= 0.99
    # every mirror host: >= 99 % of its pages are in a flagged pair with their original
    flagged_urls = set(dups.column("url").to_pylist()) | set(dups.column("duplicate_of").to_pylist())
    truth_hosts = web.ground_truth()["hosts"]
    mirrors = [h for h, k in zip(truth_hosts.column("host").to_pylist(),
                                 truth_hosts.column("kind").to_pylist()) if k == "mirror"]
    assert mirrors
    for m in mirrors:
        mine = [r["url"] for r in rows if r["host"] == m]
        share = sum(u in flagged_urls for u in mine) / len(mine)
        print(f"mirror {m}: {len(mine)} pages, {share:.3f} flagged")
        assert share >= 0.99
    # and the round reports name them
    suspected = {(a, b) for a, b, _ in contentseen_duplicates.suspect_mirrors(dups, min_pages=3)}
    origin = dict(zip(truth_hosts.column("host").to_pylist(), truth_hosts.column("mirror_of").to_pylist()))
    assert {frozenset(p) for p in suspected} == {frozenset((m, origin[m])) for m in mirrors}


def test_near_duplicates_precision_and_recall_on_planted_copies(medium):
    web, rows = medium
    dups = _exact_by_round(rows, "content_fp")
    dup_urls = set(dups.column("url").to_pylist())
    reps = [r for r in rows if r["url"] not in dup_urls and r["text"]]
    sigs, has = contentseen_fingerprints.minhash_signatures([r["text"] for r in reps])
    group = {}
    for r in reps:
        i = r["page"]
        group[r["url"]] = int(web.dup_of[i]) if i >= 0 and web.dup_of[i] >= 0 else r["page_key"]
    bands, rws = contentseen_fingerprints.LSH_PARAMS
    found = set()
    for rnd in range(1, ROUNDS + 1):
        idx = [k for k, r in enumerate(reps) if r["round"] <= rnd and has[k]]
        sub = [reps[k] for k in idx]
        t = pa.table({"fp": [r["fp"] for r in sub], "url": [r["url"] for r in sub],
                      "round": pa.array([r["round"] for r in sub], pa.int32()),
                      "minhash": contentseen_fingerprints.signature_column(sigs[idx])})
        is_new = np.array([r["round"] == rnd for r in sub])
        new_t, old_t = t.filter(pa.array(is_new)), t.filter(pa.array(~is_new))
        nb, keys = contentseen_duplicates._band_rows(new_t, bands, rws, 128, True)
        if nb is None:
            continue
        ob, _ = contentseen_duplicates._band_rows(old_t, bands, rws, 128, False, keep_keys=np.unique(keys)) \
            if old_t.num_rows else (None, None)
        for p in contentseen_duplicates.candidate_pairs([nb, ob], bands, rws, 128, 0.9, contentseen_fingerprints.MAX_GROUP):
            found.add((p[1], p[4]))
    members = {}
    for r in reps:
        members.setdefault(group[r["url"]], []).append(r)
    true_pairs = {frozenset((a["url"], b["url"])) for ms in members.values() for a in ms for b in ms
                  if a["url"] < b["url"] and a["page_key"] != b["page_key"]}
    tp = sum(frozenset(p) in true_pairs for p in found)
    precision = tp / max(1, len(found))
    recall = tp / max(1, len(true_pairs))
    print(f"\nnear-duplicates: {len(found)} pairs found, {len(true_pairs)} planted, "
          f"precision {precision:.3f} recall {recall:.3f}")
    assert len(true_pairs) > 20
    assert precision >= 0.95 and recall >= 0.90
