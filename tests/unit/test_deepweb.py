"""Deep web (#17): forms and result digests from the page parse, ISIT's informativeness
test, keyword probing and the per-host planner, against the simulated web in memory."""
import pytest

from strategies.deepweb import isit, keywords, pagination, planner, templates as tpl
from tests.simweb import build_web
from tests.unit.deepweb_fake import fetch, form_of, judge_template, probe
from transforms.page.parse import parse_html

JOBS, LIBRARY = "http://jobs.simweb.test/", "http://library.simweb.test/"


@pytest.fixture(scope="module")
def web():
    return build_web("small", seed=1, n_records=800, library=True, library_records=1500,
                     library_vocab=1500, library_max_results=300)


def test_forms_of_both_sites_with_their_inputs(web):
    jobs = form_of(web, JOBS)
    kinds = {i["name"]: i["kind"] for i in jobs["inputs"]}
    assert kinds == {"q": "text", "category": "select", "industry": "select", "city": "select",
                     "sort": "select"}
    assert jobs["action"] == "http://jobs.simweb.test/search" and jobs["method"] == "get"
    assert tpl.binding_inputs(jobs)["sort"] == ["date", "salary", "title"]
    _, page = fetch(web, LIBRARY, "forms")
    lib, post = page.forms
    kinds = {i["name"]: (i["kind"], i["default"]) for i in lib["inputs"]}
    assert kinds == {"src": ("hidden", "home"), "terms": ("text", ""), "fmt": ("radio", "all"),
                     "avail": ("checkbox", ""), "order": ("select", "rel")}
    assert [i["values"] for i in lib["inputs"] if i["name"] == "fmt"] == [["all", "book", "ebook", "audio"]]
    assert post["method"] == "post" and post["action"] == "http://library.simweb.test/suggest"
    assert tpl.submission_url(lib, {"terms": "x", "avail": "1"}) == \
        "http://library.simweb.test/catalogue/find?src=home&terms=x&fmt=all&avail=1&order=rel"


def test_no_forms_unless_asked(web):
    r, _ = fetch(web, JOBS, "forms")
    assert parse_html(r.body, JOBS).forms == [] and parse_html(r.body, JOBS).result is None


def test_result_digest_lists_records_count_and_next_on_either_layout(web):
    _, p = fetch(web, JOBS + "search?category=Sales", "results")
    d = p.result
    truth = [r for r in web.records.rows if r["category"] == "Sales"]
    assert d["count"] == len(truth) and len(d["records"]) == 10
    assert all("/job/" in u for u in d["records"]) and d["next"].endswith("category=Sales&page=2")
    _, p = fetch(web, LIBRARY + "catalogue/find?terms=&fmt=book", "results")
    d = p.result
    assert len(d["records"]) == 20 and all("/item/b" in u for u in d["records"])
    assert d["next"].endswith("start=20") and d["count"] == sum(f == "book" for f in web._library.fmt)
    assert all(len(w) >= 3 for w in d["words"])


def _fate(web, url, source):
    from schemas import tables
    from transforms.page.fate import PageConfig, page_fate
    r, _ = fetch(web, url, "")
    page = {"fp": 1, "url": url, "host": "jobs.simweb.test", "depth": 1, "http_status": r.status, "outcome": "ok",
            "body": r.body, "content_type": "text/html", "fetch_time": 0.0,
            "source": {"form": tables.SOURCE_FORM}.get(source, source)}
    return page_fate(page, PageConfig(round_no=1, now=0.0, deep_web=True))


def test_page_step_hands_forms_and_results_to_the_stage(web):
    fate = _fate(web, JOBS, "link")
    assert [f["action"] for f in fate.deepweb["forms"]] == [JOBS + "search"]
    assert fate.deepweb["result"] is None and "positions" in fate.deepweb["words"]
    fate = _fate(web, JOBS + "search?category=Sales", "form")
    links = [u for b in fate.links for u in b["dst"]]
    assert fate.deepweb["forms"] == [] and len(fate.deepweb["result"]["records"]) == 10
    assert [u for u in links if "/job/" in u] == fate.deepweb["result"]["records"]
    assert not [u for u in links if "/search" in u], "the next page is the stage's to queue"
    assert _fate(web, JOBS + "search?category=Sales", "link").deepweb["result"] is None   # not a submission


def test_sort_order_does_not_change_the_signature_and_a_filter_does(web):
    sig = lambda q: fetch(web, JOBS + "search?" + q, "results")[1].result["signature"]  # noqa: E731
    assert sig("sort=salary") == sig("sort=title") == sig("sort=date") == sig("")
    assert sig("category=Sales") != sig("") != sig("category=Legal")


def test_informativeness_needs_what_each_input_adds():
    same = [({"sort": v}, 7) for v in ("date", "salary", "title")]
    assert not isit.informativeness(["sort"], same, lambda v: 7)["informative"]
    cats = [({"c": str(i)}, i) for i in range(12)]
    assert isit.informativeness(["c"], cats, lambda v: 99)["informative"]
    # {c, sort}: distinct across c, but sort adds nothing within a c
    both = [({"c": str(i), "sort": s}, i) for i in range(6) for s in ("a", "b")]
    got = isit.informativeness(["c", "sort"], both, lambda v: int(v["c"]) if "c" in v else 99)
    assert got["marginal"]["sort"] == 0 and not got["informative"]
    assert got["share"] >= 0.2   # the distinct share alone would have passed it


@pytest.mark.parametrize("template", [("sort",), ("category", "sort"), ("city", "sort"),
                                      ("category", "industry", "sort")])
def test_templates_with_sort_fail_on_the_jobs_site(web, template):
    got = judge_template(web, form_of(web, JOBS), template, planner.ProbeConfig())
    assert not got["informative"] and got["marginal"]["sort"] < 0.2, got


@pytest.mark.parametrize("template", [("category",), ("city",), ("category", "industry")])
def test_binding_templates_pass_on_the_jobs_site(web, template):
    assert judge_template(web, form_of(web, JOBS), template, planner.ProbeConfig())["informative"]


def test_apriori_extends_only_informative_templates():
    inputs = {"a": ["1", "2"], "b": ["1", "2"], "c": ["1", "2"], "s": ["x", "y"]}
    assert tpl.extensions([("a",), ("b",), ("c",)], inputs, 2) == [("a", "b"), ("a", "c"), ("b", "c")]
    assert tpl.extensions([("a", "b"), ("a", "c")], inputs, 3) == []     # (b, c) was not informative
    assert tpl.extensions([("a", "b"), ("a", "c"), ("b", "c")], inputs, 3) == [("a", "b", "c")]


def test_pagination_from_the_first_page():
    pages = pagination.result_pages("http://h/s?c=1", "http://h/s?c=1&page=2", 35, 10)
    assert pages == ["http://h/s?c=1&page=2", "http://h/s?c=1&page=3", "http://h/s?c=1&page=4"]
    pages = pagination.result_pages("http://h/f?t=x", "http://h/f?t=x&start=20", 50, 20)
    assert pages == ["http://h/f?t=x&start=20", "http://h/f?t=x&start=40"]
    assert pagination.result_pages("http://h/s?a=1", "http://h/s?a=2&b=3", 50, 10) == ["http://h/s?a=2&b=3"]
    assert pagination.result_pages("http://h/s?a=1", "http://h/s?a=1&p=2", None, 10) == ["http://h/s?a=1&p=2"]


def test_next_words_prefer_frequent_mined_words_then_seeds():
    df = {}
    keywords.count_new_words(df, [["alpha", "beta"], ["alpha"], ["gamma", "alpha", "alpha"]])
    assert df == {"alpha": 3, "beta": 1, "gamma": 1}
    assert keywords.next_words(["alpha"], df, ["zeta"], 3) == ["beta", "gamma", "zeta"]
    assert keywords.next_words([], {}, ["zeta", "eta"], 1) == ["zeta"]
    assert keywords.seed_words((), ["the", "jobs", "a1b", "search", "engineering"]) == ["jobs", "engineering"]


def _truth(web, table):
    return set(web.ground_truth()[table].column("url").to_pylist())


def test_isit_reaches_the_jobs_records_with_few_submissions(web):
    state, stats = probe(web, JOBS, planner.ProbeConfig(keywords=False))
    product = 12 * 10 * 20
    truth = _truth(web, "records")
    assert len(stats["reached"] & truth) >= 0.9 * len(truth)
    assert stats["submissions"] <= 0.1 * product
    temps = state["templates"][next(iter(state["templates"]))]
    assert temps["sort"]["status"] == "uninformative"
    assert not [n for n in temps if "sort" in n.split(",") and temps[n]["status"] != "uninformative"]


def test_keyword_probing_alone_reaches_the_library(web):
    from tests.simweb.library import catalogue
    seed = catalogue(web).vocab[30]
    state, stats = probe(web, LIBRARY, planner.ProbeConfig(templates=False, seed_words=(seed,)))
    truth = _truth(web, "library_records")
    assert len(stats["reached"] & truth) >= 0.9 * len(truth)
    assert stats["submissions"] <= 100
    assert not [u for u in state["queries"] if "/suggest" in u], "a POST form was submitted"
    kw = next(f["kw"] for f in state["forms"].values() if f.get("kw"))
    assert kw["used"][0] == seed and kw["batches"][-1]["new"] == 0   # stopped: nothing new


def test_budget_caps_submissions(web):
    state, stats = probe(web, LIBRARY, planner.ProbeConfig(budget=7))
    assert stats["submissions"] == 7 == state["sent"]


def test_post_forms_are_never_submitted(web):
    """With budget to spare (the GET form is done before it is spent, so the budget is not
    what stops a POST), nothing emitted or recorded as sent targets the POST form (a POST's
    query key is "POST <url> <body>"): its phase stays 'post'."""
    budget = 100
    state, stats = probe(web, LIBRARY, planner.ProbeConfig(budget=budget))
    post = "http://library.simweb.test/suggest"
    phases = {f["action"]: f["phase"] for f in state["forms"].values()}
    assert phases[post] == "post"
    assert len(stats["urls"]) >= state["sent"] and [u for u in stats["urls"] if post in u] == []
    assert [q for q in state["queries"] if post in q] == []
    assert state["sent"] < budget     # budget was left: it is not what kept the POST back


def test_a_form_reader_failure_costs_the_forms_not_the_links(monkeypatch):
    from transforms.page import forms
    body = b'<html><body><a href="/a">a</a><form action="/s"><select name="x"></select></form></body></html>'
    def boom(*a, **k):
        raise ValueError("unreadable form")
    monkeypatch.setattr(forms, "page_forms", boom)
    p = parse_html(body, "http://h.test/", deep_web="forms")
    assert p.links == ["http://h.test/a"] and p.forms == []
