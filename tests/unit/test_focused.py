"""Vertical crawling, plain parts: TF-IDF cosine, anchor contexts, the focused orderings'
link scores (hand-worked), the page step's scores and depth bound, URL-seen's best score,
MAX_BUFFER's cut (buffer_full) and the harvest report."""
import math

import numpy as np
import pyarrow as pa
import pytest

from pipelines import focused
from schemas import tables
from strategies.ordering import get_ordering
from strategies.ordering.focused import child_depth_left
from strategies.topic import (
    DOCS_BUCKET,
    DocFreq,
    Topic,
    anchor_contexts,
    count_docs,
    term_ids,
    tokens,
)
from tests.unit.frontier_rows import frontier
from transforms.page.fate import PageConfig, page_fate
from transforms.page.focus import TOPIC_DEPTH, FocusConfig
from transforms.score import buffer
from transforms.urlseen.candidates import candidates_and_edges
from transforms.urlseen.merge import merge_bucket


def test_tokens_are_lower_case_words_of_two_letters_not_numbers():
    assert tokens("The Striker, a 2024 GOAL! x 足球 比赛") == ["the", "striker", "goal", "足球", "比赛"]


def test_cosine_without_document_frequencies_is_tf_cosine():
    t = Topic.from_texts(["apple banana"])
    want = (1 + math.log(2)) / (math.sqrt(2) * math.sqrt((1 + math.log(2)) ** 2 + 1))
    assert t.similarity("apple apple cherry") == pytest.approx(want)
    assert t.similarity("cherry durian") == 0.0
    assert t.similarity("") == 0.0
    assert t.similarity("Banana APPLE") == pytest.approx(1.0)


def test_cosine_weighs_terms_by_the_crawls_document_frequencies():
    # 3 documents so far: apple in 2, cherry in 1, banana in none
    df = DocFreq.from_table(pa.table({
        "term": pa.array([DOCS_BUCKET, *term_ids(["apple", "cherry"]), DOCS_BUCKET], pa.int64()),
        "df": pa.array([2, 2, 1, 1], pa.int64())}))      # two rounds' rows of N are summed
    assert df.docs == 3
    idf = {w: math.log(4 / (1 + d)) + 1 for w, d in (("apple", 2), ("banana", 0), ("cherry", 1))}
    t = Topic.from_texts(["apple banana"], df)
    q = np.array([idf["apple"], idf["banana"]])
    d = np.array([(1 + math.log(2)) * idf["apple"], idf["cherry"]])
    assert t.similarity("apple apple cherry") == pytest.approx(q[0] * d[0] / (np.linalg.norm(q) * np.linalg.norm(d)))
    # a rare topic word counts for more than a common one
    assert t.similarity("banana durian") > t.similarity("apple durian")


def test_count_docs_counts_documents_not_occurrences():
    c = count_docs([np.array([1, 2]), np.array([2, 3]), np.array([], np.int64)])
    assert c == {DOCS_BUCKET: 3, 1: 1, 2: 2, 3: 1}


def test_anchor_context_is_the_window_of_words_around_the_anchor():
    text = "one two three Red Apple four five six"
    assert anchor_contexts(text, ["red apple", "", "pear", "one"], 2) == \
        ["two three four five", "", "", "two three"]
    assert anchor_contexts(text, ["red apple"], 0) == [""]


def test_best_first_and_fish_search_link_scores():
    a, c = np.array([0.5, 0.0]), np.array([0.3, 0.4])
    scores, inh = get_ordering("best_first").link_scores(0.6, True, 0.1, a, c)
    assert scores.tolist() == [0.6, 0.6] and inh == 0.6
    assert get_ordering("fish_search").link_scores(0.6, True, 0.1, a, c)[0].tolist() == [1.0, 1.0]
    assert get_ordering("fish_search").link_scores(0.1, False, 0.9, a, c)[0].tolist() == [0.0, 0.0]


def test_shark_search_link_scores_by_hand():
    a, c = np.array([0.5, 0.0]), np.array([0.3, 0.4])
    shark = get_ordering("shark_search")          # δ 0.5, β 0.8, γ 0.5
    scores, inh = shark.link_scores(0.6, True, 0.1, a, c)
    # inherited 0.5·0.6 = 0.3; anchor context [1 (anchor > 0), 0.4];
    # neighbourhood [0.8·0.5 + 0.2·1, 0.2·0.4] = [0.6, 0.08]; potential 0.5·0.3 + 0.5·n
    assert inh == pytest.approx(0.3)
    assert scores == pytest.approx([0.45, 0.19])
    scores, inh = shark.link_scores(0.1, False, 0.3, a, c)   # irrelevant page: δ·inherited
    assert inh == pytest.approx(0.15)
    assert scores == pytest.approx([0.075 + 0.3, 0.075 + 0.04])
    other = get_ordering("shark_search", topic_decay=1.0, anchor_beta=0.0, shark_gamma=1.0)
    assert other.link_scores(0.6, True, 0.1, a, c)[0] == pytest.approx([0.6, 0.6])


def test_depth_bound():
    assert child_depth_left(True, 0, 3) == 3
    assert child_depth_left(False, None, 3) == 2      # below a seed
    assert child_depth_left(False, 0, 3) == -1


def test_focused_orderings_sort_by_the_frontier_topic_score():
    f = pa.table({"topic_score": pa.array([0.2, None, 0.7], pa.float64())})
    for name in ("best_first", "shark_search", "fish_search"):
        assert get_ordering(name).score(f).tolist() == [0.2, 0.0, 0.7]


HTML = (b"<html><body><h1>Football news</h1><p>The striker scored a goal in the league match.</p>"
        b"<ul><li><a href='/a'>Goal of the season</a></li><li><a href='/b'>Pasta recipe</a></li></ul>"
        b"</body></html>")


def _page(**kw):
    return dict({"fp": 1, "url": "http://h.test/", "host": "h.test", "depth": 0, "source": "link",
                 "outcome": "ok", "http_status": 200, "content_type": "text/html", "body": HTML,
                 "fetch_time": 0.0}, **kw)


def _config(topic, vertical=False, ordering="shark_search"):
    return PageConfig(round_no=1, now=0.0, minhash=False, focus=FocusConfig(
        topic=Topic.from_texts([topic]), ordering=get_ordering(ordering), vertical=vertical))


def test_page_step_scores_the_page_and_its_links():
    fate = page_fate(_page(), _config("football goal striker league"))
    assert fate.visited["relevance"] > 0.3
    (b,) = fate.links
    by_url = dict(zip(b["dst"], b["topic_score"]))
    assert by_url["http://h.test/a"] > by_url["http://h.test/b"] > 0   # the anchor speaks
    assert b["depth_left"] == 3 and b["topic_inherited"] == pytest.approx(0.5 * fate.visited["relevance"])


def test_vertical_mode_stops_an_irrelevant_pages_links_past_the_depth_bound():
    cfg = _config("opera soprano violin", vertical=True)
    fate = page_fate(_page(depth_left=0), cfg)
    assert fate.visited["relevance"] == 0.0 and fate.links == []
    (f,) = fate.filtered
    assert set(f["reason"]) == {TOPIC_DEPTH} and len(f["url"]) == 2
    assert page_fate(_page(depth_left=1), cfg).links[0]["depth_left"] == 0
    # batch mode records the bound but follows the links
    assert page_fate(_page(depth_left=0), _config("opera soprano violin")).links


def _bundle(src_fp, urls, scores, inherited=0.1, depth_left=2):
    return {"src": f"http://p{src_fp}.test/", "src_fp": src_fp, "depth": 1, "source": "link",
            "dst": urls, "anchor": [""] * len(urls), "topic_score": scores,
            "topic_inherited": inherited, "depth_left": depth_left}


def test_url_seen_keeps_the_best_score_any_link_gave():
    cand, _ = candidates_and_edges([_bundle(11, ["http://x.test/1", "http://x.test/2"], [0.2, 0.9]),
                                    _bundle(12, ["http://x.test/1"], [0.6], 0.4, 1)], 1)
    f, _, _ = merge_bucket([], [], [], [cand], [], 1)
    rows = {r["url"]: r for r in f.to_pylist()}
    assert rows["http://x.test/1"]["topic_score"] == 0.6
    assert rows["http://x.test/1"]["topic_inherited"] == 0.4 and rows["http://x.test/1"]["depth_left"] == 2
    assert rows["http://x.test/2"]["topic_score"] == 0.9
    # a later, better link to a pending URL raises it; a worse one leaves it
    cand2, _ = candidates_and_edges([_bundle(13, ["http://x.test/1", "http://x.test/2"], [0.8, 0.1])], 2)
    f2, _, _ = merge_bucket([f], [], [], [cand2], [], 2)
    rows = {r["url"]: r["topic_score"] for r in f2.to_pylist()}
    assert rows == {"http://x.test/1": 0.8, "http://x.test/2": 0.9}


def test_max_buffer_drops_the_lowest_scored_as_buffer_full():
    a = frontier([{"fp": 5, "url": "u5", "score": 0.5}, {"fp": 1, "url": "u1", "score": 0.1},
                  {"fp": 3, "url": "u3", "score": 0.5}])
    b = frontier([{"fp": 2, "url": "u2", "score": 0.9}, {"fp": 4, "url": "u4", "score": None}])
    best = buffer.top([buffer.top([buffer.sort_keys(a)], 3), buffer.top([buffer.sort_keys(b)], 3)], 3)
    cut = buffer.cutoff(best, 3)
    assert cut == (0.5, 5)           # kept: u2 (0.9), u3 (0.5, fp 3), u5 (0.5, fp 5)
    kept_a, drop_a = buffer.split(a, cut, 7)
    kept_b, drop_b = buffer.split(b, cut, 7)
    assert sorted(kept_a.column("url").to_pylist() + kept_b.column("url").to_pylist()) == ["u2", "u3", "u5"]
    dropped = pa.concat_tables([drop_a, drop_b])
    assert dropped.schema == tables.FILTERED
    assert sorted(dropped.column("url").to_pylist()) == ["u1", "u4"]
    assert set(dropped.column("reason").to_pylist()) == {"buffer_full"}
    assert set(dropped.column("round").to_pylist()) == {7}
    assert buffer.buffer_stats(dropped) == {"filtered_buffer_full": 2, "frontier_rows": -2}
    all_keys = [buffer.sort_keys(a), buffer.sort_keys(b)]
    assert buffer.cutoff(buffer.top(all_keys, 4), 4)[1] == 1      # u1 (score 0.1, snapped)
    assert buffer.cutoff(buffer.top(all_keys, 5), 5) is None


def test_harvest_report_and_when_a_vertical_crawl_stops():
    s = {"mode": "vertical", "relevance_threshold": 0.2, "harvest_floor": 0.3}
    h1 = focused.harvest({"visited": 10, "topic_scored": 9, "topic_relevant": 1}, {}, s)
    assert h1["rate"] == 0.1 and h1["curve"] == [[10, 0.1]]
    assert focused.stop_reason({"round": 1, "harvest": h1}) is None   # the seeds' round
    h2 = focused.harvest({"visited": 10, "topic_scored": 10, "topic_relevant": 5}, {"harvest": h1}, s)
    assert (h2["rate"], h2["running_rate"], h2["curve"]) == (0.5, 0.3, [[10, 0.1], [20, 0.3]])
    assert focused.stop_reason({"round": 2, "harvest": h2}) is None
    h3 = focused.harvest({"visited": 10, "topic_scored": 10, "topic_relevant": 2}, {"harvest": h2}, s)
    assert "below --harvest_floor 0.3" in focused.stop_reason({"round": 3, "harvest": h3})
    assert focused.stop_reason({"round": 3, "harvest": dict(h3, mode="batch")}) is None
    assert focused.harvest({"visited": 3}, {}, s) is None


def test_a_focused_strategy_or_vertical_mode_needs_a_topic():
    with pytest.raises(focused.TopicError, match="--strategy shark_search needs a topic"):
        focused.focus_config({"strategy": "shark_search", "mode": "batch"}, None, None, None)
    with pytest.raises(focused.TopicError, match="--mode vertical needs a topic"):
        focused.focus_config({"strategy": "bfs", "mode": "vertical"}, None, None, None)
    with pytest.raises(focused.TopicError, match="--topic_pages /nonexistent: no such file"):
        focused.focus_config({"strategy": "bfs", "topic_pages": "/nonexistent"}, None, None, None)
    assert focused.focus_config({"strategy": "bfs", "mode": "batch"}, None, None, None) is None


def test_topic_from_an_example_file(tmp_path):
    from transforms.page.formats import ParseLimits
    p = tmp_path / "example.html"
    p.write_bytes(HTML)
    cfg = focused.focus_config({"strategy": "best_first", "topic_pages": str(p), "topic": "referee"},
                               None, ParseLimits(), None)
    assert cfg.topic.similarity("striker goal referee") > 0.3


def test_a_round_weighs_the_topic_by_the_document_frequencies_of_earlier_rounds():
    from pipelines.config import RoundConfig
    from pipelines.settings import effective_round_settings
    s = effective_round_settings({"strategy": "shark_search", "topic": "apple,banana"}, {})
    cfg = RoundConfig.build(s, 3, 0.0)
    assert cfg.score.ordering.topic_decay == 0.5 and cfg.page.focus.topic.docfreq.docs == 0

    class Crawl:
        def read_table(self, table, upto):
            assert (table, upto) == ("docfreq", 2)
            return pa.table({"term": pa.array([DOCS_BUCKET, *term_ids(["apple"])], pa.int64()),
                             "df": pa.array([4, 4], pa.int64())})

    weighed = focused.with_docfreq(cfg, Crawl(), 2)
    t = weighed.page.focus.topic
    assert t.docfreq.docs == 4
    # apple is on every page so far: banana, rarer, counts for more than plain tf says
    assert t.similarity("banana") > cfg.page.focus.topic.similarity("banana")
    s2 = effective_round_settings({"strategy": "shark_search", "topic": "apple",
                                   "topic_decay": 0.25, "strategy_params": "anchor_beta=0.6"}, {})
    order = RoundConfig.build(s2, 1, 0.0).score.ordering
    assert (order.topic_decay, order.anchor_beta) == (0.25, 0.6)
