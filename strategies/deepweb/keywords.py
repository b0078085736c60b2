"""Text-box probing (Ntoulas, Zerfos, Cho, JCDL 2005; the seed text's 文本框填写 loop).

Start from seed words (given, else the words of the form's page), submit them, mine the
result pages: every record seen for the first time adds one to the document frequency of
each word of its result item. The next queries are the unused words of highest document
frequency among the records found so far (the paper's adaptive policy: a frequent word
among downloaded records is expected to return many records, and words of records already
seen are what has not been asked yet). Stop when a batch of queries brings no new record
(once some were found) or the per-host query budget is spent.
"""
from __future__ import annotations

import re

STOP_WORDS = frozenset("""the and for with this that from your you our are was were has have
any all not but can will its into about more other new next find search results result
page pages previous showing show only also than then them they their there here what when
which who how per""".split())


def seed_words(given, page_words) -> list[str]:
    """Seed words: the given ones, else the form page's words (stop words left out)."""
    if given:
        return list(dict.fromkeys(w.lower() for w in given if w))
    return [w for w in page_words if w not in STOP_WORDS and not re.search(r"\d", w)]


def next_words(used, df: dict, seeds, k: int) -> list[str]:
    """The next k query words: unused words by document frequency among the records found
    (ties: alphabetical, so runs repeat), then unused seeds (all of them before any record
    was found)."""
    used = set(used)
    ranked = sorted((w for w in df if w not in used and w not in STOP_WORDS),
                    key=lambda w: (-df[w], w))
    out = ranked[:k]
    taken = set(out)
    out += [w for w in seeds if w not in used and w not in taken][:k - len(out)]
    return out


def count_new_words(df: dict, words_per_record) -> None:
    """Add one to each word's document frequency per record (the new records' words)."""
    for words in words_per_record:
        for w in set(words):
            df[w] = df.get(w, 0) + 1
