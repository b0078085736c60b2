"""files.simweb.test: documents beyond HTML (``documents=True``), with known text and links.

Served (all generated here, deterministically, without PDF or Word libraries):
  /                  an HTML index linking to every document below
  /report.pdf        a 2-page PDF: planted sentences, Link annotations with URI actions
                     (REPORT_LINKS), a JavaScript OpenAction and a Launch annotation
                     (never outlinks, never run), /Title, /Subject, /Lang, dates
  /memo.docx         a Word document: planted sentences, hyperlinks (MEMO_LINKS), core
                     properties (title, description, language, created, modified)
  /news.rss          RSS 2.0: FEED_ITEMS items with their pubDate
  /news.atom         Atom: FEED_ITEMS entries with their updated date
  /notes.txt         plain text naming a URL (an outlink only with --text_links)
  /from-pdf/*, /from-docx/*, /news/*   small HTML pages the documents link to
  /broken.pdf        a PDF header and garbage (corrupt)
  /locked.pdf        encrypted with a user password (the Standard security handler)
  /bomb.docx         a zip whose word/document.xml inflates to BOMB_BYTES
  /pages.pdf         a page tree of TREE_PAGES pages (100 nodes of 100 pages)
`truth(web)` gives (url, title, [(linked url, anchor)]) of the HTML pages and documents that
have outlinks, for the ground truth; `planted(web)` what a parser must find in each document.
"""
from __future__ import annotations

import datetime as _dt
import functools
import io
import zipfile
import zlib

NAME = "files"
FEED_ITEMS = 6
BOMB_BYTES = 120 * 1024 * 1024
TREE_PAGES = 10_000
EPOCH = 1767225600  # 2026-01-01T00:00:00Z
DOCX_TYPE = "application/vnd.openxmlformats-officedocument.wordprocessingml.document"

REPORT_SENTENCES = ("The quarterly harvest of simulated apples exceeded every forecast.",
                    "Orchard seven reported a record yield despite the late frost.")
MEMO_SENTENCES = ("Please bring the signed forms to the archive before Friday.",
                  "The new filing cabinet arrives on the second floor next week.")
NOTES_SENTENCE = "Reading list for the week, see the orchard pages."
REPORT_LINKS = ("/from-pdf/yield.html", "/from-pdf/frost.html")
MEMO_LINKS = ("/from-docx/forms.html", "/from-docx/cabinet.html")
INDEX_DOCS = (("/report.pdf", "Harvest report (PDF)"), ("/memo.docx", "Archive memo (Word)"),
              ("/news.rss", "News feed (RSS)"), ("/news.atom", "News feed (Atom)"),
              ("/notes.txt", "Reading notes"), ("/broken.pdf", "Broken PDF"),
              ("/locked.pdf", "Locked PDF"), ("/bomb.docx", "Compressed memo"),
              ("/pages.pdf", "Ten thousand pages"))


def feed_items(kind: str) -> list[tuple[str, str, float]]:
    """(path, title, date) of the items of the 'rss' or 'atom' feed."""
    out = []
    for k in range(FEED_ITEMS):
        when = EPOCH + 86400 * (k + 1) + 3600 * k + (0 if kind == "rss" else 1800)
        out.append((f"/news/{kind}{k}.html", f"Orchard news {kind} {k}", float(when)))
    return out


def _rfc822(t: float) -> str:
    return _dt.datetime.fromtimestamp(t, _dt.timezone.utc).strftime("%a, %d %b %Y %H:%M:%S +0000")


def _iso(t: float) -> str:
    return _dt.datetime.fromtimestamp(t, _dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


# ---------------------------------------------------------------- PDF, written by hand
def _pdf_string(s: str) -> bytes:
    return b"(" + s.encode("latin-1").replace(b"\\", b"\\\\").replace(b"(", b"\\(").replace(b")", b"\\)") + b")"


def pdf(objects: list[bytes], root: int = 1, trailer_extra: bytes = b"") -> bytes:
    """A PDF of numbered objects (1..n) with a correct xref table."""
    out = io.BytesIO()
    out.write(b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n")
    offs = []
    for n, o in enumerate(objects, 1):
        offs.append(out.tell())
        out.write(b"%d 0 obj\n" % n + o + b"\nendobj\n")
    x = out.tell()
    out.write(b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1))
    for o in offs:
        out.write(b"%010d 00000 n \n" % o)
    out.write(b"trailer\n<< /Size %d /Root %d 0 R %s>>\nstartxref\n%d\n%%%%EOF\n"
              % (len(objects) + 1, root, trailer_extra, x))
    return out.getvalue()


def _stream(data: bytes, compress: bool = False) -> bytes:
    if compress:
        data = zlib.compress(data)
        return b"<< /Length %d /Filter /FlateDecode >>\nstream\n" % len(data) + data + b"\nendstream"
    return b"<< /Length %d >>\nstream\n" % len(data) + data + b"\nendstream"


def report_pdf(base: str) -> bytes:
    """Two pages, one planted sentence and one URI link annotation each."""
    objs = [b"<< /Type /Catalog /Pages 2 0 R /Lang (en-GB) "
            b"/OpenAction << /S /JavaScript /JS (app.alert\\('never run'\\)) >> >>",
            b"<< /Type /Pages /Kids [3 0 R 4 0 R] /Count 2 >>"]
    # 3, 4: pages; 5, 6: contents; 7: font; 8, 9: link annots; 10: launch annot; 11: info
    for p in range(2):
        annots = b"[%d 0 R%s]" % (8 + p, b" 10 0 R" if p == 0 else b"")
        objs.append(b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents %d 0 R "
                    b"/Resources << /Font << /F1 7 0 R >> >> /Annots %s >>" % (5 + p, annots))
    for p in range(2):
        text = b"BT /F1 12 Tf 72 720 Td " + _pdf_string(REPORT_SENTENCES[p]) + b" Tj ET"
        objs.append(_stream(text, compress=p == 1))
    objs.append(b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>")
    for p in range(2):
        objs.append(b"<< /Type /Annot /Subtype /Link /Rect [72 700 400 730] /Border [0 0 0] "
                    b"/A << /S /URI /URI " + _pdf_string(base + REPORT_LINKS[p]) + b" >> >>")
    objs.append(b"<< /Type /Annot /Subtype /Link /Rect [72 600 400 630] "
                b"/A << /S /Launch /F (calc.exe) >> >>")
    objs.append(b"<< /Title (Harvest report) /Subject (Apples and frost in the simulated orchard) "
                b"/CreationDate (D:20260105093000Z) /ModDate (D:20260107120000+01'00') >>")
    return pdf(objs, trailer_extra=b"/Info 11 0 R ")


def locked_pdf() -> bytes:
    """Encrypted (Standard handler, RC4 40-bit) with a user password: unreadable without it."""
    objs = [b"<< /Type /Catalog /Pages 2 0 R >>",
            b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
            b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R >>",
            _stream(b"\x8a\x13\x99\x01garbled ciphertext\x00"),
            b"<< /Filter /Standard /V 1 /R 2 /O <" + b"11" * 32 + b"> /U <" + b"22" * 32 + b"> /P -44 >>"]
    return pdf(objs, trailer_extra=b"/Encrypt 5 0 R /ID [<00112233445566778899aabbccddeeff> "
                                   b"<00112233445566778899aabbccddeeff>] ")


def broken_pdf() -> bytes:
    return b"%PDF-1.7\n1 0 obj\n<< /Type /Catalog /Pages 2 0 R\n" + bytes(range(256)) * 8 + b"\n%%EOF"


@functools.lru_cache(maxsize=2)
def tree_pdf(pages: int = TREE_PAGES, fanout: int = 100) -> bytes:
    """`pages` pages under pages // fanout intermediate nodes, each page's text its number."""
    nodes = pages // fanout
    # 1 catalog, 2 root, 3 font, 4 shared contents, 5..4+nodes: nodes, then pages
    first_page = 5 + nodes
    objs = [b"<< /Type /Catalog /Pages 2 0 R >>",
            b"<< /Type /Pages /Kids [%s] /Count %d >>" % (b" ".join(b"%d 0 R" % (5 + k) for k in range(nodes)), pages),
            b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
            _stream(b"BT /F1 12 Tf 72 720 Td (Page of the long tree) Tj ET")]
    for k in range(nodes):
        kids = b" ".join(b"%d 0 R" % (first_page + k * fanout + j) for j in range(fanout))
        objs.append(b"<< /Type /Pages /Parent 2 0 R /Kids [%s] /Count %d >>" % (kids, fanout))
    for k in range(nodes):
        for _ in range(fanout):
            objs.append(b"<< /Type /Page /Parent %d 0 R /MediaBox [0 0 612 792] /Contents 4 0 R "
                        b"/Resources << /Font << /F1 3 0 R >> >> >>" % (5 + k))
    return pdf(objs)


# ---------------------------------------------------------------- Word, with zipfile
_W = "http://schemas.openxmlformats.org/wordprocessingml/2006/main"
_R = "http://schemas.openxmlformats.org/officeDocument/2006/relationships"
_CT = ('<?xml version="1.0" encoding="UTF-8" standalone="yes"?>'
       '<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">'
       '<Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/>'
       '<Default Extension="xml" ContentType="application/xml"/>'
       '<Override PartName="/word/document.xml" ContentType="application/vnd.openxmlformats-'
       'officedocument.wordprocessingml.document.main+xml"/></Types>')


def _zip(parts: dict[str, bytes]) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, data in parts.items():
            zf.writestr(zipfile.ZipInfo(name, (2026, 1, 1, 0, 0, 0)), data, zipfile.ZIP_DEFLATED)
    return buf.getvalue()


def memo_docx(base: str) -> bytes:
    runs = []
    for k, sentence in enumerate(MEMO_SENTENCES):
        runs.append(f'<w:p><w:r><w:t xml:space="preserve">{sentence} </w:t></w:r>'
                    f'<w:hyperlink r:id="rId{k + 10}"><w:r><w:t>link {k}</w:t></w:r></w:hyperlink></w:p>')
    doc = (f'<?xml version="1.0" encoding="UTF-8" standalone="yes"?><w:document xmlns:w="{_W}" '
           f'xmlns:r="{_R}"><w:body>{"".join(runs)}</w:body></w:document>')
    rels = ('<?xml version="1.0" encoding="UTF-8" standalone="yes"?><Relationships xmlns='
            '"http://schemas.openxmlformats.org/package/2006/relationships">'
            + "".join(f'<Relationship Id="rId{k + 10}" Type="{_R}/hyperlink" Target="{base}{p}" '
                      'TargetMode="External"/>' for k, p in enumerate(MEMO_LINKS))
            + f'<Relationship Id="rId1" Type="{_R}/styles" Target="styles.xml"/></Relationships>')
    core = ('<?xml version="1.0" encoding="UTF-8" standalone="yes"?><cp:coreProperties xmlns:cp='
            '"http://schemas.openxmlformats.org/package/2006/metadata/core-properties" '
            'xmlns:dc="http://purl.org/dc/elements/1.1/" xmlns:dcterms="http://purl.org/dc/terms/" '
            'xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance"><dc:title>Archive memo</dc:title>'
            '<dc:description>Forms and cabinets</dc:description><dc:language>en-US</dc:language>'
            '<dcterms:created xsi:type="dcterms:W3CDTF">2026-01-02T08:00:00Z</dcterms:created>'
            '<dcterms:modified xsi:type="dcterms:W3CDTF">2026-01-03T09:30:00Z</dcterms:modified>'
            '</cp:coreProperties>')
    return _zip({"[Content_Types].xml": _CT.encode(), "word/document.xml": doc.encode(),
                 "word/_rels/document.xml.rels": rels.encode(), "docProps/core.xml": core.encode()})


@functools.lru_cache(maxsize=1)
def bomb_docx(inflated: int = BOMB_BYTES) -> bytes:
    """A .docx whose word/document.xml inflates to `inflated` bytes (about 1000:1)."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr(zipfile.ZipInfo("[Content_Types].xml", (2026, 1, 1, 0, 0, 0)), _CT.encode())
        info = zipfile.ZipInfo("word/document.xml", (2026, 1, 1, 0, 0, 0))
        info.compress_type = zipfile.ZIP_DEFLATED
        with zf.open(info, "w", force_zip64=True) as f:
            head = f'<w:document xmlns:w="{_W}"><w:body><w:p><w:r><w:t>'.encode()
            f.write(head)
            chunk = b" " * (1 << 20)
            for _ in range((inflated - len(head)) >> 20):
                f.write(chunk)
    return buf.getvalue()


# ---------------------------------------------------------------- feeds, text, pages
def rss(base: str) -> bytes:
    items = "".join(f"<item><title>{t}</title><link>{base}{p}</link><pubDate>{_rfc822(d)}</pubDate>"
                    f"<description>Short news about the orchard, number {k}.</description></item>"
                    for k, (p, t, d) in enumerate(feed_items("rss")))
    return (f'<?xml version="1.0" encoding="UTF-8"?><rss version="2.0"><channel><title>Orchard news'
            f'</title><link>{base}/</link><description>News of the simulated orchard</description>'
            f"<language>en-us</language>{items}</channel></rss>").encode()


def atom(base: str) -> bytes:
    entries = "".join(f'<entry><title>{t}</title><link href="{base}{p}"/><id>{base}{p}</id>'
                      f"<updated>{_iso(d)}</updated><summary>Orchard entry {k}.</summary></entry>"
                      for k, (p, t, d) in enumerate(feed_items("atom")))
    return (f'<?xml version="1.0" encoding="utf-8"?><feed xmlns="http://www.w3.org/2005/Atom" '
            f'xml:lang="en"><title>Orchard news (Atom)</title><link rel="self" href="{base}/news.atom"/>'
            f"<updated>{_iso(EPOCH + 86400 * 9)}</updated><id>{base}/news.atom</id>{entries}</feed>").encode()


def _html(title: str, links=()) -> bytes:
    body = "".join(f'<li><a href="{p}">{a}</a></li>' for p, a in links)
    return (f'<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>{title}</title></head>'
            f"<body><h1>{title}</h1><ul>{body}</ul></body></html>").encode()


def leaf_pages() -> dict[str, str]:
    """path -> title of the small HTML pages the documents link to."""
    out = {p: f"Linked from the report {p.rsplit('/', 1)[-1]}" for p in REPORT_LINKS}
    out.update({p: f"Linked from the memo {p.rsplit('/', 1)[-1]}" for p in MEMO_LINKS})
    for kind in ("rss", "atom"):
        out.update({p: t for p, t, _ in feed_items(kind)})
    return out


def _body(web, path: str):
    base = web.base_url(web.documents_host.name)
    if path == "/":
        return "text/html; charset=utf-8", _html("Documents of the simulated orchard", INDEX_DOCS)
    fixed = {"/report.pdf": ("application/pdf", lambda: report_pdf(base)),
             "/memo.docx": ("application/vnd.openxmlformats-officedocument.wordprocessingml.document",
                            lambda: memo_docx(base)),
             "/news.rss": ("application/rss+xml", lambda: rss(base)),
             "/news.atom": ("application/atom+xml", lambda: atom(base)),
             "/notes.txt": ("text/plain; charset=utf-8",
                            lambda: f"{NOTES_SENTENCE}\n{base}/from-text/list.html\n".encode()),
             "/broken.pdf": ("application/pdf", broken_pdf),
             "/locked.pdf": ("application/pdf", locked_pdf),
             "/bomb.docx": ("application/vnd.openxmlformats-officedocument.wordprocessingml.document",
                            bomb_docx),
             "/pages.pdf": ("application/pdf", tree_pdf)}
    if path in fixed:
        ctype, make = fixed[path]
        return ctype, make()
    leaves = leaf_pages()
    if path in leaves:
        return "text/html; charset=utf-8", _html(leaves[path])
    return None


def respond(web, host, target: str, headers: dict, now: float):
    from .model import Response
    path = target.split("#", 1)[0].split("?", 1)[0]
    if path == "/robots.txt":
        return Response(404, [("Content-Type", "text/html")], b"not found")
    hit = _body(web, path)
    if hit is None:
        return Response(404, [("Content-Type", "text/html")], b"<html><body>Not found</body></html>")
    return Response(200, [("Content-Type", hit[0])], hit[1])


def planted(web) -> dict:
    """What a parser must find: url -> {links, sentences, dates (link -> epoch s)}."""
    base = web.base_url(web.documents_host.name)
    feeds = {f"/news.{k}": {"links": [base + p for p, _, _ in feed_items(k)], "sentences": [],
                            "dates": {base + p: d for p, _, d in feed_items(k)}} for k in ("rss", "atom")}
    return {base + "/report.pdf": {"links": [base + p for p in REPORT_LINKS],
                                   "sentences": list(REPORT_SENTENCES), "dates": {}},
            base + "/memo.docx": {"links": [base + p for p in MEMO_LINKS],
                                  "sentences": list(MEMO_SENTENCES), "dates": {}},
            **{base + k: v for k, v in feeds.items()}}


def truth(web) -> list[tuple[str, str, list[tuple[str, str]]]]:
    """(url, title, [(linked url, anchor)]) of every page and document that is crawled."""
    base = web.base_url(web.documents_host.name)
    out = [(base + "/", "Documents of the simulated orchard", [(base + p, a) for p, a in INDEX_DOCS])]
    for url, want in planted(web).items():
        out.append((url, None, [(u, "") for u in want["links"]]))
    for p in ("/notes.txt", "/broken.pdf", "/locked.pdf", "/bomb.docx", "/pages.pdf"):
        out.append((base + p, None, []))
    out.extend((base + p, t, []) for p, t in leaf_pages().items())
    return out
