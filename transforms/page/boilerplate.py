"""Per-host boilerplate: text blocks that repeat across a host's pages (pure).

The page step cuts each HTML page's main content into blocks (`maintext.main_blocks`, chrome
by markup already left out) and carries them on the visited row under `BLOCKS_FOR_MINHASH`.
Before the rows are signed (`visited.visited_table`), the round learns, per host, which
blocks are *template*: a block whose fingerprint occurs on at least
``max(MIN_PAGES, SHARE * pages)`` distinct pages of that host this round (pages with the
same block list -- a mirror path, a query-order variant -- count once). Those blocks are
dropped from every page of the host and the rest, joined, is the text MinHash signs
(`visited.TEXT_FOR_MINHASH`). A page left with fewer than MIN_WORDS words is all template
and gets no signature (never a near-duplicate).

MIN_PAGES (5) is above the number of pages that genuinely share a paragraph (an original
and its few near copies, whose unedited paragraphs are equal). SHARE (half the host's pages
of the round) keeps the decision stable from round to round: a block on a fifth of a big
round's pages (a link to a popular page) would be template in that round and content in a
round with few pages of the host, and a page would be signed differently from its copy
fetched in another round (on the `neardup` web, pairs split over 4 rounds: 106/170 found
with SHARE 0, 168/170 with 0.5, 169/170 with no template at all). A site template is on
every page. The counts live for one round (`BlockCounts` is the combiner's accumulator,
bounded by the round's pages): see README "### Duplicates".
"""
from __future__ import annotations

import hashlib

BLOCKS_FOR_MINHASH = "_blocks"   # visited-row key carrying the page's main-content blocks
BLOCK_FPS = "_block_fps"         # ... and their block_fp, in order (hashed once, by the page step)
MIN_PAGES = 5
SHARE = 0.5


def block_fp(text: str) -> int:
    """64-bit fingerprint of one block's text (already whitespace-collapsed)."""
    return int.from_bytes(hashlib.blake2b(text.encode("utf-8", "replace"), digest_size=8).digest(),
                          "little", signed=True)


def block_fps(blocks) -> list[int]:
    """block_fp of each block, in order."""
    return [block_fp(b) for b in blocks]


def page_block_fps(blocks, fps=None) -> tuple[int, ...]:
    """Distinct block fingerprints of one page, sorted (the page's key for counting);
    `fps`: the blocks' block_fps when already known."""
    return tuple(sorted(set(fps if fps is not None else map(block_fp, blocks))))


class BlockCounts:
    """Per host: distinct pages (by block list) each block fingerprint occurs on."""

    __slots__ = ("counts", "pages")

    def __init__(self):
        self.pages: set = set()
        self.counts: dict[int, int] = {}

    def add_page(self, fps: tuple) -> BlockCounts:
        key = hash(fps)
        if key not in self.pages:
            self.pages.add(key)
            for f in fps:
                self.counts[f] = self.counts.get(f, 0) + 1
        return self

    def merge(self, other: BlockCounts) -> BlockCounts:
        # (a block list seen by both sides -- the same content in two bundles -- is counted
        # twice: rare, and it only lowers the bar for a block by one page)
        for f, c in other.counts.items():
            self.counts[f] = self.counts.get(f, 0) + c
        self.pages |= other.pages
        return self

    def template(self, min_pages: int = MIN_PAGES, share: float = SHARE) -> frozenset:
        """Block fingerprints on at least max(min_pages, share * pages) distinct pages."""
        need = max(min_pages, int(share * len(self.pages) + 0.999999))
        return frozenset(f for f, c in self.counts.items() if c >= need)


def host_template(pages_blocks, min_pages: int = MIN_PAGES, share: float = SHARE) -> frozenset:
    """Template block fingerprints of one host from its pages' block lists."""
    acc = BlockCounts()
    for blocks in pages_blocks:
        acc.add_page(page_block_fps(blocks))
    return acc.template(min_pages, share)


def content_text(blocks, template, fps=None) -> str:
    """The page's text for MinHash: its blocks that are not the host's template, joined
    (`fps`: the blocks' block_fps when already known)."""
    if not template:
        return " ".join(blocks)
    return " ".join(b for b, f in zip(blocks, fps if fps is not None else map(block_fp, blocks))
                    if f not in template)


def sign_text(row: dict, template, text_key: str) -> dict:
    """A copy of a visited row with its blocks moved to `text_key` as its content text
    (the host's template blocks dropped)."""
    if BLOCKS_FOR_MINHASH not in row:
        return row
    row = dict(row)
    fps = row.pop(BLOCK_FPS, None)
    row[text_key] = content_text(row.pop(BLOCKS_FOR_MINHASH), template, fps)
    return row
