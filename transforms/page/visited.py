"""VISITED tables of a batch of visited rows, and the counters a round reports of them (pure)."""

import numpy as np
import pyarrow as pa

from schemas import tables
from transforms.contentseen import fingerprints as contentseen

TEXT_FOR_MINHASH = "_text"  # visited-row key carrying a page's text to visited_table


def visited_table(rows, sign=None):
    """VISITED table of a batch of visited rows; MinHash signatures of the rows that carry
    their text, and their LSH band keys (`lsh_keys`, [] for the other rows), are computed
    here for the whole batch in one call (`sign`, texts -> (signatures, has), defaults to
    `minhash_signatures`; pool.SignPool splits it over two processes). Both columns are
    built from the arrays, not from 128 Python ints a row."""
    idx, texts = take_texts(rows)
    return build_table(rows, idx, (sign or contentseen.minhash_signatures)(texts) if texts else None)


def take_texts(rows):
    """(positions, texts) of the rows that carry their text for MinHash (taken out of them)."""
    texts = [(i, r.pop(TEXT_FOR_MINHASH)) for i, r in enumerate(rows) if TEXT_FOR_MINHASH in r]
    return [i for i, _ in texts], [t for _, t in texts]


def build_table(rows, idx, signed):
    """`visited_table` of rows whose texts at `idx` were signed: `signed` = (signatures, has)."""
    sigs = np.zeros((len(rows), contentseen.NUM_PERM), np.uint32)
    has = np.zeros(len(rows), bool)
    if idx:
        sigs[idx], has[idx] = signed
    table = pa.Table.from_pylist(rows, schema=tables.VISITED)
    for name, column in (("minhash", contentseen.signature_column(sigs, has)),
                         ("lsh_keys", contentseen.lsh_key_column(sigs, has))):
        table = table.set_column(table.schema.get_field_index(name), name, column)
    return table


def visited_stats(table):
    out = {"visited": table.num_rows}
    for outcome, count in zip(*np.unique(np.array(table.column("outcome").to_pylist(), dtype=str),
                                         return_counts=True)):
        out[f"outcome_{outcome}"] = int(count)
    for s in table.column("http_status").to_pylist():
        key = f"status_{s // 100}xx" if s else "status_none"
        out[key] = out.get(key, 0) + 1
    out["bytes"] = int(sum(b or 0 for b in table.column("bytes").to_pylist()))
    # refused by the address guard: not downloaded; counted by the guard's reason
    for outcome, reason in zip(table.column("outcome").to_pylist(), table.column("reason").to_pylist()):
        if outcome == tables.FORBIDDEN_ADDRESS:
            key = f"refused_guard_{reason or 'unknown'}"
            out[key] = out.get(key, 0) + 1
    return out


def harvest_stats(table, threshold):
    """Pages whose text was scored against the topic, and the relevant ones among them
    (outcome ok: an exact duplicate is a fetch that harvested nothing new)."""
    rel = table.column("relevance").to_numpy(zero_copy_only=False).astype(float)
    ok = np.asarray(table.column("outcome").to_numpy(zero_copy_only=False) == tables.OK)
    scored = ~np.isnan(rel) & ok
    return {"topic_scored": int(scored.sum()),
            "topic_relevant": int((rel[scored] >= threshold).sum())}


def docfreq_table(counts: dict):
    """The round's DOCFREQ delta from strategies.topic.count_docs counts."""
    return pa.table({"term": pa.array(list(counts), pa.int64()),
                     "df": pa.array(list(counts.values()), pa.int64())}, schema=tables.DOCFREQ)


def retry_stats(table):
    return {"retried": int((~table.column("final").to_numpy(zero_copy_only=False)).sum())}
