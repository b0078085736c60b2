"""Topic relevance for vertical (focused) crawling: TF-IDF cosine similarity (plain numpy).

A topic is a bag of words (keywords and/or the text of example pages). A text's relevance
is the cosine between the two TF-IDF vectors:

    w(t) = (1 + log tf(t)) · idf(t),   idf(t) = log((1 + N) / (1 + df(t))) + 1
    sim(q, d) = Σ_t w_q(t) w_d(t) / (|w_q| |w_d|)                         in [0, 1]

Terms are lower-cased word tokens (Unicode `\\w+`, at least two characters, not all digits),
hashed into NUM_BUCKETS buckets (feature hashing: the document-frequency state is one
fixed-size array, whatever the vocabulary; collisions are rare at 2^18 and only add noise).
N and df are gathered as the crawl goes (`DocFreq`: every parsed page of every round so
far); with none gathered yet (the seed round) every idf is 1 and the cosine is plain TF.

`anchor_contexts` takes the words around each anchor text in a page's text, the "anchor
context" of Shark-Search (Hersovici et al. 1998).
"""
from __future__ import annotations

import re
import zlib
from bisect import bisect_right
from dataclasses import dataclass

import numpy as np

NUM_BUCKETS = 1 << 18
_TOKEN = re.compile(r"\w\w+", re.UNICODE)
DOCS_BUCKET = -1      # the docfreq table's row holding N (documents counted)


def tokens(text: str | None) -> list[str]:
    """Lower-case word tokens of `text` (two characters or more, not all digits)."""
    return [t for t in _TOKEN.findall((text or "").lower()) if not t.isdigit()]


def term_ids(toks) -> np.ndarray:
    """Bucket of each token (crc32 mod NUM_BUCKETS: the same in every process)."""
    return np.fromiter((zlib.crc32(t.encode("utf-8")) % NUM_BUCKETS for t in toks),
                       dtype=np.int64, count=len(toks))


def term_counts(text) -> tuple[np.ndarray, np.ndarray]:
    """(sorted unique term ids, their counts) of a text."""
    ids = term_ids(tokens(text))
    if len(ids) == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    return np.unique(ids, return_counts=True)


@dataclass(frozen=True)
class DocFreq:
    """Document frequencies gathered so far: `terms` (sorted ids) with `df`, over `docs` documents."""
    terms: np.ndarray = None
    df: np.ndarray = None
    docs: int = 0

    @classmethod
    def from_table(cls, table) -> DocFreq:
        """From a docfreq table (term, df; any number of rows per term: they are summed;
        the DOCS_BUCKET rows hold the document counts)."""
        if table is None or table.num_rows == 0:
            return cls(np.zeros(0, np.int64), np.zeros(0, np.int64), 0)
        t = np.asarray(table.column("term").to_numpy(), np.int64)
        d = np.asarray(table.column("df").to_numpy(), np.int64)
        docs = int(d[t == DOCS_BUCKET].sum())
        keep = t != DOCS_BUCKET
        terms, inv = np.unique(t[keep], return_inverse=True)
        return cls(terms, np.bincount(inv, weights=d[keep]).astype(np.int64), docs)

    def idf(self, ids: np.ndarray) -> np.ndarray:
        if self.docs == 0 or self.terms is None or len(self.terms) == 0:
            return np.ones(len(ids))
        pos = np.clip(np.searchsorted(self.terms, ids), 0, len(self.terms) - 1)
        df = np.where(self.terms[pos] == ids, self.df[pos], 0)
        return np.log((1.0 + self.docs) / (1.0 + df)) + 1.0


def count_docs(term_sets) -> dict:
    """{term: documents containing it, DOCS_BUCKET: documents} of an iterable of per-document
    unique term-id arrays (a round's share of the docfreq table)."""
    sets = [np.asarray(s, np.int64) for s in term_sets]
    out = {DOCS_BUCKET: len(sets)}
    if sets:
        ids, counts = np.unique(np.concatenate(sets), return_counts=True)
        out.update(zip(ids.tolist(), counts.tolist()))
    return out


@dataclass(frozen=True)
class Topic:
    """The topic's terms (sorted ids) and counts, and the document frequencies to weigh them."""
    terms: np.ndarray
    counts: np.ndarray
    docfreq: DocFreq = DocFreq()

    @classmethod
    def from_texts(cls, texts, docfreq: DocFreq | None = None) -> Topic:
        ids, counts = term_counts(" ".join(t for t in texts if t))
        return cls(ids, counts, docfreq or DocFreq())

    def with_docfreq(self, docfreq: DocFreq) -> Topic:
        return Topic(self.terms, self.counts, docfreq)

    @property
    def empty(self) -> bool:
        return len(self.terms) == 0

    def _weights(self, ids, counts):
        return (1.0 + np.log(counts.astype(np.float64))) * self.docfreq.idf(ids)

    def similarity(self, text) -> float:
        """TF-IDF cosine similarity of `text` with the topic, in [0, 1]."""
        ids, counts = term_counts(text)
        if len(ids) == 0 or self.empty:
            return 0.0
        wd = self._weights(ids, counts)
        wq = self._weights(self.terms, self.counts)
        common, iq, idd = np.intersect1d(self.terms, ids, assume_unique=True, return_indices=True)
        if len(common) == 0:
            return 0.0
        cos = float(wq[iq] @ wd[idd]) / float(np.linalg.norm(wq) * np.linalg.norm(wd))
        return min(1.0, max(0.0, cos))

    def similarities(self, texts) -> np.ndarray:
        return np.array([self.similarity(t) for t in texts], dtype=np.float64)


def anchor_contexts(text: str, anchors, window: int) -> list[str]:
    """For each anchor text, the `window` words before and after its first occurrence in
    `text` (the anchor itself left out); '' when the anchor is empty or not in the text."""
    if window <= 0 or not text:
        return ["" for _ in anchors]
    words = text.split()
    starts, pos = [], 0
    low = " ".join(words).lower()
    for w in words:
        starts.append(pos)
        pos += len(w) + 1
    out = []
    for a in anchors:
        a = " ".join((a or "").split()).lower()
        at = low.find(a) if a else -1
        if at < 0:
            out.append("")
            continue
        first = bisect_right(starts, at) - 1
        last = bisect_right(starts, at + len(a) - 1)   # one past the anchor's last word
        out.append(" ".join(words[max(0, first - window):first] + words[last:last + window]))
    return out
