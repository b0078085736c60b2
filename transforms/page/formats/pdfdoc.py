"""PDF with pypdf (pure Python): text page by page, link annotations' URI actions as
outlinks, the document information (title, subject, dates) and the catalog's /Lang.

Nothing in the file is run: JavaScript, Launch and GoToR actions, forms and embedded files
are ignored; only /URI actions of /Link annotations are read. Bounds, so an adversarial PDF
cannot hold a worker (see transforms/page/formats/__init__.py for the design):
- pypdf's own limits, set per call through its Configuration: every decompression filter
  gives at most `max_inflated` bytes, the page tree at most PAGE_TREE_ENTRIES nodes and
  PAGE_TREE_DEPTH levels, XObject forms at most XFORMS per page, no external jbig2dec;
- at most `max_pages` pages are read, and the wall-clock budget is checked before each page
  (a stop keeps what was read, with the reason).
Encrypted files whose user password is not empty, and files pypdf cannot read, end with a
reason and no text.
"""
from __future__ import annotations

import io

from transforms.page.formats.document import (
    BudgetExceeded,
    Document,
    clean,
    language_tag,
    parse_date,
    resolve_links,
    text_blocks,
)

PAGE_TREE_ENTRIES = 50_000
PAGE_TREE_DEPTH = 64
XFORMS = 500
MAX_ANNOTS = 2000        # annotations read per page


def _limits(max_inflated: int) -> dict:
    return dict(zlib_maximum_output_length=max_inflated, lzw_maximum_output_length=max_inflated,
                run_length_maximum_output_length=max_inflated, brotli_maximum_output_length=max_inflated,
                jbig2_maximum_output_length=max_inflated, image_maximum_buffer_size=max_inflated,
                array_based_stream_maximum_output_length=max_inflated,
                maximum_declared_stream_length=max_inflated,
                stream_decoding_work_maximum_length=4 * max_inflated,
                page_tree_maximum_entries=PAGE_TREE_ENTRIES, page_tree_maximum_depth=PAGE_TREE_DEPTH,
                xform_maximum_invocations_per_extraction=XFORMS, jbig2dec_binary=None)


def _uris(page) -> list[str]:
    out = []
    annots = page.get("/Annots")
    annots = annots.get_object() if annots is not None else None
    for ref in list(annots or [])[:MAX_ANNOTS]:
        try:
            a = ref.get_object()
            if a.get("/Subtype") != "/Link":
                continue
            action = a.get("/A")
            action = action.get_object() if action is not None else None
            if action is not None and action.get("/S") == "/URI" and action.get("/URI") is not None:
                uri = action.get("/URI")
                out.append(uri.decode("latin-1") if isinstance(uri, bytes) else str(uri))
        except Exception:  # one broken annotation: skip it, keep the page
            continue
    return out


def parse(body, url, budget, content_type_header=None) -> Document:
    import pypdf
    from pypdf.errors import DependencyError

    limits = budget.limits
    doc = Document(type="")
    with pypdf.apply_configuration(**_limits(limits.max_inflated)):
        try:
            reader = pypdf.PdfReader(io.BytesIO(body), strict=False)
            if reader.is_encrypted:
                try:
                    ok = reader.decrypt("")
                except (DependencyError, NotImplementedError) as e:
                    doc.reason = f"pdf encrypted: unsupported cipher ({type(e).__name__})"
                    return doc
                if not ok:
                    doc.reason = "pdf encrypted: needs a password"
                    return doc
            info = reader.metadata or {}
            doc.title = clean(info.get("/Title"))
            doc.description = clean(info.get("/Subject"))
            doc.published = parse_date(info.get("/CreationDate"))
            doc.modified = parse_date(info.get("/ModDate"))
            doc.language = language_tag(str(reader.trailer["/Root"].get("/Lang") or ""))
            budget.check()
            n_pages = len(reader.pages)
        except BudgetExceeded as e:
            doc.reason = f"pdf: {e}"
            return doc
        except Exception as e:
            doc.reason = f"pdf unreadable: {type(e).__name__}: {str(e)[:120]}"
            return doc
        texts, hrefs, chars = [], [], 0
        try:
            for i in range(min(n_pages, limits.max_pages)):
                budget.check()
                page = reader.pages[i]
                hrefs.extend(_uris(page))
                t = page.extract_text() or ""
                texts.append(t)
                chars += len(t)
                if chars >= limits.max_text_chars:
                    doc.reason = f"pdf: text capped at {limits.max_text_chars} characters"
                    break
            else:
                if n_pages > limits.max_pages:
                    doc.reason = f"pdf: read {limits.max_pages} of {n_pages} pages"
        except BudgetExceeded as e:
            doc.reason = f"pdf: {e} after {len(texts)} of {n_pages} pages"
        except Exception as e:
            doc.reason = f"pdf: page {len(texts) + 1} unreadable: {type(e).__name__}: {str(e)[:120]}"
    text = "\n".join(texts)
    doc.links, doc.anchors, _ = resolve_links(url, [(h, "") for h in hrefs])
    doc.blocks = text_blocks(text)
    doc.text = " ".join(text.split())
    return doc
