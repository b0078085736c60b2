"""Content-seen's old side in two phases (transforms.contentseen.step.OldHits): a narrow probe of
every visited row group (fp, round, content_fp, lsh_keys), then wide reads of the row groups
with hits only. The round's results must be those of giving ContentSeen / NearDuplicates
the whole visited view, as before.
"""
import apache_beam as beam
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from apache_beam.metrics.metric import MetricsFilter
from apache_beam.runners.portability.fn_api_runner import FnApiRunner
from apache_beam.testing.util import assert_that, equal_to

from schemas import tables
from tests.unit.pipeline_graph import applied_transforms
from transforms.contentseen import step as contentseen_step
from transforms.contentseen import oldside as contentseen_oldside
from transforms.contentseen import fingerprints as contentseen_fingerprints
from transforms.contentseen import duplicates as contentseen_duplicates
from transforms.contentseen import clusters as contentseen_clusters
from transforms.page import visited as process
from transforms.tableio import files as readparquet
from transforms.tableio.step import ReadTables, SpillToFiles

ROUND = 4
ROW_GROUP = 400
BANDS, ROWS = contentseen_fingerprints.LSH_PARAMS


def _near_copy(rng, sig, changed):
    s = sig.copy()
    pos = rng.choice(contentseen_fingerprints.NUM_PERM, changed, replace=False)
    s[pos] = rng.integers(0, 2**32, changed, dtype=np.uint32)
    return s


def _visited(fp, rnd, cfp, sigs, has, dup_of, with_keys=True):
    n = len(fp)
    hosts = [f"h{int(f) % 7}.example" for f in fp]
    t = {"fp": pa.array(fp, pa.int64()), "url": [f"http://{h}/p/{int(f)}" for h, f in zip(hosts, fp)],
         "host": hosts, "round": pa.array(rnd, pa.int32()), "outcome": ["ok"] * n,
         "content_fp": pa.array(cfp, pa.int64()), "duplicate_of": pa.array(dup_of, pa.string()),
         "minhash": contentseen_fingerprints.signature_column(sigs, has)}
    if with_keys:   # as the round writes them: none for pages without minhash or duplicates
        t["lsh_keys"] = contentseen_fingerprints.lsh_key_column(sigs, has & np.array([d is None for d in dup_of]))
    return tables.conform(pa.table(t), tables.VISITED)


@pytest.fixture(scope="module")
def crawl(tmp_path_factory):
    """Three committed rounds of 3 000 pages (row groups of 400) and a round-4 batch with
    exact copies (one content shared by 200 old pages), near copies (one template with 300
    old near copies) and refetches."""
    rng = np.random.default_rng(7)
    n_old = 9000
    fp = rng.choice(2**62, n_old, replace=False).astype(np.int64) - 2**61
    rnd = np.repeat([1, 2, 3], n_old // 3).astype(np.int32)
    cfp = rng.integers(1, 2**62, n_old).astype(np.int64)
    sigs = rng.integers(0, 2**32, (n_old, contentseen_fingerprints.NUM_PERM), dtype=np.uint32)
    has = rng.random(n_old) < 0.7
    soft404 = rng.choice(n_old, 200, replace=False)
    cfp[soft404] = 404
    template = sigs[0].copy()
    boiler = rng.choice(np.arange(1, n_old), 300, replace=False)
    for i in boiler:
        sigs[i], has[i] = _near_copy(rng, template, int(rng.integers(2, 8))), True
    near_old = rng.choice(np.flatnonzero(has), 40, replace=False)
    for k, i in enumerate(rng.choice(n_old, 40, replace=False)):
        sigs[i], has[i] = _near_copy(rng, sigs[near_old[k]], int(rng.integers(1, 10))), True
    # duplicate_of: a later page (round, fp) with content seen before
    order = np.lexsort((fp, rnd))
    first, dup_of = {}, [None] * n_old
    for i in order:
        if cfp[i] in first:
            dup_of[i] = f"first-of-{cfp[i]}"
        else:
            first[int(cfp[i])] = i
    old = _visited(fp, rnd, cfp, sigs, has, dup_of)
    d = tmp_path_factory.mktemp("visited")
    files, legacy = [], []
    for r in (1, 2, 3):
        part = old.filter(pa.array(rnd == r))
        files.append(str(d / f"r{r}.parquet"))
        pq.write_table(part, files[-1], row_group_size=ROW_GROUP)
        legacy.append(str(d / f"legacy-r{r}.parquet"))
        pq.write_table(part.drop_columns(["lsh_keys"]), legacy[-1], row_group_size=ROW_GROUP)

    # round 4
    m = 600
    nfp = rng.choice(2**62, m, replace=False).astype(np.int64) + 2**61 // 3
    ncfp = rng.integers(1, 2**62, m).astype(np.int64)
    nsig = rng.integers(0, 2**32, (m, contentseen_fingerprints.NUM_PERM), dtype=np.uint32)
    nhas = rng.random(m) < 0.8
    src = rng.choice(n_old, 60, replace=False)
    ncfp[:60], nsig[:60], nhas[:60] = cfp[src], sigs[src], has[src]               # exact copies
    ncfp[60:80] = 404                                                             # soft 404s
    src = rng.choice(np.flatnonzero(has), 100, replace=False)
    for k, i in enumerate(src):                                                   # near copies
        nsig[80 + k], nhas[80 + k] = _near_copy(rng, sigs[i], int(rng.integers(1, 12))), True
    for k in range(180, 230):                                                     # template
        nsig[k], nhas[k] = _near_copy(rng, template, int(rng.integers(1, 6))), True
    ncfp[230:240] = ncfp[240:250]                                                 # within the round
    refetch = np.array([i for i in np.flatnonzero(dup_of_none(dup_of)) if cfp[i] != 404][:3])
    nfp[250:253], ncfp[250:253] = fp[refetch], cfp[refetch]                       # refetch of a first
    new = _visited(nfp, np.full(m, ROUND, np.int32), ncfp, nsig, nhas, [None] * m)
    return {"files": files, "legacy": legacy, "old": old, "new": new}


def dup_of_none(dup_of):
    return np.array([d is None for d in dup_of])


def expected(old, new, max_group=contentseen_clusters.NEAR_CAP, mark=True):
    """What ContentSeen and NearClusters give with the whole visited view (pure functions)."""
    dups = contentseen_duplicates.exact_duplicates(new, old, ROUND)
    marked = contentseen_oldside.mark_duplicates(new, dict(zip(dups.column("fp").to_pylist(),
                                              dups.column("duplicate_of").to_pylist()))
                                if mark else {})
    nb, keys = contentseen_duplicates._band_rows(contentseen_oldside.not_duplicate(marked), BANDS, ROWS, contentseen_fingerprints.NUM_PERM, True)
    ob, _ = contentseen_duplicates._band_rows(contentseen_oldside.not_duplicate(old), BANDS, ROWS, contentseen_fingerprints.NUM_PERM, False,
                          keep_keys=np.unique(keys))
    edges, _ = contentseen_clusters.candidate_edges([nb, ob], BANDS, ROWS, contentseen_fingerprints.NUM_PERM,
                                                   0.9, max_group)
    near = _near_tuples(contentseen_clusters.resolve_clusters(edges))
    return sorted(zip(dups.column("fp").to_pylist(), dups.column("duplicate_of").to_pylist())), sorted(near)


def _near_tuples(t):
    """(fp, cluster_fp, cluster_round, of_fp, of_round, jaccard) of NEAR_DUPLICATES/ASSIGNMENTS rows."""
    return [(r["fp"], r["cluster_fp"], r["cluster_round"], r["of_fp"], r["of_round"], round(r["jaccard"], 9))
            for r in t.to_pylist()]


def run_round(files, new, max_group=None, spill_dir=None):
    """The round's content-seen over `files` as the visited view; (dups, near, metrics). With
    `spill_dir`, as the round runs it: VISITED tables and near pages through spill files."""
    p = beam.Pipeline(runner=FnApiRunner())
    old = p | "ReadVisited" >> ReadTables(files, tables.VISITED, contentseen_oldside.OLD_COLUMNS, with_positions=True)
    visited = p | "New" >> beam.Create([new.slice(0, 250), new.slice(250)], reshuffle=False)
    if max_group is None:
        empty = lambda label: p | label >> beam.Create([], reshuffle=False)
        inputs = {"visited": visited, "links": empty("Links"), "pages": empty("Pages"), "old": old}
        to_files = None if spill_dir is None else (lambda name: SpillToFiles(f"{spill_dir}/{name}", 64 * 1024))
        if to_files is not None:
            inputs["visited_files"] = visited | "VisitedToFiles" >> to_files("visited_tables")
        out = inputs | "ContentSeen" >> contentseen_step.ApplyContentSeen(ROUND, False, 0.9, to_files)
        dups = out["visited"] | beam.FlatMap(lambda t: [
            (r["fp"], r["duplicate_of"]) for r in t.select(["fp", "duplicate_of"]).to_pylist()
            if r["duplicate_of"] is not None])
        near = out["near"] | beam.FlatMap(_near_tuples)
    else:
        hits = {"new": visited, "old": old} | contentseen_step.OldHits(ROUND, True, max_group)
        dups = None
        near = ({"new": visited | beam.Map(contentseen_oldside.not_duplicate), "old": hits["near"]}
                | contentseen_step.NearClusters(cap=max_group)
                | beam.FlatMap(_near_tuples))
    return p, dups, near


def counters(result):
    return {c.key.metric.name: c.committed
            for c in result.metrics().query(MetricsFilter().with_namespace("contentseen"))["counters"]}


def _check(files, new, want_dups, want_near, max_group=None, spill_dir=None):
    p, dups, near = run_round(files, new, max_group, spill_dir)
    if dups is not None:
        assert_that(dups, equal_to(want_dups), label="Dups")
    assert_that(near, equal_to(want_near), label="Near")
    result = p.run()
    result.wait_until_finish()
    return counters(result)


def test_two_phases_give_the_one_phase_duplicates_and_near_pairs(crawl):
    want_dups, want_near = expected(crawl["old"], crawl["new"])
    assert len(want_dups) > 60 and len(want_near) > 100
    assert any(of.startswith("http") and fp != of for fp, of in want_dups)
    c = _check(crawl["files"], crawl["new"], want_dups, want_near)
    n_groups = sum(pq.ParquetFile(f).num_row_groups for f in crawl["files"])
    assert c["old_row_groups"] == n_groups and c["old_rows"] == 9000
    assert c.get("old_compat_row_groups", 0) == 0
    # 200 old pages share the soft-404 content: only its first is read wide
    assert c["old_exact_hits"] < 200 + 60 + 3


def test_through_spill_files_the_marks_are_made_from_the_files_with_the_same_results(crawl, tmp_path):
    """As the round runs it (`visited_files`, `to_files`): the same duplicates and pairs; both
    marking steps read the spill files' paths, not VISITED tables kept in the runner's memory,
    and only the near pages' spill files are gathered."""
    want_dups, want_near = expected(crawl["old"], crawl["new"])
    p, dups, near = run_round(crawl["files"], crawl["new"], spill_dir=str(tmp_path))
    assert_that(dups, equal_to(want_dups), label="Dups")
    assert_that(near, equal_to(want_near), label="Near")
    steps = {t.full_label: t for t in applied_transforms(p)}
    paths = steps["VisitedToFiles/ToFiles"].outputs[None]
    for mark in ("MarkDuplicatesAndNear", "NearSource"):
        assert list(steps[f"ContentSeen/{mark}"].main_inputs.values()) == [paths], mark
    p.run().wait_until_finish()
    assert list((tmp_path / "near_pages").glob("*.spill")), "near pages not spilled"


def test_a_visited_file_without_lsh_keys_gives_the_same_near_pairs(crawl):
    """Files written before the column: keys come from minhash, results do not change."""
    assert "lsh_keys" not in pq.ParquetFile(crawl["legacy"][0]).schema_arrow.names
    want_dups, want_near = expected(crawl["old"], crawl["new"])
    c = _check(crawl["legacy"], crawl["new"], want_dups, want_near)
    assert c["old_compat_row_groups"] == c["old_row_groups"]
    mixed = crawl["legacy"][:1] + crawl["files"][1:]
    c = _check(mixed, crawl["new"], want_dups, want_near)
    assert 0 < c["old_compat_row_groups"] < c["old_row_groups"]


def test_only_the_earliest_max_group_old_pages_per_band_key_are_read(crawl):
    """The template has 300 old near copies; with max_group 5 each band key brings the five
    earliest of them, and the pairs are those of the whole view with max_group 5."""
    _, want_near = expected(crawl["old"], crawl["new"], max_group=5, mark=False)
    c = _check(crawl["files"], crawl["new"], None, want_near, max_group=5)
    _, all_near = expected(crawl["old"], crawl["new"], max_group=0, mark=False)
    assert len(want_near) <= len(all_near) and want_near != all_near
    assert c["wide_near_hit_rows"] < c["old_near_hits"]


def test_row_groups_without_hits_are_never_read_wide(crawl, tmp_path):
    """A file whose wide columns cannot be read at all (url, host, minhash of the wrong
    type) takes part in the probe; it has no hits, so the round never reads it wide."""
    n = 2000
    rng = np.random.default_rng(3)
    poison = pa.table({
        "fp": pa.array(rng.integers(-2**62, 2**62, n), pa.int64()),
        "url": pa.array([[1]] * n, pa.list_(pa.int64())), "host": pa.array([[2]] * n, pa.list_(pa.int64())),
        "round": pa.array(np.ones(n, np.int32)), "content_fp": pa.array(rng.integers(1, 2**62, n), pa.int64()),
        "minhash": pa.array(["x"] * n), "duplicate_of": pa.array([[3]] * n, pa.list_(pa.int64())),
        "lsh_keys": contentseen_fingerprints.lsh_key_column(rng.integers(0, 2**32, (n, contentseen_fingerprints.NUM_PERM), dtype=np.uint32))})
    f = str(tmp_path / "poison.parquet")
    pq.write_table(poison, f, row_group_size=ROW_GROUP)
    with pytest.raises(ValueError):
        readparquet.read_row_group(f, 0, tables.VISITED, contentseen_oldside.EXACT_COLUMNS)
    want_dups, want_near = expected(crawl["old"], crawl["new"])
    c = _check(crawl["files"] + [f], crawl["new"], want_dups, want_near)
    groups = sum(pq.ParquetFile(x).num_row_groups for x in crawl["files"])
    assert c["old_row_groups"] == groups + 5
    assert 0 < c["wide_exact_row_groups"] <= groups and 0 < c["wide_near_row_groups"] <= groups


def test_visited_table_stores_the_band_keys_of_its_minhash():
    text = " ".join(f"w{i}" for i in range(40))
    rows = [dict(fp=1, url="http://a.example/", outcome="ok", **{process.TEXT_FOR_MINHASH: text}),
            dict(fp=2, url="http://a.example/r", outcome="redirect"),
            dict(fp=3, url="http://a.example/s", outcome="ok", **{process.TEXT_FOR_MINHASH: "too short"})]
    t = process.visited_table(rows)
    sigs, valid = contentseen_fingerprints.signatures_of(t.column("minhash"))
    assert valid.tolist() == [True, False, False]
    keys = t.column("lsh_keys").to_pylist()
    assert keys[0] == contentseen_fingerprints.band_keys(sigs[:1], BANDS, ROWS)[0].tolist() and keys[1:] == [[], []]


def test_an_exact_duplicate_keeps_no_band_keys():
    t = _visited(np.array([1, 2]), np.array([4, 4]), np.array([5, 6]),
                 np.zeros((2, contentseen_fingerprints.NUM_PERM), np.uint32), np.array([True, True]), [None, None])
    marked = contentseen_oldside.mark_duplicates(t, {2: "http://first/"})
    assert [len(k) for k in marked.column("lsh_keys").to_pylist()] == [BANDS, 0]
    assert marked.column("outcome").to_pylist() == ["ok", tables.DUPLICATE]


def test_a_hit_row_group_rewritten_between_the_two_phases_is_named_not_misread():
    """Phase 2 finds a hit by its row; if the row group no longer has that page there (the
    file was rewritten while the round ran) the read fails naming the file, rather than
    handing another page's row to content-seen."""
    def reader(fps):   # as tableio.files.read_rows: a row past the end gives no row
        def read(path, index, rows, schema, columns):
            got = [fps[r] for r in rows if r < len(fps)]
            return pa.table({"fp": pa.array(got, pa.int64()), "url": ["u"] * len(got), "host": ["h"] * len(got),
                             "round": pa.array([0] * len(got), pa.int32()),
                             "content_fp": pa.array([1] * len(got), pa.int64())}), len(fps)
        return read
    hits = [(1, 11), (3, 13)]
    part, _ = contentseen_oldside.read_hits("v.parquet", 0, contentseen_oldside.EXACT, hits, reader([10, 11, 12, 13]))
    assert part.column("fp").to_pylist() == [11, 13]
    with pytest.raises(tables.ParquetReadError, match="v.parquet: row group 0 changed"):
        contentseen_oldside.read_hits("v.parquet", 0, contentseen_oldside.EXACT, hits, reader([10, 11, 12, 99]))
    with pytest.raises(tables.ParquetReadError, match="changed"):   # the row is gone
        contentseen_oldside.read_hits("v.parquet", 0, contentseen_oldside.EXACT, hits, reader([10, 11, 12]))
