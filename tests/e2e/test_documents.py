"""End-to-end (issue #18): a crawl of the small web plus files.simweb.test (PDF, Word, RSS,
Atom, text, and hostile documents: corrupt, encrypted, a zip bomb, a 10 000-page tree).

Every planted link of the PDF and the .docx is crawled from them, every feed item is
discovered with its date (the frontier's lastmod, as a sitemap's), the visited rows carry
the documents' type, metadata and text length, and the hostile documents end as ok rows
with their reason while the rounds complete.
"""
import pytest

from pipelines.crawldir import CrawlDir
from tests.e2e import crawlstate
from tests.simweb import documents as docs
from tests.simweb.process import SimWebProcess

ROUNDS = 4   # seeds, site0 -> files root, its documents, what the documents link to


@pytest.fixture(scope="module")
def crawl(tmp_path_factory):
    web = SimWebProcess("small", seed=1, workdir=tmp_path_factory.mktemp("simweb"), documents=True)
    try:
        d = tmp_path_factory.mktemp("documents_crawl") / "crawl"
        # the 10 000-page PDF must stop at its page cap: the wall-clock parse budget (5 s by
        # default) is set out of reach, since a loaded test machine spends it first (the
        # budget has its own test: tests/unit/test_documents.py)
        crawlstate.start_crawl(web, d, "--parse_seconds", "120")
        reports = crawlstate.run_rounds(d, "--rounds", str(ROUNDS))
        c = CrawlDir(str(d))
        yield web, c, reports
    finally:
        web.stop()


def _visited(c):
    return {r["url"]: r for r in c.read_table("visited", c.last_committed()).to_pylist()}


def test_the_rounds_complete_and_the_documents_are_visited_with_their_type(crawl):
    web, c, _reports = crawl
    assert c.last_committed() == ROUNDS
    visited = _visited(c)
    base = web.web.base_url(web.web.documents_host.name)
    want = {"/report.pdf": "application/pdf", "/memo.docx": docs.DOCX_TYPE, "/news.rss": "application/rss+xml",
            "/news.atom": "application/atom+xml", "/notes.txt": "text/plain", "/broken.pdf": "application/pdf",
            "/locked.pdf": "application/pdf", "/bomb.docx": docs.DOCX_TYPE, "/pages.pdf": "application/pdf"}
    for path, kind in want.items():
        row = visited[base + path]
        assert (row["outcome"], row["doc_type"]) == ("ok", kind), path


def test_planted_links_of_the_pdf_and_the_docx_are_extracted_and_crawled(crawl):
    web, c, _reports = crawl
    visited = _visited(c)
    links = c.read_table("links", c.last_committed()).to_pylist()
    for url, want in docs.planted(web.web).items():
        got = sorted(l["dst"] for l in links if l["src"] == url)
        assert got == sorted(want["links"]), url
        row = visited[url]
        assert row["outlinks"] == len(want["links"]) and row["text_chars"] > 0, url
        for dst in want["links"]:
            assert visited[dst]["outcome"] == "ok" and visited[dst]["first_parent"] == url, dst
    pdf = visited[web.web.base_url(web.web.documents_host.name) + "/report.pdf"]
    assert (pdf["title"], pdf["language"], pdf["published"]) == ("Harvest report", "en", 1767605400.0)


def test_feed_items_are_all_discovered_with_their_dates(crawl):
    web, c, _reports = crawl
    visited = _visited(c)
    for url, want in docs.planted(web.web).items():
        if not want["dates"]:
            continue
        fed_round = visited[url]["round"]
        frontier = {r["url"]: r for r in c.read_table("frontier", fed_round).to_pylist()}
        assert {u: frontier[u]["lastmod"] for u in want["dates"]} == want["dates"], url


def test_hostile_documents_end_with_their_reason(crawl):
    web, c, _reports = crawl
    visited = _visited(c)
    base = web.web.base_url(web.web.documents_host.name)
    reasons = {p: visited[base + p]["reason"] or "" for p in ("/broken.pdf", "/locked.pdf", "/bomb.docx", "/pages.pdf")}
    assert reasons["/broken.pdf"].startswith("pdf unreadable")
    assert reasons["/locked.pdf"] == "pdf encrypted: needs a password"
    assert reasons["/bomb.docx"].startswith("docx: word/document.xml inflates to")
    assert reasons["/pages.pdf"] == "pdf: read 200 of 10000 pages"
