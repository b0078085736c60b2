import random

import apache_beam as beam
import numpy as np
import pyarrow as pa
import pytest
import pyarrow.parquet as pq
from apache_beam.io.parquetio import ReadAllFromParquetBatched
from apache_beam.testing.test_pipeline import TestPipeline
from apache_beam.testing.util import assert_that, equal_to

from transforms.contentseen import fingerprints as contentseen_fingerprints
from transforms.tableio.step import sum_dicts
from transforms.contentseen import step as contentseen_step
from transforms.contentseen import duplicates as contentseen_duplicates


def pages(rows):
    return pa.Table.from_pylist(rows, schema=pa.schema([
        ("fp", pa.int64()), ("url", pa.string()), ("host", pa.string()),
        ("round", pa.int32()), ("content_fp", pa.int64())]))


# ---------------------------------------------------------------- fingerprints
def test_mirror_body_with_self_links_in_any_case_has_the_same_fingerprint():
    a = b'<a href="HTTP://SiTe1.example/x">x</a>\n  <a href="mailto:w@site1.example">c</a>'
    b = b'<a href="HTTP://MiRrOr1.ExAmPlE/x">x</a> <a href="mailto:w@mirror1.example">c</a>'
    assert contentseen_fingerprints.body_fingerprint(a, "http://site1.example/x") == \
        contentseen_fingerprints.body_fingerprint(b, "http://mirror1.example:8080/x")
    assert contentseen_fingerprints.body_fingerprint(a, "http://site1.example/") != contentseen_fingerprints.body_fingerprint(a + b"!", "http://site1.example/")
    assert contentseen_fingerprints.body_fingerprint(b"", "http://a/") == 0


def test_text_fingerprint_ignores_whitespace_only():
    assert contentseen_fingerprints.text_fingerprint("a  b\nc") == contentseen_fingerprints.text_fingerprint(" a b c ")
    assert contentseen_fingerprints.text_fingerprint("a b c") != contentseen_fingerprints.text_fingerprint("a b d")


# ---------------------------------------------------------------- MinHash
def test_signatures_match_datasketch_and_round_trip_through_arrow():
    from datasketch import MinHash
    texts = ["the quick brown fox jumps over the lazy dog again", "too short", ""]
    sigs, has = contentseen_fingerprints.minhash_signatures(texts)
    assert sigs.shape == (3, 128) and sigs.dtype == np.uint32 and has.tolist() == [True, False, False]
    m = MinHash(num_perm=128, seed=1)
    m.update_batch(contentseen_fingerprints.shingles(texts[0]))
    assert np.array_equal(sigs[0], m.hashvalues)
    col = contentseen_fingerprints.signature_column(sigs, has)
    assert col.type == contentseen_fingerprints.MINHASH_TYPE and col.null_count == 2
    back, valid = contentseen_fingerprints.signatures_of(col)
    assert valid.tolist() == [True, False, False] and np.array_equal(back[0], sigs[0])


def test_a_batch_of_pages_sharing_shingles_signs_each_as_datasketch_does():
    from datasketch import MinHash
    words = "alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu".split()
    texts = [" ".join(words[i:] + words[:i]) for i in range(6)] + ["", "x y", " ".join(reversed(words))]
    sigs, has = contentseen_fingerprints.minhash_signatures(texts)
    for text, sig, signed in zip(texts, sigs, has):
        sh = contentseen_fingerprints.shingles(text)
        assert signed == bool(sh)
        if sh:
            m = MinHash(num_perm=128, seed=1)
            m.update_batch(sh)
            assert np.array_equal(sig, m.hashvalues), text


def test_lsh_params_are_datasketch_s():
    from datasketch import MinHashLSH
    lsh = MinHashLSH(threshold=0.9, num_perm=128)
    assert contentseen_fingerprints.lsh_params(0.9, 128) == (lsh.b, lsh.r) == (5, 25)


# ---------------------------------------------------------------- exact
def test_first_url_is_the_earliest_round_then_smallest_fp():
    old = pages([dict(fp=50, url="old50", host="a", round=1, content_fp=7),
                 dict(fp=40, url="old40", host="b", round=2, content_fp=7)])
    new = pages([dict(fp=10, url="new10", host="m", round=3, content_fp=7),
                 dict(fp=20, url="new20", host="m", round=3, content_fp=8),
                 dict(fp=30, url="new30", host="m", round=3, content_fp=8),
                 dict(fp=60, url="new60", host="m", round=3, content_fp=0)])
    d = contentseen_duplicates.exact_duplicates(new, old, round_no=3)
    got = {r["url"]: r["duplicate_of"] for r in d.to_pylist()}
    assert got == {"new10": "old50", "new30": "new20"}


def test_refetch_of_the_first_url_is_not_its_own_duplicate():
    old = pages([dict(fp=5, url="u5", host="a", round=1, content_fp=9)])
    new = pages([dict(fp=5, url="u5", host="a", round=2, content_fp=9)])
    assert contentseen_duplicates.exact_duplicates(new, old, 2).num_rows == 0


def test_content_seen_in_beam_equals_the_pure_function_and_ignores_unrelated_old_rows():
    rng = np.random.default_rng(3)
    n_old, n_new = 3000, 500
    old_cfp = rng.integers(1, 400, size=n_old)
    old = pages([dict(fp=int(i) * 7 + 1, url=f"o{i}", host=f"h{i % 5}", round=int(1 + i % 3),
                      content_fp=int(c)) for i, c in enumerate(old_cfp)])
    new_cfp = rng.integers(300, 900, size=n_new)
    new = pages([dict(fp=int(i) * 11 + 2, url=f"n{i}", host="m", round=4, content_fp=int(c))
                 for i, c in enumerate(new_cfp)]).drop_columns(["round"])
    expected = contentseen_duplicates.exact_duplicates(new, old, 4).to_pylist()
    assert len(expected) > 100
    with TestPipeline(runner="FnApiRunner") as p:
        out = {"new": p | "N" >> beam.Create([new.slice(0, 200), new.slice(200)]),
               "old": p | "O" >> beam.Create([old.slice(0, 1000), old.slice(1000)])} \
            | contentseen_step.ContentSeen(round_no=4, buckets=5)
        rows = out | beam.FlatMap(lambda t: [tuple(sorted(r.items())) for r in t.to_pylist()])
        assert_that(rows, equal_to([tuple(sorted(r.items())) for r in expected]))


def test_suspect_mirrors_counts_host_pairs():
    d = pa.Table.from_pylist(
        [dict(fp=i, url=f"m/{i}", host="mirror", content_fp=i, duplicate_of=f"s/{i}",
              duplicate_of_fp=100 + i, duplicate_of_host="site", duplicate_of_round=1)
         for i in range(4)] +
        [dict(fp=9, url="x/1", host="x", content_fp=9, duplicate_of="y/1", duplicate_of_fp=99,
              duplicate_of_host="y", duplicate_of_round=1)], schema=contentseen_fingerprints.DUPLICATES)
    assert contentseen_duplicates.suspect_mirrors(d, min_pages=3) == [("mirror", "site", 4)]


# ---------------------------------------------------------------- near (LSH in Beam)
def _corpus(n, seed=5, near_share=0.1):
    """n texts over a 3000-word vocabulary; some are copies with a few words changed."""
    r = random.Random(seed)
    vocab = [f"w{i}" for i in range(3000)]
    texts = []
    for i in range(n):
        if texts and r.random() < near_share:
            ws = r.choice(texts).split()
            for _ in range(r.choice([1, 2, 4, 8, 16])):
                ws[r.randrange(len(ws))] = r.choice(vocab)
            texts.append(" ".join(ws))
        else:
            texts.append(" ".join(r.choice(vocab) for _ in range(r.randint(60, 160))))
    return texts


def _table(fps, urls, rounds, sigs):
    return pa.table({"fp": pa.array(fps, pa.int64()), "url": pa.array(urls, pa.string()),
                     "round": pa.array(rounds, pa.int32()), "minhash": contentseen_fingerprints.signature_column(sigs)})


@pytest.fixture(scope="module")
def lsh_case(tmp_path_factory):
    """10 000 pages over two rounds as Parquet, and datasketch MinHashLSH's pairs."""
    from datasketch import LeanMinHash, MinHashLSH
    n = 10_000
    sigs, has = contentseen_fingerprints.minhash_signatures(_corpus(n))
    assert has.all()
    fps = np.arange(1, n + 1, dtype=np.int64) * 1000003
    rounds = np.repeat(np.arange(1, 3), n // 2).astype(np.int32)
    urls = [f"u{f}" for f in fps]
    d = tmp_path_factory.mktemp("lsh")
    files = {}
    for r in (1, 2):
        idx = np.flatnonzero(rounds == r)
        files[r] = []
        for k in range(0, len(idx), 1000):
            part = idx[k:k + 1000]
            f = str(d / f"r{r}-{k}.parquet")
            pq.write_table(_table(fps[part], [urls[i] for i in part], rounds[part], sigs[part]), f)
            files[r].append(f)
    # datasketch, in memory: insert all, query each; pair (later, earlier) by (round, fp)
    lsh = MinHashLSH(threshold=0.9, num_perm=128, params=contentseen_fingerprints.LSH_PARAMS)
    mh = [LeanMinHash(seed=1, hashvalues=s, scheme="affine32") for s in sigs]
    for i in range(n):
        lsh.insert(i, mh[i])
    pairs = {}
    for i in range(n):
        for j in lsh.query(mh[i]):
            if j != i and (rounds[j], fps[j]) < (rounds[i], fps[i]):
                pairs[(int(fps[i]), int(fps[j]))] = mh[i].jaccard(mh[j])
    rank = {int(f): int(r) for f, r in zip(fps, rounds)}
    return files, pairs, rank


def _clusters_match_pairs(pairs, rank, rnd, thr):
    """A matcher: one ASSIGNMENTS table whose rows are exactly the pages of round `rnd` with
    a datasketch pair (estimate >= thr) to an earlier page; each row's `of` is such a pair
    with its estimate, and its cluster head is earlier and in the same connected component."""
    mine = {k: j for k, j in pairs.items() if rank[k[0]] == rnd and j >= thr}
    parent = {}

    def find(x):
        while parent.get(x, x) != x:
            x = parent[x]
        return x
    for a, b in mine:
        parent[find(a)] = find(b)

    def check(actual):
        (t,) = actual
        rows = t.to_pylist()
        assert mine and sorted(r["fp"] for r in rows) == sorted({a for a, _ in mine})
        for r in rows:
            assert abs(mine[(r["fp"], r["of_fp"])] - r["jaccard"]) < 1e-9
            assert (r["cluster_round"], r["cluster_fp"]) < (rank[r["fp"]], r["fp"])
            assert find(r["cluster_fp"]) == find(r["fp"])
    return check


def test_beam_banding_gives_clusters_of_datasketch_minhashlsh_pairs_on_10000_pages(lsh_case):
    """Round 1 (5 000 new pages), then round 2 (5 000 new against round 1's as visited):
    with min_jaccard 0 every LSH candidate pair, with 0.9 those whose estimate is >= 0.9,
    seen as clusters: one row per page with a pair."""
    files, pairs, rank = lsh_case
    assert len(pairs) > 100 and sum(j >= 0.9 for j in pairs.values()) > 40
    for rnd, old_files in ((1, []), (2, files[1])):
        with TestPipeline(runner="FnApiRunner") as p:
            def read(label, fs):
                if not fs:
                    return p | label >> beam.Create([], reshuffle=False).with_output_types(pa.Table)
                return (p | f"{label}Files" >> beam.Create(fs, reshuffle=False)
                        | f"Read{label}" >> ReadAllFromParquetBatched())
            inputs = {"new": read("New", files[rnd]), "old": read("Old", old_files)}
            for thr in (0.0, 0.9):
                got = inputs | f"Near{thr}" >> contentseen_step.NearClusters(
                    threshold=0.9, min_jaccard=thr, buckets=8, cap=0)
                assert_that(got, _clusters_match_pairs(pairs, rank, rnd, thr), label=f"Check{thr}")


def test_two_phase_old_side_gives_datasketch_minhashlsh_pairs_on_10000_pages(lsh_case, tmp_path):
    """Round 2 against round 1 with the round's old side (contentseen.step.OldHits: a probe of
    narrow columns, hit rows read wide): datasketch's pairs, from visited files with
    `lsh_keys` and from files written before the column (keys recomputed from minhash)."""
    from schemas import tables
    from transforms.contentseen import oldside as contentseen_oldside
    from transforms.contentseen import step as contentseen_step
    from transforms.tableio.step import ReadTables
    files, pairs, rank = lsh_case
    keyed = []
    for f in files[1]:
        t = pq.read_table(f)
        keyed.append(str(tmp_path / f.rsplit("/", 1)[-1]))
        pq.write_table(t.append_column("lsh_keys", contentseen_fingerprints.lsh_key_column(*contentseen_fingerprints.signatures_of(t.column("minhash")))),
                       keyed[-1])
    for label, old_files in (("legacy", files[1]), ("keyed", keyed)):
        with TestPipeline(runner="FnApiRunner") as p:
            new = p | "New" >> ReadTables(files[2], tables.VISITED)
            old = p | "Old" >> ReadTables(old_files, tables.VISITED, contentseen_oldside.OLD_COLUMNS, with_positions=True)
            hits = {"new": new, "old": old} | contentseen_step.OldHits(round_no=2, near=True, max_group=0)
            for thr in (0.0, 0.9):
                got = ({"new": new, "old": hits["near"]}
                       | f"Near{thr}" >> contentseen_step.NearClusters(threshold=0.9, min_jaccard=thr, buckets=8,
                                                                     cap=0))
                assert_that(got, _clusters_match_pairs(pairs, rank, 2, thr), label=f"Check{thr}")


def test_old_side_without_url_names_the_first_by_fp():
    old = pages([dict(fp=50, url="old50", host="a", round=1, content_fp=7)]).select(["fp", "round", "content_fp"])
    new = pages([dict(fp=10, url="new10", host="m", round=2, content_fp=7)])
    (row,) = contentseen_duplicates.exact_duplicates(new, old, 2).to_pylist()
    assert (row["duplicate_of"], row["duplicate_of_fp"]) == (None, 50)


def test_near_host_counts_cover_all_of_a_hosts_pages_whatever_the_batches():
    """A host's share of pages in clusters is of all its pages of the round, also when its
    hit and its other pages came in different VISITED tables (it was per table before)."""
    from transforms.contentseen import clusters
    asg = pa.table({"fp": pa.array([1], pa.int64()), "cluster_fp": pa.array([2], pa.int64()),
                    "cluster_round": pa.array([1], pa.int32()), "of_fp": pa.array([2], pa.int64()),
                    "of_url": ["b"], "of_round": pa.array([1], pa.int32()), "jaccard": [0.95]},
                   schema=clusters.ASSIGNMENTS)
    first = pa.table({"fp": pa.array([1, 5], pa.int64()), "host": ["h", "g"]})
    second = pa.table({"fp": pa.array([6, 7, 8], pa.int64()), "host": ["h", "h", "g"]})
    with TestPipeline(runner="FnApiRunner") as p:
        empty = p | "NoDups" >> beam.Create([], reshuffle=False)
        stats = {"duplicates": empty, "mirrors": p | "NoMirrors" >> beam.Create([], reshuffle=False),
                 "clusters": p | "N" >> beam.Create([asg]),
                 "visited": p | "V" >> beam.Create([first, second])} | contentseen_step.ContentSeenStats()
        summed = stats | beam.combiners.ToList() | beam.Map(sum_dicts)
        assert_that(summed | beam.Map(lambda d: {k: v for k, v in d.items() if k.startswith("near_host")}),
                    equal_to([{"near_host_pages:h": 1, "near_host_visited:h": 3}]))


def test_mirror_and_stats_transforms_count_a_round():
    d = pa.Table.from_pylist(
        [dict(fp=i, url=f"m/{i}", host="mirror", content_fp=i, duplicate_of=f"s/{i}",
              duplicate_of_fp=100 + i, duplicate_of_host="site", duplicate_of_round=1)
         for i in range(5)], schema=contentseen_fingerprints.DUPLICATES)
    from transforms.contentseen import clusters
    asg = pa.table({"fp": pa.array([1, 4, 5], pa.int64()), "cluster_fp": pa.array([2, 2, 9], pa.int64()),
                    "cluster_round": pa.array([1, 1, 1], pa.int32()), "of_fp": pa.array([2, 2, 9], pa.int64()),
                    "of_url": ["b", "b", "i"], "of_round": pa.array([1, 1, 1], pa.int32()),
                    "jaccard": [0.95, 0.92, 0.91]}, schema=clusters.ASSIGNMENTS)
    visited = pa.table({"fp": pa.array([1, 4, 5, 6], pa.int64()), "host": ["h", "h", "g", "h"]})
    with TestPipeline(runner="FnApiRunner") as p:
        dups = p | "D" >> beam.Create([d.slice(0, 2), d.slice(2)])
        mirrors = dups | contentseen_step.SuspectMirrors(min_pages=3)
        assert_that(mirrors, equal_to([("mirror", "site", 5)]), label="Mirrors")
        stats = {"duplicates": dups, "clusters": p | "N" >> beam.Create([asg]),
                 "visited": p | "V" >> beam.Create([visited]),
                 "mirrors": mirrors} | contentseen_step.ContentSeenStats()
        summed = stats | beam.combiners.ToList() | beam.Map(sum_dicts)   # as WriteStats sums them
        assert_that(summed, equal_to([{
            "exact_duplicates": 5, "mirror_hosts_suspected": 1, "near_duplicates": 3,
            "near_clusters": 2, "near_cluster_largest": 3, "near_cluster_size_2": 1,
            "near_cluster_size_3_9": 1, "near_host_pages:h": 2, "near_host_visited:h": 3,
            "near_host_pages:g": 1, "near_host_visited:g": 1}]), label="Stats")


def test_band_keys_of_a_batch_are_each_page_s_own_across_chunks(monkeypatch):
    """band_keys hashes pages a chunk at a time: every page's keys are those it has alone."""
    monkeypatch.setattr(contentseen_fingerprints, "_KEY_ROWS", 7)
    rng = np.random.default_rng(5)
    sigs = rng.integers(0, 2**32, size=(23, 128), dtype=np.uint32)
    sigs[15] = sigs[3]                               # equal signatures, equal keys
    sigs[16, :8] = sigs[4, :8]                       # an equal first band only
    keys = contentseen_fingerprints.band_keys(sigs, 16, 8)
    alone = np.vstack([contentseen_fingerprints.band_keys(sigs[i:i + 1], 16, 8) for i in range(len(sigs))])
    assert keys.dtype == np.int64 and keys.shape == (23, 16)
    assert np.array_equal(keys, alone)
    assert np.array_equal(keys[15], keys[3])
    assert keys[16, 0] == keys[4, 0] and not np.any(keys[16, 1:] == keys[4, 1:])
    assert contentseen_fingerprints.band_keys(sigs[:0], 16, 8).shape == (0, 16)
