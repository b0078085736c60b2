"""Refusals by a setting (docs/scope.md "Refused URLs"): signatures, URL-seen's rules for refusal
hits, the re-read of stale refusals, and the report's hint lines. Pure logic, no runner."""
import numpy as np
import pyarrow as pa

from pipelines import report as report_mod
from schemas import tables
from tests.unit.frontier_rows import frontier
from transforms.urls import canonical as urls_mod
from transforms.urls import refusals
from transforms.urls.scope import UrlFilter
from transforms.urlseen import merge as urlseen_merge
from transforms.urlseen.merge import FILTERED, HARD, REFUSED
from transforms.urlseen.readmit import readmission, stale_mask


def cands(rows):
    defaults = dict(host="a", depth=1, src_fp=7, src="p", anchor="", source="link",
                    redirects=0, lastmod=None)
    return pa.Table.from_pylist([{**defaults, **r} for r in rows], schema=tables.CANDIDATES)


def xcands(rows):
    defaults = dict(first_parent="p", depth=1, source="link")
    return pa.Table.from_pylist([{**defaults, **r} for r in rows], schema=tables.FILTERED_CANDIDATES)


def fps(table):
    return sorted(table.column("fp").to_pylist())


# ---------------------------------------------------------------- signatures

def test_a_scope_signature_changes_only_with_the_flag_behind_its_reason():
    a = refusals.scope_signatures(UrlFilter(allow_domains=("a.test",), max_depth=2))
    b = refusals.scope_signatures(UrlFilter(allow_domains=("a.test", "b.test"), max_depth=2))
    assert refusals.changed(b, a) == ["domain_not_allowed"]
    c = refusals.scope_signatures(UrlFilter(allow_domains=("a.test",), max_depth=3))
    assert refusals.changed(c, a) == ["depth"]
    assert refusals.changed(a, a) == []
    assert refusals.changed(a, None) == sorted(a)


def test_the_guard_signature_covers_loopback_denied_ranges_and_resolve_overrides():
    base = refusals.guard_signature(False, (), ())
    assert refusals.guard_signature(True, (), ()) != base
    assert refusals.guard_signature(False, ("10.0.0.0/8",), ()) != base
    assert refusals.guard_signature(False, (), (("h.test", 80, "127.0.0.2"),)) != base
    assert refusals.guard_signature(False, (), ()) == base


# ---------------------------------------------------------------- URL-seen's rules

def test_a_link_to_a_url_refused_by_the_current_guard_is_not_queued_but_a_seed_is():
    C = cands([dict(dst_fp=1, dst="u1"), dict(dst_fp=2, dst="u2", source="seed", src=None, src_fp=0)])
    out, _, stats = urlseen_merge.merge_bucket([], [(REFUSED, np.array([1, 2]))], [], [C], [], 5)
    assert fps(out) == [2]
    assert stats["links_to_seen"] == 1


def test_a_url_whose_only_record_is_a_stale_refusal_is_queued_again():
    # the probe does not report stale refusals at all: the URL is unseen
    C = cands([dict(dst_fp=1, dst="u1")])
    out, _, _ = urlseen_merge.merge_bucket([], [(HARD, np.array([9]))], [], [C], [], 5)
    assert fps(out) == [1]


def test_a_fetched_url_blocks_seeds_and_links_alike():
    C = cands([dict(dst_fp=1, dst="u1", source="seed", src=None, src_fp=0), dict(dst_fp=2, dst="u2")])
    out, _, _ = urlseen_merge.merge_bucket([], [(HARD, np.array([1, 2]))], [], [C], [], 5)
    assert out.num_rows == 0


def test_a_url_filtered_for_depth_is_queued_when_a_shorter_path_appears():
    C = cands([dict(dst_fp=3, dst="u3", depth=2)])     # kept by the filter at depth 2
    out, filtered, _ = urlseen_merge.merge_bucket([], [(FILTERED, np.array([3]))], [], [C], [], 5)
    assert fps(out) == [3] and out.column("depth").to_pylist() == [2]
    assert filtered.num_rows == 0


def test_a_url_already_filtered_by_the_current_settings_is_not_recorded_twice():
    X = xcands([dict(fp=3, url="u3", reason="depth", depth=5), dict(fp=4, url="u4", reason="depth", depth=5)])
    sigs = {"depth": "max_depth:abc"}
    _, filtered, _ = urlseen_merge.merge_bucket([], [(FILTERED, np.array([3]))], [], [], [X], 5, sigs)
    assert fps(filtered) == [4]
    row = filtered.to_pylist()[0]
    assert (row["refused_by"], row["depth"], row["source"], row["round"]) == ("max_depth:abc", 5, "link", 5)


def test_a_url_dropped_from_the_fetch_list_is_recorded_even_if_refused_before():
    F = frontier([dict(fp=1, url="u1", host="a")])
    R = pa.Table.from_pylist([dict(fp=1, final=True, dropped=True)], schema=tables.RESULTS)
    X = xcands([dict(fp=1, url="u1", reason="host_not_allowed", first_parent=None)])
    out, filtered, _ = urlseen_merge.merge_bucket([F], [(FILTERED, np.array([1]))], [R], [], [X], 6,
                                                  {"host_not_allowed": "allow_hosts:x"})
    assert out.num_rows == 0 and fps(filtered) == [1]


# ---------------------------------------------------------------- re-reading stale refusals

def test_stale_rows_are_refusals_by_settings_that_are_not_current():
    col = pa.array([None, "guard:old", "guard:new", "allow_hosts:x"])
    assert stale_mask(col, {"guard:new", "allow_hosts:x"}).tolist() == [False, True, False, False]


def test_readmission_keeps_what_the_current_filter_allows_and_refuses_the_rest_again():
    u1, u2, u3 = "http://a.test/x", "http://b.test/y", "http://a.test/s.xml"
    rows = pa.Table.from_pylist([
        dict(fp=0, url=u1, depth=0, first_parent=None, source=None, refused_by="g"),
        dict(fp=0, url=u2, depth=2, first_parent="http://a.test/", source="link", refused_by="g"),
        dict(fp=0, url=u3, depth=1, first_parent=None, source="sitemap_file", refused_by="g"),
    ])
    cand, again = readmission(rows, UrlFilter(allow_domains=("a.test",), deny_extensions=("xml",)))
    got = cand.to_pylist()
    assert [(r["dst"], r["depth"], r["source"], r["src"], r["src_fp"]) for r in got] == [
        (u1, 0, "seed", None, 0), (u3, 1, "sitemap_file", None, 0)]
    assert got[0]["dst_fp"] == int(urls_mod.fingerprints([u1])[0])
    assert got[0]["host"] == "a.test"
    assert again.to_pylist() == [dict(fp=int(urls_mod.fingerprints([u2])[0]), url=u2,
                                      reason="domain_not_allowed", first_parent="http://a.test/",
                                      depth=2, source="link")]


# ---------------------------------------------------------------- the report

def test_the_summary_says_which_setting_refused_urls_and_how_to_change_it():
    report = {"refused_by_guard": {"loopback": 1, "private": 2},
              "filtered_by_reason": {"domain_not_allowed": 3, "depth": 1}, "refusals_reread": 4}
    assert report_mod.refusal_hints(report) == [
        "  refused by the address guard (loopback): 1 URL; add --allow_loopback true to allow it",
        "  refused by the address guard (private): 2 URLs; no flag allows such addresses; "
        "check --resolve/--resolve_file or the host's DNS",
        "  refused by the scope (depth): 1 URL; raise --max_depth (0 = no limit) to allow them",
        "  refused by the scope (domain_not_allowed): 3 URLs; add their domains to --allow_domains "
        "(or clear it) to allow them",
        "  settings changed: 4 refused URLs judged again",
    ]
