"""Documents beyond HTML (#18): the parser registry, sniffing, metadata and the budget, on
the documents of the simulated web's files host (tests/simweb/documents.py). No network."""
import dataclasses
import io
import time
import zipfile

import pytest

from schemas import tables
from tests.simweb import documents as docs
from tests.simweb.model import build_web
from transforms.page.fate import PageConfig, page_fate
from transforms.page.formats import PARSERS, ParseLimits, parse_document, sniff
from transforms.urls import canonical as urls_mod

WEB = build_web("small", seed=1, documents=True, port=8000)
BASE = WEB.base_url(WEB.documents_host.name)
LIMITS = ParseLimits()


def served(path):
    r = WEB.respond(WEB.documents_host, path)
    assert r.status == 200
    return r.body, dict(r.headers)["Content-Type"]


def parsed(path, limits=LIMITS, declared=None):
    """(the document, the CPU seconds its parse took: a figure a loaded machine leaves alone)."""
    body, ctype = served(path)
    kind = sniff.sniff(body, declared if declared is not None else ctype.split(";")[0])
    started = time.thread_time()
    doc = parse_document(body, BASE + path, kind, limits, ctype)
    return doc, time.thread_time() - started


class SteppedClock:
    """time.monotonic for the parse budget: each reading is `step` seconds after the last
    (multiples of a power of two: exact in floating point), so a budget runs out after a
    known number of checks whatever the machine's load."""

    def __init__(self, step):
        self.step, self.now = step, 0.0

    def monotonic(self):
        self.now += self.step
        return self.now


@pytest.mark.parametrize("path", ["/report.pdf", "/memo.docx", "/news.rss", "/news.atom"])
def test_extracted_links_equal_the_planted_links_and_the_text_holds_the_planted_sentences(path):
    want = docs.planted(WEB)[BASE + path]
    doc, _ = parsed(path)
    assert doc.reason is None
    assert doc.links == want["links"]
    for sentence in want["sentences"]:
        assert sentence in doc.text
    if want["dates"]:
        assert dict(zip(doc.links, doc.lastmod)) == want["dates"]


def test_the_type_is_sniffed_from_the_body_not_only_declared():
    pdf, _ = served("/report.pdf")
    docx, _ = served("/memo.docx")
    rss, _ = served("/news.rss")
    assert sniff.sniff(pdf, "text/html") == sniff.PDF
    assert sniff.sniff(docx, "application/octet-stream") == sniff.DOCX
    assert sniff.sniff(b"\xef\xbb\xbf" + rss, "text/html") == sniff.RSS
    assert sniff.sniff(served("/news.atom")[0], "text/xml") == sniff.ATOM
    assert sniff.sniff(b"<html><body>x</body></html>", "application/pdf") == sniff.HTML
    assert sniff.sniff(b"<html><body>x</body></html>", "text/plain") == sniff.TEXT
    assert sniff.sniff(b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + b"\0" * 64, "application/msword") == "application/msword"
    assert sniff.sniff(b"<?xml version='1.0'?><urlset/>", "application/xml") == sniff.SITEMAP
    assert sniff.sniff(b"<?xml version='1.0'?><thing/>", "application/xml") == sniff.XML
    assert "application/msword" not in PARSERS and sniff.ZIP not in PARSERS


def test_metadata_from_the_documents_markup():
    pdf, _ = parsed("/report.pdf")
    assert (pdf.title, pdf.description, pdf.language) == (
        "Harvest report", "Apples and frost in the simulated orchard", "en")
    assert (pdf.published, pdf.modified) == (1767605400.0, 1767783600.0)  # 01-05 09:30Z, 01-07 11:00Z
    memo, _ = parsed("/memo.docx")
    assert (memo.title, memo.description, memo.language, memo.published, memo.modified) == (
        "Archive memo", "Forms and cabinets", "en", 1767340800.0, 1767432600.0)
    rss, _ = parsed("/news.rss")
    assert (rss.title, rss.description, rss.language) == ("Orchard news", "News of the simulated orchard", "en")
    atom, _ = parsed("/news.atom")
    assert (atom.title, atom.language, atom.modified) == ("Orchard news (Atom)", "en", docs.EPOCH + 86400 * 9)


def test_language_is_detected_when_the_markup_states_none():
    doc = parse_document("Le chat dort sur la table de la cuisine pendant que il pleut dehors.".encode(),
                         "http://t.test/a.txt", sniff.TEXT, LIMITS)
    assert doc.language == "fr"
    off = parse_document(b"Le chat dort sur la table de la cuisine pendant que il pleut dehors.",
                         "http://t.test/a.txt", sniff.TEXT, dataclasses.replace(LIMITS, detect_language=False))
    assert off.language is None


def test_plain_text_urls_become_links_only_with_the_flag():
    doc, _ = parsed("/notes.txt")
    assert doc.links == [] and docs.NOTES_SENTENCE in doc.text
    on, _ = parsed("/notes.txt", dataclasses.replace(LIMITS, text_links=True))
    assert on.links == [BASE + "/from-text/list.html"]


def test_nothing_in_a_pdf_is_run_and_only_uri_actions_are_links():
    doc, _ = parsed("/report.pdf")
    assert not any("calc" in u or "javascript" in u for u in doc.links)


@pytest.mark.parametrize("path,reason", [
    ("/broken.pdf", "pdf unreadable"),
    ("/locked.pdf", "pdf encrypted: needs a password"),
    ("/bomb.docx", "docx: word/document.xml inflates to"),
    ("/pages.pdf", "pdf: read 200 of 10000 pages"),
])
def test_hostile_documents_end_with_a_reason_within_the_budget(path, reason):
    """Each stops at its own limit, within the default budget's worth of CPU time; the wall
    clock budget is set out of reach here, since a loaded machine spends it first (it has its
    own test: test_a_slow_pdf_stops_at_the_time_budget_with_what_was_read)."""
    doc, cpu = parsed(path, dataclasses.replace(LIMITS, seconds=600.0))
    assert doc.reason is not None and doc.reason.startswith(reason), doc.reason
    assert cpu < LIMITS.seconds


def test_a_slow_pdf_stops_at_the_time_budget_with_what_was_read(monkeypatch):
    """The budget is checked before each page: with a clock that moves 1/16 s a reading and a
    budget of 1/4 s, the reading that sets the deadline, the one after opening the file and
    three before pages pass; the fourth page's is past the deadline."""
    from transforms.page.formats import document
    monkeypatch.setattr(document, "time", SteppedClock(1 / 16))
    doc, cpu = parsed("/pages.pdf", dataclasses.replace(LIMITS, seconds=0.25, max_pages=10_000))
    assert doc.reason == "pdf: time budget of 0.25 s spent after 3 of 10000 pages", doc.reason
    assert "Page of the long tree" in doc.text


def test_a_zip_bomb_whose_header_lies_stops_at_the_inflate_cap():
    body = docs.bomb_docx()
    cap = 1 << 20
    with zipfile.ZipFile(io.BytesIO(body)) as zf:      # the header says what it is ...
        assert zf.getinfo("word/document.xml").file_size > cap
    doc = parse_document(body, BASE + "/bomb.docx", sniff.DOCX, dataclasses.replace(LIMITS, max_inflated=cap))
    assert doc.reason.startswith("docx: word/document.xml inflates to")
    # ... a header that lies: zipfile stops at the declared size and the CRC check fails
    from transforms.page.formats import docxdoc
    with zipfile.ZipFile(io.BytesIO(body)) as zf:
        zf.getinfo("word/document.xml").file_size = 1000
        with pytest.raises(Exception):
            docxdoc._read(zf, "word/document.xml", cap)


def test_page_fate_of_a_pdf_gives_its_links_text_and_metadata_columns():
    body, ctype = served("/report.pdf")
    url = BASE + "/report.pdf"
    page = dict(fp=urls_mod.fingerprint(url), url=url, host=urls_mod.host_key(url), depth=1,
                discovered_round=0, first_parent=BASE + "/", retries=0, redirects=0,
                source=tables.SOURCE_LINK, fetch_time=1.8e9, elapsed_ms=1.0, http_status=200,
                content_type="application/pdf", content_type_header=ctype, body=body,
                truncated=False, etag=None, last_modified=None, x_robots_tag=None,
                retry_after=None, redirect_to=None, outcome=tables.OK, reason=None)
    fate = page_fate(page, PageConfig(round_no=1, now=1.8e9))
    v = fate.visited
    assert (v["doc_type"], v["title"], v["language"], v["outlinks"]) == ("application/pdf", "Harvest report", "en", 2)
    assert v["text_chars"] > 100 and v["reason"] is None and v["_blocks"]
    assert fate.links[0]["dst"] == docs.planted(WEB)[url]["links"]
    noindex = page_fate(dict(page, x_robots_tag="noindex, nofollow"), PageConfig(round_no=1, now=1.8e9))
    assert noindex.links == [] and noindex.stored is None
    locked = dict(page, body=served("/locked.pdf")[0])
    fate = page_fate(locked, PageConfig(round_no=1, now=1.8e9))
    assert fate.visited["outcome"] == tables.OK and fate.visited["reason"] == "pdf encrypted: needs a password"
