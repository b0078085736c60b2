"""End-to-end: the WARC archive of a crawl of the small simulated web (#14).

One crawl of three rounds with `--store both` and a small `--warc_max_bytes` (so files
rotate), read back with warcio, checked against the web's own rendering of each page, by
two independent readers (warcio check/index and cdxj-indexer), and through `beamcrawl show`.
"""
import collections
import gzip
import json
import signal
import subprocess
import sys
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from warcio.archiveiterator import ArchiveIterator
from warcio.timeutils import iso_date_to_timestamp

from pipelines import show
from pipelines.crawldir import CrawlDir
from tests.e2e import crawlstate
from transforms.archive.warc import parse_cdxj, surt

MAX_BYTES = 8_000
REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def archive(simweb_small, tmp_path_factory):
    d = tmp_path_factory.mktemp("warc_crawl") / "crawl"
    crawlstate.start_crawl(simweb_small, d, "--store", "both", "--warc_max_bytes", str(MAX_BYTES))
    crawlstate.run_rounds(d, "--rounds", "3")
    c = CrawlDir(str(d))
    rounds = [n for n in c.committed_rounds() if c.manifest(n)["warc"]]
    assert rounds == [1, 2, 3], "every fetch round kept WARC files"
    files = {n: [Path(c.warc_dir(n)) / name for name in c.manifest(n)["warc"]] for n in rounds}
    records = {path: _records(path) for paths in files.values() for path in paths}
    return c, rounds, files, records


def _records(path):
    """[(offset, length, record type, WARC headers, HTTP headers, raw payload, decoded payload)]"""
    out = []
    with open(path, "rb") as f:
        it = ArchiveIterator(f)
        for rec in it:
            raw = rec.raw_stream.read()
            http = rec.http_headers if rec.rec_type in ("request", "response") else None
            decoded = None
            if rec.rec_type == "response":
                gz = http.get_header("Content-Encoding") == "gzip" and "WARC-Truncated" not in rec.rec_headers
                decoded = gzip.decompress(raw) if gz else raw
            it.read_to_end(rec)
            out.append((it.get_record_offset(), it.get_record_length(), rec.rec_type,
                        dict(rec.rec_headers.headers), http, raw, decoded))
    return out


def _index(c, n):
    return [parse_cdxj(line) for line in Path(c.warc_index(n)).read_text().splitlines()]


def test_every_record_reads_back_and_each_fetch_has_request_response_metadata(archive):
    c, rounds, files, records = archive
    visited = c.read_table("visited", rounds[-1]).to_pylist()
    requested = {v["url"] for v in visited if v["http_status"] is not None}
    responses = {}
    for path, recs in records.items():
        assert recs[0][2] == "warcinfo", path
        assert all(r[3]["WARC-Type"] == r[2] for r in recs)
        by_id = {r[3]["WARC-Record-ID"]: r for r in recs}
        for r in recs:
            if r[2] == "response":
                responses[r[3]["WARC-Target-URI"]] = r
                assert r[3]["WARC-IP-Address"].startswith("127.")
            elif r[2] in ("request", "metadata"):
                assert by_id[r[3]["WARC-Concurrent-To"]][2] == "response"
                assert by_id[r[3]["WARC-Concurrent-To"]][3]["WARC-Target-URI"] == r[3]["WARC-Target-URI"]
        kinds = collections.Counter(r[2] for r in recs)
        assert kinds["request"] == kinds["response"] == kinds["metadata"] > 0
    assert set(responses) == requested, "a fetch with an HTTP response is missing from the WARC"
    meta = [r for recs in records.values() for r in recs if r[2] == "metadata"]
    outlinks = [line for r in meta for line in r[5].decode().splitlines() if line.startswith("outlink: ")]
    assert outlinks and all(line.split()[-1] in "LRSX" for line in outlinks)


def test_files_rotate_by_size_and_are_named_by_round_and_bundle(archive):
    c, rounds, files, records = archive
    assert max(len(paths) for paths in files.values()) > 1, "small --warc_max_bytes must rotate"
    for n, paths in files.items():
        assert sorted(p.name for p in Path(c.warc_dir(n)).glob("*.warc.gz")) == sorted(p.name for p in paths)
        for p in paths:
            assert p.name.startswith(f"beamcrawl-{n:06d}-") and p.name.endswith(".warc.gz")
        by_bundle = collections.defaultdict(list)
        for p in sorted(paths):
            by_bundle[p.name.rsplit("-", 1)[0]].append(p)
        for group in by_bundle.values():
            for p in group[:-1]:   # a file is closed at the first capture past the size
                last = max(r[0] + r[1] for r in records[p])
                assert p.stat().st_size == last >= MAX_BYTES
                assert p.stat().st_size - max(r[0] for r in records[p] if r[2] == "request") < MAX_BYTES
    names = [p.name for paths in files.values() for p in paths]
    assert len(names) == len(set(names))


def test_each_record_is_its_own_gzip_member(archive):
    _, _, _, records = archive
    for path, recs in records.items():
        data = path.read_bytes()
        for offset, length, kind, *_ in recs:
            member = gzip.decompress(data[offset:offset + length])
            assert member.startswith(b"WARC/1.1\r\n"), (path, offset)


def test_response_payloads_are_byte_identical_to_what_the_web_served(archive, simweb_small):
    _, _, _, records = archive
    requests_by_uri = {r[3]["WARC-Target-URI"]: r for recs in records.values() for r in recs if r[2] == "request"}
    compared = gzipped = 0
    for recs in records.values():
        for _, _, kind, warc, http, raw, _ in recs:
            if kind != "response":
                continue
            url = warc["WARC-Target-URI"]
            sent = {k.lower(): v for k, v in requests_by_uri[url][4].headers}
            parts = urlsplit(url)
            target = parts.path + (f"?{parts.query}" if parts.query else "")
            # at the web's own time (simweb_small's clock is frozen), not the WARC-Date: the
            # server answered at its clock, whatever the wall clock said
            served = simweb_small.web.respond(parts.hostname, target, sent, now=simweb_small.web.clock())
            assert int(http.get_statuscode()) == served.status, url
            if "WARC-Truncated" not in warc:
                assert raw == served.body, url
            assert http.get_header("Content-Type") == dict(served.headers).get("Content-Type"), url
            gzipped += http.get_header("Content-Encoding") == "gzip"
            compared += 1
    assert compared > 40 and gzipped > 0, (compared, gzipped)


def test_decoded_payloads_equal_the_pages_table(archive):
    c, rounds, _, records = archive
    pages = {p["url"]: p["body"] for p in c.read_table("pages", rounds[-1]).to_pylist()}
    assert len(pages) > 30
    decoded = {r[3]["WARC-Target-URI"]: r[6] for recs in records.values() for r in recs
               if r[2] == "response" and r[4].get_statuscode() == "200"}
    for url, body in pages.items():
        assert decoded[url] == body, url


def test_a_direct_get_serves_the_archived_bytes(archive, simweb_small):
    import requests
    _, _, _, records = archive
    picked = [r for recs in records.values() for r in recs if r[2] == "response"
              and r[4].get_statuscode() == "200" and "WARC-Truncated" not in r[3]][:5]
    hostmap = {line.split(":")[0]: line.split(":")[2] for line in simweb_small.hostmap_lines}
    for r in picked:
        url = r[3]["WARC-Target-URI"]
        parts = urlsplit(url)
        direct = f"http://{hostmap[parts.hostname]}:{parts.port}{parts.path}" + (f"?{parts.query}" if parts.query else "")
        got = requests.get(direct, headers={"Host": parts.netloc, "Accept-Encoding": "identity"}, timeout=10)
        assert got.status_code == 200
        assert r[6] == got.content, url


def test_the_cdxj_index_points_at_every_response_and_agrees_with_cdxj_indexer(archive, tmp_path):
    import cdxj_indexer  # noqa: F401 - requirements-dev.txt
    c, rounds, files, records = archive
    for n in rounds:
        ours = _index(c, n)
        assert [(k, t) for k, t, _ in ours] == sorted((k, t) for k, t, _ in ours)
        ours_set = {(k, t, f["filename"], int(f["offset"]), int(f["length"]), f["url"]) for k, t, f in ours}
        expected = set()
        for p in files[n]:
            for offset, length, kind, warc, *_ in records[p]:
                if kind == "response":
                    url = warc["WARC-Target-URI"]
                    stamp = iso_date_to_timestamp(warc["WARC-Date"])[:14]
                    expected.add((surt(url), stamp, p.name, offset, length, url))
        assert ours_set == expected
        out = tmp_path / f"theirs-{n}.cdxj"
        subprocess.run([sys.executable, "-m", "cdxj_indexer.main", "-o", str(out), *map(str, files[n])],
                       check=True, capture_output=True, cwd=files[n][0].parent)
        theirs = set()
        for line in out.read_text().splitlines():
            k, t, f = parse_cdxj(line)
            if f.get("mime") != "warc/request" and "method" not in f:
                theirs.add((k, t[:14], Path(f["filename"]).name, int(f["offset"]), int(f["length"]), f["url"]))
        assert theirs == ours_set, "cdxj-indexer (keys, times, offsets, lengths) disagrees"


def test_warcio_check_and_index_accept_every_file(archive):
    _, _, files, records = archive
    paths = [str(p) for ps in files.values() for p in ps]
    check = subprocess.run([sys.executable, "-m", "warcio.cli", "check", "-v", *paths],
                           capture_output=True, text=True)
    assert check.returncode == 0, check.stdout[-2000:] + check.stderr[-2000:]
    assert "digest pass" in check.stdout and "digest failed" not in check.stdout
    index = subprocess.run([sys.executable, "-m", "warcio.cli", "index", "-f", "warc-type,offset,length",
                            paths[0]], capture_output=True, text=True, check=True)
    got = [(d["warc-type"], int(d["offset"]), int(d["length"])) for d in map(json.loads, index.stdout.splitlines())]
    assert got == [(r[2], r[0], r[1]) for r in records[Path(paths[0])]]


def test_show_prints_the_latest_capture(archive, capsysbinary):
    c, rounds, _, records = archive
    k, t, f = _index(c, rounds[-1])[0]
    assert show.main(["--crawl_dir", c.path, f["url"]]) == 0
    out = capsysbinary.readouterr().out
    head, _, body = out.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 " + f["status"].encode())
    target = [r for r in records[Path(c.warc_dir(rounds[-1])) / f["filename"]] if r[0] == int(f["offset"])][0]
    assert body == target[6]
    assert show.main(["--crawl_dir", c.path, "--headers_only", f["url"]]) == 0
    assert capsysbinary.readouterr().out == head + b"\r\n\r\n"


def test_show_refuses_a_url_never_captured_with_one_line(archive, capsysbinary):
    c, *_ = archive
    assert show.main(["--crawl_dir", c.path, "http://never.simweb.test/x"]) == 2
    err = capsysbinary.readouterr().err.decode()
    assert err.startswith("error: ") and "never captured" in err and err.count("\n") == 1


def test_beamcrawl_show_is_a_command(archive):
    c, rounds, _, _ = archive
    k, t, f = _index(c, rounds[0])[0]
    proc = subprocess.run([sys.executable, "-m", "pipelines.cli", "show", "--crawl_dir", c.path,
                           "--headers_only", f["url"]], capture_output=True, cwd=REPO, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith(b"HTTP/1.1 ")


def test_a_round_killed_before_its_commit_leaves_no_listed_warc_and_its_rerun_lists_only_its_own(
        simweb_small, tmp_path):
    d = tmp_path / "crash"
    crawlstate.start_crawl(simweb_small, d)   # --store at its default: warc
    proc = crawlstate.run_round_subprocess(d, env={"BEAMCRAWL_CRASH_AT": "before_commit"})
    proc.wait(timeout=300)
    assert proc.returncode == -signal.SIGKILL, proc.stderr.read()[-3000:]
    c = CrawlDir(str(d))
    killed = {p.name for p in Path(c.warc_dir(1)).glob("*.warc.gz")}
    assert killed and c.last_committed() == 0, "the killed run wrote WARC files but committed nothing"
    crawlstate.run_rounds(d, "--rounds", "1")
    listed = c.manifest(1)["warc"]
    on_disk = {p.name for p in Path(c.warc_dir(1)).glob("*.warc.gz")}
    assert listed and set(listed) == on_disk and not (on_disk & killed)
    assert {f["filename"] for _, _, f in _index(c, 1)} <= set(listed)
    assert c.read_table("pages", 1).num_rows == 0, "--store warc keeps no pages table"
