"""End-to-end: a small vertical crawl with Shark-Search and a bounded frontier."""
import numpy as np
import pyarrow.compute as pc
import pytest

from pipelines import round as round_mod
from pipelines.crawldir import CrawlDir
from tests.e2e import crawlstate

TOPIC = "finance,stock,bond,market,dividend,equity"


@pytest.fixture(scope="module")
def vertical_crawl(simweb_small, tmp_path_factory):
    d = tmp_path_factory.mktemp("vertical") / "c"
    crawlstate.start_crawl(simweb_small, d, "--strategy", "shark_search", "--mode", "vertical",
                           "--topic", TOPIC, "--max_pages", "12", "--max_buffer", "20",
                           "--harvest_floor", "0.01")
    reports = crawlstate.run_rounds(d, "--rounds", "3")
    return CrawlDir(str(d)), reports, simweb_small


def test_pages_get_their_relevance_and_the_report_its_harvest(vertical_crawl):
    c, reports, web = vertical_crawl
    assert [r["round"] for r in reports] == [1, 2, 3]
    v = c.read_table("visited", 3, columns=["url", "outcome", "doc_type", "relevance"])
    ok = v.filter(pc.equal(v.column("outcome"), "ok"))
    html = ok.filter(pc.equal(ok.column("doc_type"), "text/html"))
    assert html.num_rows > 20 and html.column("relevance").null_count == 0   # every parsed page
    rel = ok.column("relevance").to_numpy(zero_copy_only=False).astype(float)
    rel = rel[~np.isnan(rel)]
    assert (rel >= 0).all() and (rel <= 1).all()
    # relevance agrees with the simulated web's topic labels
    topics = dict(zip(web.ground_truth["pages"].column("url").to_pylist(),
                      web.ground_truth["pages"].column("topic").to_pylist()))
    labelled = [(r, topics.get(u)) for u, r in zip(html.column("url").to_pylist(),
                                                   html.column("relevance").to_pylist()) if topics.get(u)]
    on = [r for r, t in labelled if t == "finance"]
    off = [r for r, t in labelled if t != "finance"]
    assert on and off and min(on) > max(off)
    h = reports[-1]["harvest"]
    assert h["running_visited"] == sum(r["harvest"]["visited"] for r in reports)
    assert len(h["curve"]) == 3 and h["curve"][-1][0] == h["running_visited"]
    assert h["running_relevant"] == int((rel >= 0.2).sum())   # ok pages (not duplicates)
    assert c.read_table("docfreq", 3).num_rows > 0


def test_the_frontier_is_bounded_and_what_it_drops_is_recorded(vertical_crawl):
    c, reports, _ = vertical_crawl
    f = c.read_table("frontier", 3, columns=["url", "score", "topic_score"])
    assert 0 < f.num_rows <= 20
    assert reports[-1]["frontier_size"] == f.num_rows
    filtered = c.read_table("filtered", 3, columns=["url", "reason"])
    full = filtered.filter(pc.equal(filtered.column("reason"), "buffer_full"))
    assert full.num_rows > 0
    assert sum(r["filtered_by_reason"].get("buffer_full", 0) for r in reports) == full.num_rows
    # nothing lost: a dropped URL is not pending; visited and frontier stay disjoint
    visited = set(c.read_table("visited", 3, columns=["url"]).column("url").to_pylist())
    pending = set(f.column("url").to_pylist())
    assert not (visited & pending)
    dropped_now = set(full.column("url").to_pylist()) - visited
    assert dropped_now - pending, "some buffer_full URLs must still be out of the frontier"


def test_vertical_mode_without_a_topic_is_refused(vertical_crawl, capsys):
    c, _, _ = vertical_crawl
    before = c.committed_rounds()
    assert round_mod.main(["--crawl_dir", c.path, "--topic", ""]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: --mode vertical needs a topic")
    assert c.committed_rounds() == before


def test_an_example_page_given_as_a_url_is_fetched_with_the_rounds_rules(simweb_small):
    from pipelines.config import ConfigError, RoundConfig
    from pipelines.settings import effective_round_settings
    url = simweb_small.seeds[0]
    s = effective_round_settings({"strategy": "best_first", "topic_pages": url, "allow_loopback": True,
                                  "resolve_file": str(simweb_small.hostmap_file)}, {})
    topic = RoundConfig.build(s, 1, 0.0).page.focus.topic
    title = simweb_small.web.titles[0]          # the first seed is the first host's root
    assert topic.similarity(title) > 0.2
    with pytest.raises(ConfigError, match=r"--topic_pages http.*could not fetch it"):
        RoundConfig.build(dict(s, allow_loopback=False), 1, 0.0)   # the address guard applies
