"""drafts.simweb.test (tests/simweb/drafthost.py): pairs of drafts that share much text but are
not near-duplicates, served and in the ground truth as the config says."""
import re

import pytest

from tests.simweb import build_web
from tests.simweb import drafthost

PAIRS = 8


@pytest.fixture(scope="module")
def web():
    return build_web("small", seed=3, similar_pairs=PAIRS, similar_jaccard=(0.6, 0.7))


def _words(body: bytes) -> list[str]:
    """The page's h1 and paragraph, cut into words independently of drafthost."""
    h1 = re.search(rb"<h1>(.*?)</h1>", body).group(1).decode()
    p = re.search(rb"<p>(.*?)</p>", body).group(1).decode()
    return re.findall(r"\w+", f"{h1} {p}".lower())


def test_bigram_jaccard_counts_distinct_bigrams():
    assert drafthost.bigram_jaccard("a b c".split(), "a b c".split()) == 1.0
    assert drafthost.bigram_jaccard("a b c".split(), "a b d".split()) == pytest.approx(1 / 3)
    assert drafthost.bigram_jaccard("a b a b".split(), "A B".split()) == pytest.approx(1 / 2)   # {ab, ba} vs {ab}
    assert drafthost.bigram_jaccard("x y".split(), "p q".split()) == 0.0


def test_the_pairs_as_served_have_the_configured_similarity(web):
    truth = web.ground_truth()["similar_pairs"].to_pylist()
    assert len(truth) == PAIRS
    host = f"{drafthost.NAME}.simweb.test"
    for k, row in enumerate(truth):
        served = [web.respond(host, f"/draft/n{k}-{d}.html") for d in (1, 2)]
        assert [r.status for r in served] == [200, 200]
        first, second = (_words(r.body) for r in served)
        assert row["url"].endswith(f"/draft/n{k}-2.html") and row["of_url"].endswith(f"/draft/n{k}-1.html")
        assert row["jaccard"] == pytest.approx(drafthost.bigram_jaccard(first, second))
        # the rewritten span is the shortest that reaches the target: within one step of it
        assert 0.6 - 0.03 <= row["jaccard"] <= 0.7 + 1e-9, (k, row["jaccard"])
        assert len(first) == len(second) == drafthost.WORDS_PER_NOTE + 4
    targets = [row["jaccard"] for row in truth]
    assert max(targets) - min(targets) > 0.05, "spread over the range, not one value"


def test_drafts_are_reachable_from_site0_and_in_the_ground_truth(web):
    gt = web.ground_truth()
    pages = {r["url"]: r for r in gt["pages"].to_pylist() if f"{drafthost.NAME}." in r["url"]}
    assert len(pages) == 1 + 2 * PAIRS
    assert all(r["is_duplicate_of"] is None and r["status"] == 200 for r in pages.values())
    assert set(pages) <= set(gt["reachable"].column("url").to_pylist())
    assert web.respond(f"{drafthost.NAME}.simweb.test", f"/draft/n{PAIRS}-1.html").status == 404


def test_without_the_setting_there_is_no_draft_host():
    web = build_web("small", seed=3)
    assert web.draft_host is None and "similar_pairs" not in web.ground_truth()
    assert all(h.kind != "drafts" for h in web.hosts)
