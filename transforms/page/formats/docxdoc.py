"""Word .docx (Office Open XML) with zipfile + lxml: the text of word/document.xml
(paragraphs, tabs, line breaks), its hyperlinks (w:hyperlink r:id -> an External target of
word/_rels/document.xml.rels, and HYPERLINK field codes) and docProps/core.xml (title,
description or subject, language, created, modified).

Nothing is run: macros (vbaProject.bin of .docm), OLE objects and ActiveX parts are never
read. Bounds: at most MAX_MEMBERS entries in the archive; a part is read only if its
declared size is under the cap and inflated in chunks up to `max_inflated` bytes, so a zip
bomb (or a lying header) stops at the cap with a reason; XML is parsed without entities,
DTDs or network, and the budget is checked every 500 paragraphs.
"""
from __future__ import annotations

import io
import re
import zipfile

from lxml import etree

from transforms.page.formats.document import (
    BudgetExceeded,
    Document,
    clean,
    language_tag,
    parse_date,
    resolve_links,
    text_blocks,
)
from transforms.page.sitemaps import _drop_doctype, _parser

MAX_MEMBERS = 10_000
W = "{http://schemas.openxmlformats.org/wordprocessingml/2006/main}"
R_ID = "{http://schemas.openxmlformats.org/officeDocument/2006/relationships}id"
_FIELD = re.compile(r'HYPERLINK\s+"([^"]+)"')


def _read(zf: zipfile.ZipFile, name: str, cap: int) -> bytes | None:
    """A member's bytes, inflated at most `cap` bytes (BudgetExceeded beyond); None if absent."""
    try:
        info = zf.getinfo(name)
    except KeyError:
        return None
    if info.file_size > cap:
        raise BudgetExceeded(f"{name} inflates to {info.file_size} bytes (cap {cap})")
    out, n = [], 0
    with zf.open(info) as f:
        while True:
            chunk = f.read(min(1 << 20, cap + 1 - n))
            if not chunk:
                break
            out.append(chunk)
            n += len(chunk)
            if n > cap:
                raise BudgetExceeded(f"{name} inflates past the cap of {cap} bytes")
    return b"".join(out)


def _xml(data: bytes):
    return etree.fromstring(_drop_doctype(data), _parser())


def _relationships(zf, cap) -> dict:
    data = _read(zf, "word/_rels/document.xml.rels", cap)
    rels = {}
    if data:
        for el in _xml(data).iter("{*}Relationship"):
            if (el.get("TargetMode") or "").lower() == "external" and el.get("Id"):
                rels[el.get("Id")] = el.get("Target") or ""
    return rels


def _core(zf, cap, doc):
    data = _read(zf, "docProps/core.xml", cap)
    if not data:
        return
    fields = {}
    for el in _xml(data):
        if isinstance(el.tag, str):
            fields.setdefault(el.tag.rsplit("}", 1)[-1].lower(), clean("".join(el.itertext())))
    doc.title = fields.get("title")
    doc.description = fields.get("description") or fields.get("subject")
    doc.language = language_tag(fields.get("language"))
    doc.published = parse_date(fields.get("created"))
    doc.modified = parse_date(fields.get("modified"))


def parse(body, url, budget, content_type_header=None) -> Document:
    cap = budget.limits.max_inflated
    doc = Document(type="")
    try:
        zf = zipfile.ZipFile(io.BytesIO(body))
        if len(zf.infolist()) > MAX_MEMBERS:
            doc.reason = f"docx: more than {MAX_MEMBERS} archive members"
            return doc
        data = _read(zf, "word/document.xml", cap)
        if data is None:
            doc.reason = "docx: no word/document.xml"
            return doc
        rels = _relationships(zf, cap)
        _core(zf, cap, doc)
        root = _xml(data)
    except BudgetExceeded as e:
        doc.reason = f"docx: {e}"
        return doc
    except (zipfile.BadZipFile, zipfile.LargeZipFile, etree.XMLSyntaxError, ValueError,
            EOFError, OSError, NotImplementedError, RuntimeError) as e:
        doc.reason = f"docx unreadable: {type(e).__name__}: {str(e)[:120]}"
        return doc
    if root is None:
        doc.reason = "docx: empty word/document.xml"
        return doc
    paragraphs, pairs = [], []
    try:
        for n, p in enumerate(root.iter(W + "p")):
            if n % 500 == 0:
                budget.check()
            parts = []
            for el in p.iter(W + "t", W + "tab", W + "br", W + "cr", W + "hyperlink", W + "instrText"):
                tag = el.tag
                if tag == W + "t":
                    parts.append(el.text or "")
                elif tag == W + "hyperlink":
                    target = rels.get(el.get(R_ID))
                    if target:
                        pairs.append((target, clean("".join(t.text or "" for t in el.iter(W + "t"))) or ""))
                elif tag == W + "instrText":
                    m = _FIELD.search(el.text or "")
                    if m:
                        pairs.append((m.group(1), ""))
                else:
                    parts.append("\n" if tag in (W + "br", W + "cr") else " ")
            paragraphs.append("".join(parts))
    except BudgetExceeded as e:
        doc.reason = f"docx: {e} after {len(paragraphs)} paragraphs"
    text = "\n".join(paragraphs)
    doc.links, doc.anchors, _ = resolve_links(url, pairs)
    doc.blocks = text_blocks(text)
    doc.text = " ".join(text.split())
    return doc
