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
bounded by the round's pages): see docs/duplicates.md.
"""
from __future__ import annotations

import hashlib
from array import array

import numpy as np

from transforms.urls.fpsets import member

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
    """Per host: distinct pages (by block list) each block fingerprint occurs on.

    Held as arrays, not a dict of Python ints: a block fingerprint costs 16 bytes counted
    plus 8 while it waits in the page buffer, where a dict entry kept its boxed int alive too
    (one host's accumulator grows with its pages in the round: 45 000 pages of 3 shared and
    3 own blocks held 13.0 MB as a dict, 2.4-3.5 MB as arrays). Pages are buffered as they
    come and folded into the sorted counts once the buffer has grown to half their size
    (`_fold`), so a host's folds cost O(n log n) in all."""

    __slots__ = ("_fps", "_counts", "_keys", "_page_keys", "_page_sizes", "_page_fps")

    FOLD_MIN = 4096   # buffered fingerprints before the first fold

    def __init__(self):
        self._fps = np.empty(0, np.int64)      # distinct block fps, sorted
        self._counts = np.empty(0, np.int64)   # ... the distinct pages each is on
        self._keys = np.empty(0, np.int64)     # the counted pages' keys (hash of the fps), sorted
        self._clear_buffer()

    def _clear_buffer(self):
        self._page_keys, self._page_sizes, self._page_fps = array("q"), array("q"), array("q")

    def add_page(self, fps: tuple) -> BlockCounts:
        """Count a page's distinct block fps (`page_block_fps`), once per distinct list."""
        self._page_keys.append(hash(fps))
        self._page_sizes.append(len(fps))
        self._page_fps.extend(fps)
        if len(self._page_fps) >= max(self.FOLD_MIN, len(self._fps) // 2):
            self._fold()
        return self

    def _fold(self):
        """The buffered pages into the counts: a page whose key was counted already (before
        or earlier in the buffer) adds nothing."""
        if not len(self._page_keys):
            return
        keys = np.frombuffer(self._page_keys, np.int64)
        # each key's first page in the buffer, by a stable sort (numpy 2.4's np.unique with
        # return_index took 22 ms on 200 000 keys where np.sort took 2.3: see fpsets)
        order = np.argsort(keys, kind="stable")
        ordered = keys[order]
        new = np.zeros(len(keys), bool)
        new[order[np.r_[True, ordered[1:] != ordered[:-1]]]] = True
        new &= ~member(keys, self._keys)
        fps = np.frombuffer(self._page_fps, np.int64)[np.repeat(new, np.frombuffer(self._page_sizes, np.int64))]
        self._keys = _union(self._keys, np.sort(keys[new]))
        self._add_counts(*np.unique(fps, return_counts=True))   # (counts: sort-based)
        self._clear_buffer()

    def _add_counts(self, fps, counts):
        """Counts of distinct sorted `fps` added (inserted: the whole is not sorted again)."""
        at, known = _places(self._fps, fps)
        self._counts[at[known]] += counts[known]
        self._fps = np.insert(self._fps, at[~known], fps[~known])
        self._counts = np.insert(self._counts, at[~known], counts[~known])

    def merge(self, other: BlockCounts) -> BlockCounts:
        # (a block list seen by both sides -- the same content in two bundles -- is counted
        # twice: rare, and it only lowers the bar for a block by one page)
        self._fold()
        other._fold()
        self._add_counts(other._fps, other._counts)
        self._keys = _union(self._keys, other._keys)
        return self

    def template(self, min_pages: int = MIN_PAGES, share: float = SHARE) -> frozenset:
        """Block fingerprints on at least max(min_pages, share * pages) distinct pages."""
        self._fold()
        need = max(min_pages, int(share * len(self._keys) + 0.999999))
        return frozenset(self._fps[self._counts >= need].tolist())

    def __getstate__(self):   # (an accumulator between the combine's steps: folded, arrays only)
        self._fold()
        return self._fps, self._counts, self._keys

    def __setstate__(self, state):
        self._fps, self._counts, self._keys = state
        self._clear_buffer()


def _places(sorted_a, b):
    """Where each of `b` goes in `sorted_a`, and whether it is there already."""
    at = np.searchsorted(sorted_a, b)
    if not len(sorted_a):
        return at, np.zeros(len(b), bool)
    return at, sorted_a[np.minimum(at, len(sorted_a) - 1)] == b


def _union(sorted_a, sorted_b):
    """Two sorted distinct arrays as one (`sorted_b` inserted: the whole is not sorted again)."""
    at, known = _places(sorted_a, sorted_b)
    return np.insert(sorted_a, at[~known], sorted_b[~known])


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
