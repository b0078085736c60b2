"""robots.txt: RFC 9309 matching (pure) and fetch semantics (against loopback servers)."""
import pickle

import pytest

from schemas.tables import OK, ROBOTS_DENIED
from tests.unit.httpfixtures import LocalServer, hang, loopback_config, page, status, trickle
from transforms.fetch.records import TRANSIENT, FetchRequest, HostState
from transforms.fetch.hostfetcher import HostFetcher
from transforms.fetch.robots import RobotsPolicy, decode_robots, product_token


UA = "beamcrawl/0.1 (+https://github.com/beamcrawl/beamcrawl)"


def allowed(rules: str, path: str, ua: str = UA) -> bool:
    return RobotsPolicy.parse(rules).allowed("http://a.test" + path, ua)


# ----------------------------------------------------------------- matching (pure)

def test_product_token():
    assert product_token(UA) == "beamcrawl"
    assert product_token("BeamCrawl-News/2") == "beamcrawl-news"


def test_group_matches_product_token_case_insensitively():
    rules = "User-agent: *\nDisallow: /\n\nUser-agent: BeamCrawl\nDisallow: /private\n"
    assert allowed(rules, "/page")
    assert not allowed(rules, "/private/x")


def test_falls_back_to_star_group():
    rules = "User-agent: otherbot\nDisallow: /\n\nUser-agent: *\nDisallow: /star-only\n"
    assert allowed(rules, "/x")
    assert not allowed(rules, "/star-only")


def test_group_named_by_a_prefix_or_the_ua_url_does_not_apply():
    rules = ("User-agent: beam\nDisallow: /\n\nUser-agent: github\nDisallow: /\n\n"
             "User-agent: *\nDisallow: /nothing\n")
    assert allowed(rules, "/x")


def test_groups_for_the_same_agent_are_merged():
    rules = "User-agent: beamcrawl\nDisallow: /a\n\nUser-agent: beamcrawl\nDisallow: /b\n"
    assert not allowed(rules, "/a") and not allowed(rules, "/b") and allowed(rules, "/c")


def test_user_agent_line_is_read_up_to_its_product_token_case_insensitively():
    # 'BEAMCRAWL Crawler' and 'beamcrawl/2.0' both name beamcrawl (as Google's parser reads them)
    for line in ("BEAMCRAWL Crawler", "beamcrawl/2.0", "BeamCrawl"):
        rules = f"User-agent: *\nDisallow: /\n\nUser-agent: {line}\nAllow: /ok\nDisallow: /\n"
        assert allowed(rules, "/ok/page"), line
        assert not allowed(rules, "/other"), line


def test_a_mozilla_compatible_user_agent_is_matched_on_the_bot_it_names():
    ua = "Mozilla/5.0 (compatible; BeamCrawl/1.0; +https://example.org/bot)"
    assert product_token(ua) == "beamcrawl"
    rules = "User-agent: beamcrawl\nDisallow: /private\n\nUser-agent: mozilla\nDisallow: /\n"
    assert allowed(rules, "/page", ua) and not allowed(rules, "/private/x", ua)


def test_a_crawler_family_falls_back_to_its_parent_group_but_not_to_a_prefix_word():
    rules = ("User-agent: beamcrawl\nDisallow: /family\n\nUser-agent: beam\nDisallow: /word\n"
             "\nUser-agent: *\nDisallow: /star\n")
    news = "beamcrawl-news/1.0"
    assert not allowed(rules, "/family", news) and allowed(rules, "/star", news)
    assert allowed(rules, "/word", UA) and not allowed(rules, "/family", UA)
    assert not allowed(rules, "/star", "beamcrawlers/1.0")   # another word: the * group


def test_star_followed_by_a_space_is_the_global_group():
    assert not allowed("User-agent: * # everyone\nDisallow: /x\n", "/x")
    assert not allowed("User-agent: * everyone\nDisallow: /x\n", "/x")


def test_rules_before_any_user_agent_line_are_ignored():
    rules = "Disallow: /orphan\nUser-agent: *\nDisallow: /x\n"
    assert allowed(rules, "/orphan") and not allowed(rules, "/x")


def test_an_unknown_line_ends_the_user_agent_list_a_sitemap_line_does_not():
    # after 'Foo-directive' the next User-agent line starts a new group: beamcrawl gets no rules
    rules = "User-agent: beamcrawl\nFoo-directive: x\nUser-agent: *\nDisallow: /\n"
    assert allowed(rules, "/page")
    rules = "User-agent: beamcrawl\nSitemap: http://a.test/s.xml\nUser-agent: *\nDisallow: /\n"
    assert not allowed(rules, "/page")
    assert RobotsPolicy.parse(rules).sitemaps == ["http://a.test/s.xml"]


def test_a_missing_colon_and_common_misspellings_are_read():
    assert not allowed("user-agent beamcrawl\ndisallow /x\n", "/x/y")
    assert not allowed("User-agent: *\nDissallow: /x\n", "/x")


def test_lines_end_at_cr_lf_or_crlf():
    for eol in ("\r", "\n", "\r\n"):
        rules = eol.join(["User-agent: other", "Disallow: /", "User-agent: *", "Disallow: /x", ""])
        assert not allowed(rules, "/x") and allowed(rules, "/y"), repr(eol)


def test_a_line_longer_than_the_limit_is_cut_there():
    from transforms.fetch.robots import ROBOTS_MAX_LINE
    head = "Disallow: /"
    long_path = "a" * (ROBOTS_MAX_LINE - len(head))   # the line ends exactly at the limit
    rules = f"User-agent: *\n{head}{long_path}zzz-cut-off\nAllow: /\n"
    assert not allowed(rules, "/" + long_path + "-something-else")   # the rule as cut
    assert allowed(rules, "/" + long_path[:-1] + "b")


def test_longest_match_wins():
    rules = "User-agent: *\nDisallow: /shop\nAllow: /shop/public\n"
    assert not allowed(rules, "/shop/cart")
    assert allowed(rules, "/shop/public/item")
    rules = "User-agent: *\nAllow: /a\nDisallow: /a/b\n"
    assert not allowed(rules, "/a/b/c") and allowed(rules, "/a/c")


def test_allow_beats_disallow_on_equal_length():
    rules = "User-agent: *\nDisallow: /page\nAllow: /page\n"
    assert allowed(rules, "/page")


def test_wildcard_and_end_anchor():
    rules = "User-agent: *\nDisallow: /*.pdf$\nDisallow: /*?session=\nDisallow: /exact$\n"
    assert not allowed(rules, "/docs/a.pdf")
    assert allowed(rules, "/docs/a.pdf?x=1")
    assert not allowed(rules, "/list?session=42")
    assert not allowed(rules, "/exact") and allowed(rules, "/exactly")


def test_percent_encoding_is_normalised():
    rules = "User-agent: *\nDisallow: /caf%C3%A9\n"
    assert not allowed(rules, "/café")


def test_robots_txt_itself_is_always_allowed():
    assert allowed("User-agent: *\nDisallow: /\n", "/robots.txt")
    assert allowed("User-agent: *\nDisallow: /\n", "/robots.txt?x=1")
    # only the path /robots.txt: the name elsewhere in the URL is no pass
    for other in ("/a/robots.txt", "/x?next=/robots.txt", "/robots.txt.bak", "/robots.txt/x", "/x#/robots.txt"):
        assert not allowed("User-agent: *\nDisallow: /\n", other), other


def test_one_policy_answers_each_user_agent_by_its_own_groups():
    """The rules are looked up once per User-Agent header, never shared between two."""
    p = RobotsPolicy.parse("User-agent: *\nDisallow: /\n\nUser-agent: beamcrawl\nDisallow: /private\n")
    for _ in range(2):
        assert p.allowed("http://a.test/page", "beamcrawl/0.1 (+https://x.test)")
        assert not p.allowed("http://a.test/private/p", "beamcrawl/0.1 (+https://x.test)")
        assert not p.allowed("http://a.test/page", "otherbot/2.0")


def test_crawl_delay_sitemaps_and_request_rate():
    p = RobotsPolicy.parse("Sitemap: https://a.test/sm.xml\nUser-agent: *\nCrawl-delay: 2.5\n"
                           "\nUser-agent: beamcrawl\nRequest-rate: 1/10\n")
    assert p.crawl_delay(UA) == 10.0
    assert p.crawl_delay("otherbot/1") == 2.5
    assert p.sitemaps == ["https://a.test/sm.xml"]


def test_states_and_pickle():
    assert RobotsPolicy.allow_all().allowed("http://a.test/x", UA)
    assert not RobotsPolicy.disallow_all().allowed("http://a.test/x", UA)
    p = pickle.loads(pickle.dumps(RobotsPolicy.parse("User-agent: *\nDisallow: /x\n")))
    assert not p.allowed("http://a.test/x", UA)
    with pytest.raises(ValueError):
        RobotsPolicy("maybe")


def test_truncated_robots_drops_the_partial_last_line():
    assert decode_robots(b"User-agent: *\nDisallow: /private-area", truncated=True) == "User-agent: *\n"
    assert decode_robots(b"\xef\xbb\xbfUser-agent: *\n") == "User-agent: *\n"


# ----------------------------------------------------------------- fetch semantics

def run(routes, paths, state=None, names=None, **cfg):
    with LocalServer(routes) as srv:
        host = f"site.test:{srv.port}"
        config = loopback_config({"site.test": srv, **(names or {})}, **cfg)
        with HostFetcher(config) as f:
            reqs = [FetchRequest(f"http://{host}{p}", i) for i, p in enumerate(paths)]
            results, new_state = f.fetch_host(host, reqs, state)
        return results, new_state, srv.paths()


def test_2xx_rules_apply_and_disallowed_path_is_never_fetched():
    results, state, seen = run({"/robots.txt": page(b"User-agent: *\nDisallow: /private\n", "text/plain"),
                                "*": page(b"<html>ok</html>")}, ["/private/a", "/public"])
    assert [r.outcome for r in results] == [ROBOTS_DENIED, OK]
    assert seen == ["/robots.txt", "/public"]
    assert state.robots_state == "parsed" and state.robots_status == 200
    assert state.robots_body.startswith("User-agent")


def test_3xx_is_followed_and_its_rules_apply():
    results, state, seen = run({
        "/robots.txt": status(301, headers={"Location": "/hop1"}),
        "/hop1": status(302, headers={"Location": "/real-robots.txt"}),
        "/real-robots.txt": page(b"User-agent: *\nDisallow: /x\n", "text/plain"),
        "*": page(b"ok")}, ["/x", "/y"])
    assert [r.outcome for r in results] == [ROBOTS_DENIED, OK]
    assert seen == ["/robots.txt", "/hop1", "/real-robots.txt", "/y"]


def test_more_than_five_robots_redirects_means_unavailable_allow_all():
    routes = {f"/r{i}": status(301, headers={"Location": f"/r{i + 1}"}) for i in range(10)}
    routes["/robots.txt"] = status(301, headers={"Location": "/r0"})
    routes["*"] = page(b"ok")
    results, state, seen = run(routes, ["/x"])
    assert results[0].outcome == OK
    assert state.robots_state == "allow_all"
    assert seen[:6] == ["/robots.txt", "/r0", "/r1", "/r2", "/r3", "/r4"] and "/r5" not in seen


def test_robots_redirect_to_a_forbidden_address_is_not_followed():
    with LocalServer({"/robots.txt": page(b"User-agent: *\nDisallow:\n")}, host="127.0.0.2") as evil:
        results, state, seen = run(
            {"/robots.txt": status(301, headers={"Location": f"http://evil.test:{evil.port}/robots.txt"}),
             "*": page(b"ok")}, ["/x"],
            names={"evil.test": evil}, deny_addresses=("127.0.0.2/32",))
        assert evil.connections == 0
    assert results[0].outcome == TRANSIENT and results[0].reason == "robots_forbidden_address"
    assert seen == ["/robots.txt"]


@pytest.mark.parametrize("code", [401, 403, 404, 410])
def test_4xx_allows_everything(code):
    results, state, seen = run({"/robots.txt": status(code), "*": page(b"ok")}, ["/a", "/b"])
    assert [r.outcome for r in results] == [OK, OK]
    assert state.robots_state == "allow_all" and state.robots_status == code


@pytest.mark.parametrize("code", [500, 503, 429])
def test_5xx_disallows_the_host_this_round_and_retries_next_round(code):
    routes = {"/robots.txt": status(code), "*": page(b"ok")}
    results, state, seen = run(routes, ["/a", "/b"])
    assert [r.outcome for r in results] == [TRANSIENT, TRANSIENT]
    assert {r.reason for r in results} == {"robots_429" if code == 429 else "robots_5xx"}
    assert seen == ["/robots.txt"]
    assert state.robots_state == "disallow_all"
    # next round: robots fetched again (a failure is not cached)
    results, state2, seen = run({"/robots.txt": status(404), "*": page(b"ok")}, ["/a"], state=state)
    assert seen == ["/robots.txt", "/a"] and results[0].outcome == OK


def test_timeout_disallows_the_host_this_round():
    results, state, seen = run({"/robots.txt": hang(), "*": page(b"ok")}, ["/a"], read_timeout=0.5)
    assert results[0].outcome == TRANSIENT and results[0].reason == "robots_timeout_read"
    assert seen == ["/robots.txt"] and state.robots_state == "disallow_all"
    assert state.errors == 1 and state.last_error == "robots_timeout_read"


def test_trickling_robots_is_cut_by_the_deadline():
    results, state, seen = run({"/robots.txt": trickle(b"User-agent: *\n", every=0.1), "*": page(b"ok")},
                               ["/a"], deadline=1.0)
    assert results[0].reason == "robots_deadline"


def test_only_the_first_500_kib_are_parsed():
    body = b"User-agent: *\nDisallow: /early\n" + (b"# padding padding padding\n" * 25000) + b"Disallow: /late\n"
    assert len(body) > 600 * 1024
    results, state, seen = run({"/robots.txt": page(body, "text/plain"), "*": page(b"ok")}, ["/early", "/late"])
    assert [r.outcome for r in results] == [ROBOTS_DENIED, OK]
    assert len(state.robots_body.encode()) <= 500 * 1024


def test_garbage_robots_allows_everything():
    garbage = bytes(range(256)) * 20 + b"<html><body>Not a robots file</body></html>"
    results, state, seen = run({"/robots.txt": page(garbage, "text/html"), "*": page(b"ok")}, ["/a"])
    assert results[0].outcome == OK and state.robots_state == "parsed"


def test_fresh_cached_robots_is_not_refetched_stale_is():
    import time
    cached = HostState(host="x", robots_status=200, robots_state="parsed",
                       robots_body="User-agent: *\nDisallow: /cached-rule\n", robots_fetched_at=time.time() - 60)
    routes = {"/robots.txt": page(b"User-agent: *\nDisallow: /new-rule\n"), "*": page(b"ok")}
    results, state, seen = run(routes, ["/cached-rule", "/new-rule"], state=cached)
    assert seen == ["/new-rule"] and [r.outcome for r in results] == [ROBOTS_DENIED, OK]
    cached.robots_fetched_at = time.time() - 2 * 86400
    results, state, seen = run(routes, ["/cached-rule", "/new-rule"], state=cached)
    assert seen == ["/robots.txt", "/cached-rule"] and [r.outcome for r in results] == [OK, ROBOTS_DENIED]


def test_obey_robots_off_skips_robots():
    results, state, seen = run({"/robots.txt": page(b"User-agent: *\nDisallow: /\n"), "*": page(b"ok")},
                               ["/a"], obey_robots=False)
    assert seen == ["/a"] and results[0].outcome == OK


# ----------------------------------------------------------------- unreachable for 30 days

DAY = 86400.0


def _unreachable_state(days, body="User-agent: *\nDisallow: /private\n"):
    import time
    now = time.time()
    return HostState(host="x", robots_status=503, robots_state="disallow_all", robots_body=body,
                     robots_fetched_at=now - 3600, robots_unreachable_since=now - days * DAY)


def test_unreachable_robots_keeps_the_last_copy_and_when_it_was_first_missed():
    results, state, seen = run({"/robots.txt": status(503), "*": page(b"ok")}, ["/public"])
    assert results[0].reason == "robots_5xx" and seen == ["/robots.txt"]
    assert state.robots_unreachable_since is not None
    first_missed = state.robots_unreachable_since
    state.robots_body = "User-agent: *\nDisallow: /private\n"   # as a copy reached before
    results, state, seen = run({"/robots.txt": status(503), "*": page(b"ok")}, ["/public"], state=state)
    assert results[0].reason == "robots_5xx"
    assert state.robots_unreachable_since == first_missed           # the streak goes on
    assert state.robots_body == "User-agent: *\nDisallow: /private\n"


def test_unreachable_for_less_than_30_days_still_disallows_everything():
    results, state, seen = run({"/robots.txt": status(500), "*": page(b"ok")}, ["/public"],
                               state=_unreachable_state(29))
    assert results[0].outcome == TRANSIENT and seen == ["/robots.txt"]


def test_unreachable_for_30_days_obeys_the_last_copy_reached():
    results, state, seen = run({"/robots.txt": status(500), "*": page(b"ok")}, ["/private/a", "/public"],
                               state=_unreachable_state(31))
    assert [r.outcome for r in results] == [ROBOTS_DENIED, OK]
    assert seen == ["/robots.txt", "/public"]
    assert state.robots_state == "parsed" and state.robots_unreachable_since is not None


def test_unreachable_for_30_days_with_no_copy_ever_reached_is_unavailable():
    results, state, seen = run({"/robots.txt": status(500), "*": page(b"ok")}, ["/private/a"],
                               state=_unreachable_state(31, body=None))
    assert results[0].outcome == OK and state.robots_state == "allow_all"


def test_reaching_robots_again_ends_the_streak():
    results, state, seen = run({"/robots.txt": page(b"User-agent: *\nDisallow: /new\n"), "*": page(b"ok")},
                               ["/new"], state=_unreachable_state(31))
    assert results[0].outcome == ROBOTS_DENIED and state.robots_unreachable_since is None
