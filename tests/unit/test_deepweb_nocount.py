"""ISIT on a site whose result pages state no count (#17): a sort input shows other records
first, so its first pages differ; the second look (strategies/deepweb/ordercheck.py)
compares record sets inside narrower queries whose whole list fits on a page."""
import pytest

from strategies.deepweb import ordercheck, planner
from tests.simweb import build_web
from tests.unit.deepweb_fake import probe

JOBS = "http://jobs.simweb.test/"


def _q(records, next_=None, count=None):
    return {"state": "done", "records": records, "next": next_, "count": count}


def test_suspect_needs_no_count_and_a_list_that_goes_on():
    qs = {"b": _q([1, 2], "b2"), "s1": _q([3, 4], "s2"), "c": _q([1, 2], "b2", count=40)}
    assert ordercheck.suspect(qs, {"samples": ["s1"]}, "b")
    assert not ordercheck.suspect(qs, {"samples": ["s1"]}, "c")             # a count is stated
    assert not ordercheck.suspect({"b": _q([1, 2]), "s1": _q([2])}, {"samples": ["s1"]}, "b")


def test_order_marginal_compares_record_sets_of_whole_lists():
    qs = {"ctx": _q([1, 2, 3]), "same": _q([3, 1, 2]), "fewer": _q([1]), "broad": _q([1, 2], "p2"),
          "on": _q([1, 2, 3], "p2")}
    assert ordercheck.order_marginal(qs, [["ctx", "same"]]) == 0.0
    assert ordercheck.order_marginal(qs, [["ctx", "same"], ["ctx", "fewer"]]) == 0.5
    assert ordercheck.order_marginal(qs, [["ctx", "on"]]) == 1.0            # the list now goes on
    assert ordercheck.order_marginal(qs, [["broad", "same"]]) is None        # context not whole


def test_plan_uses_whole_samples_first_then_made_contexts():
    form = {"inputs": [{"name": "c", "default": ""}, {"name": "s", "default": "date"}]}
    inputs = {"c": ["x", "y"], "s": ["date", "salary", "title"]}
    temps = {"c": {"dim": 1, "samples": ["u1", "u2"], "values": [{"c": "x"}, {"c": "y"}]}}
    qs = {"u1": _q([1, 2, 3]), "u2": _q([4], None)}                          # u2 lists one record
    assert ordercheck.plan(form, inputs, temps, qs, "s") == [
        ({"c": "x"}, {"c": "x", "s": "salary"}), ({"c": "x"}, {"c": "x", "s": "title"})]


@pytest.fixture(scope="module")
def web():
    return build_web("small", seed=1, n_records=800, jobs_count=False)


def _level_one(web):
    state, stats = probe(web, JOBS, planner.ProbeConfig(keywords=False))
    temps = state["templates"][next(iter(state["templates"]))]
    return temps, stats


def test_sort_fails_on_a_site_without_a_count(web):
    temps, stats = _level_one(web)
    assert temps["sort"]["status"] == "uninformative" and temps["sort"]["order_marginal"] == 0.0
    assert not [n for n in temps if "sort" in n.split(",") and temps[n]["status"] != "uninformative"]
    for name in ("category", "industry", "city"):                # filters pass the second look
        assert temps[name]["order_marginal"] >= 0.2 and temps[name]["status"] != "uninformative"
    truth = set(web.ground_truth()["records"].column("url").to_pylist())
    assert stats["reached"] >= truth


def test_without_the_second_look_sort_passes_on_first_pages(web, monkeypatch):
    monkeypatch.setattr(ordercheck, "suspect", lambda *a: False)
    temps, _ = _level_one(web)
    assert temps["sort"]["status"] != "uninformative"       # what the second look corrects
