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
    cls = attrib.get("class")
    return (bool(cls) and _chrome_class(cls)) or _marked_chrome(attrib)


def _chrome_class(cls: str) -> bool:
    """A class attribute naming one of CHROME_CLASSES (any case)."""
    return not CHROME_CLASSES.isdisjoint(cls.lower().split())


def _marked_chrome(attrib) -> bool:
    """Chrome by role, `hidden` or `aria-hidden=true` (the attributes other than class)."""
    role = attrib.get("role")
    if role is not None and role.strip().lower() in CHROME_ROLES:
        return True
    return "hidden" in attrib or attrib.get("aria-hidden", "").strip().lower() == "true"


_CHROME_ATTRS = frozenset(["role", "hidden", "aria-hidden", "class"])   # what is_chrome reads
_MARKS = frozenset(["role", "hidden", "aria-hidden"])   # what _marked_chrome reads


def _block(parts: list[str]) -> str:
    return " ".join(" ".join(parts).split())


def main_blocks(root) -> list[str]:
    """Text blocks of the main content under `root` (an lxml element, e.g. ``<body>``):
    chrome subtrees skipped, one block per block-level element's own text run."""
    return blocks_and_text(root)[0]


def blocks_and_text(root) -> tuple[list[str], str]:
    """(main_blocks(root), all text of `root` whitespace-collapsed): the second is
    ``" ".join(" ".join(root.itertext()).split())`` (chrome included), read in the same walk.

    A depth-first walk over the children lists with an explicit stack (no recursion limit,
    no per-node events): a block-level element ends the run before it and the run at its
    end; an inline element, a skipped chrome subtree, a comment or a processing
    instruction does not (their tails join the run around them). `is_chrome`'s attribute
    test runs only for elements with an attribute it reads."""
    blocks: list[str] = []
    run: list[str] = []
    every: list[str] = []     # every text node, in itertext's order
    append, keep = run.append, every.append
    inline, chrome_tags, chrome_attrs, marks = INLINE_TAGS, CHROME_TAGS, _CHROME_ATTRS, _MARKS
    # each distinct class attribute is tested once a walk: a page repeats a few class strings
    # on most of its elements (a Debian documentation page: ~130 such elements)
    by_class = {None: False, "": False}
    if root.text:
        append(root.text)
        keep(root.text)
    stack = [(root, iter(root), root.tag not in inline)]   # (element, its children, block?)
    while stack:
        parent, children, block = stack[-1]
        for el in children:
            tag = el.tag
            if tag.__class__ is not str:   # comment / PI: only its tail
                tail = el.tail
                if tail:
                    append(tail)
                    keep(tail)
                continue
            if tag in chrome_tags:
                chrome = True
            elif (keys := el.keys()) and not chrome_attrs.isdisjoint(keys):   # is_chrome's test
                cls = el.get("class")
                chrome = by_class.get(cls)
                if chrome is None:
                    chrome = by_class[cls] = _chrome_class(cls)
                chrome = chrome or (not marks.isdisjoint(keys) and _marked_chrome(el.attrib))
            else:
                chrome = False
            if chrome:
                every.extend(el.itertext())   # chrome: in the text, not in the blocks
                tail = el.tail
                if tail:
                    append(tail)
                    keep(tail)
                continue
            text = el.text
            if tag in inline:
                if text:
                    append(text)
                    keep(text)
                if len(el):
                    stack.append((el, iter(el), False))
                    break
            else:
                if run:
                    t = _block(run)
                    run.clear()
                    if t:
                        blocks.append(t)
                if text:
                    keep(text)
                    if len(el):
                        append(text)
                    else:   # a leaf block: its text is its block
                        t = " ".join(text.split())
                        if t:
                            blocks.append(t)
                if len(el):
                    stack.append((el, iter(el), True))
                    break
            tail = el.tail
            if tail:
                append(tail)
                keep(tail)
        else:   # all children done: leave `parent`
            stack.pop()
            if block and run:
                t = _block(run)
                run.clear()
                if t:
                    blocks.append(t)
            if stack:
                tail = parent.tail
                if tail:
                    append(tail)
                    keep(tail)
    if run:
        t = _block(run)
        if t:
            blocks.append(t)
    return blocks, _block(every)
