"""A page's main content as text blocks, from the page step's one lxml tree (pure).

Near-duplicate search (content-seen's MinHash) must see what a page *says*, not the chrome
its site wraps every page in: on a documentation site every page carries the same long
navigation sidebar and a few sentences of its own, and a MinHash over the whole text finds
every page of the book "90 % similar" to every other. Two layers take the chrome out:

1. here, per page: subtrees that are chrome by markup are skipped -- ``nav``, ``header``,
   ``footer``, ``aside``, ``menu``, ``[role=navigation|banner|contentinfo|complementary|
   menu|menubar|search|toolbar|tablist]``, ``[hidden]``, ``[aria-hidden=true]`` and
   elements whose class is one of ``CHROME_CLASSES`` (``sidebar``, ``navbar``, ``toc``...);
2. per host, across the pages of the round (`transforms.page.boilerplate`): text blocks
   that repeat on several distinct pages of one host (a sidebar written as plain divs).

What is left is cut into *blocks*: the text of one block-level element (``p``, ``li``,
``td``, ``h1``..., or a ``div``'s own run of inline text), whitespace collapsed, document
order, empty blocks dropped. Inline elements (``a``, ``span``, ``code``, ...) stay inside
the block around them. The whole-body `text` (ParsedPage.text, text_fp) and the body
fingerprint (content_fp, exact duplicates) are unchanged by any of this.
"""
from __future__ import annotations

from lxml import etree

CHROME_TAGS = frozenset(["nav", "header", "footer", "aside", "menu"])
CHROME_ROLES = frozenset(["navigation", "banner", "contentinfo", "complementary", "menu",
                          "menubar", "search", "toolbar", "tablist"])
CHROME_CLASSES = frozenset(["sidebar", "navbar", "nav", "navigation", "menu", "breadcrumb",
                            "breadcrumbs", "toc", "footer", "site-header", "site-footer",
                            "skip-link", "related-links"])
INLINE_TAGS = frozenset([
    "a", "abbr", "acronym", "b", "bdi", "bdo", "big", "cite", "code", "data", "dfn", "em",
    "font", "i", "img", "kbd", "label", "mark", "nobr", "q", "s", "samp", "small", "span",
    "strike", "strong", "sub", "sup", "time", "tt", "u", "var", "wbr", "abbr", "ins", "del"])


def is_chrome(el) -> bool:
    """True for an element whose subtree is site chrome by its markup (see module doc)."""
    if el.tag in CHROME_TAGS:
        return True
    attrib = el.attrib
    if not attrib:
        return False
    role = attrib.get("role")
    if role is not None and role.strip().lower() in CHROME_ROLES:
        return True
    if "hidden" in attrib or attrib.get("aria-hidden", "").strip().lower() == "true":
        return True
    cls = attrib.get("class")
    return bool(cls) and any(c in CHROME_CLASSES for c in cls.lower().split())


def main_blocks(root) -> list[str]:
    """Text blocks of the main content under `root` (an lxml element, e.g. ``<body>``):
    chrome subtrees skipped, one block per block-level element's own text run."""
    blocks: list[str] = []
    run: list[str] = []

    def flush():
        if run:
            t = " ".join(" ".join(run).split())
            run.clear()
            if t:
                blocks.append(t)

    walk = etree.iterwalk(root, events=("start", "end"))
    skipped = None            # the chrome element whose subtree is being skipped
    for event, el in walk:
        tag = el.tag
        if not isinstance(tag, str):   # comments / processing instructions: only a tail
            if event == "end" and el.tail and skipped is None:
                run.append(el.tail)
            continue
        if event == "start":
            if el is not root and is_chrome(el):
                skipped = el
                walk.skip_subtree()
                continue
            if tag not in INLINE_TAGS:
                flush()
            if el.text:
                run.append(el.text)
        else:
            if el is skipped:
                skipped = None
            elif tag not in INLINE_TAGS:
                flush()
            if el.tail and el is not root:
                run.append(el.tail)
    flush()
    return blocks
