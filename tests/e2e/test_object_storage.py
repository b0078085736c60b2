"""A crawl directory on S3-compatible object storage (issue #49).

moto's S3 server runs on 127.0.0.1 as a process of its own (tests/s3server.py); every
command gets Beam's `--s3_*` flags, as a user gives them. The same crawl on local disk and
on `s3://beamcrawl/...` commits the same state; an S3 crawl leaves no object its manifests
do not list; report, show and the notebooks read it; and an s3:// directory without what it
needs is one line and exit status 2, with nothing written.
"""
import json
import os
import socket

import pytest

from pipelines import inject, report, show, storage
from pipelines import round as round_mod
from pipelines.crawldir import CrawlDir
from pipelines.sweep import unlisted
from tests import s3server
from tests.e2e import crawlstate
from transforms.archive.warc import parse_cdxj

ROUNDS = 3
PREFIX = "same-state"


@pytest.fixture(scope="module")
def local_crawl(simweb_small, tmp_path_factory):
    d = tmp_path_factory.mktemp("local") / "crawl"
    crawlstate.start_crawl(simweb_small, d)
    crawlstate.run_rounds(d, "--rounds", str(ROUNDS))
    return str(d)


@pytest.fixture(scope="module")
def s3_crawl(simweb_small, s3_server):
    d = f"s3://{s3server.BUCKET}/{PREFIX}"
    flags = s3_server.beam_flags()
    crawlstate.start_crawl(simweb_small, d, *flags)
    crawlstate.run_rounds(d, "--rounds", str(ROUNDS), *flags)
    return d


def test_the_same_crawl_on_s3_commits_the_same_state_as_on_local_disk(local_crawl, s3_crawl, s3_server):
    storage.use(s3_server.beam_flags())
    assert CrawlDir(s3_crawl).committed_rounds() == list(range(ROUNDS + 1))
    crawlstate.assert_same_state(crawlstate.state(local_crawl, ROUNDS), crawlstate.state(s3_crawl, ROUNDS))


def test_an_s3_crawl_holds_only_what_its_manifests_list(s3_crawl, s3_server):
    """No spill file, no part listing, no part of a failed bundle: every object of a round's
    table and WARC folders is one its manifest lists (deletes of 'folders' reach S3)."""
    storage.use(s3_server.beam_flags())
    crawl = CrawlDir(s3_crawl)
    stray = []
    for key in s3_server.keys(prefix=f"{PREFIX}/rounds/"):
        n, rel = key.split("/")[2], key.split("/", 3)[3]
        folder, _, name = rel.partition("/")
        m = crawl.manifest(int(n))
        if not name:
            if folder not in ("_COMMITTED", "report.json", "stats.json", "options.json"):
                stray.append(key)
        elif folder == "warc":
            if name not in m["warc"] + ["files.json", "index.cdxj"]:
                stray.append(key)
        elif name not in m["tables"].get(folder, ()):
            stray.append(key)
    assert stray == []
    assert all(unlisted(crawl, n) == [] for n in crawl.committed_rounds())


def test_an_uncommitted_round_on_s3_is_deleted_whole(s3_crawl, s3_server):
    """What a killed run left under its round's prefix goes, however deep (S3 has no
    folders: Beam's delete of a path without a trailing slash deletes nothing)."""
    from apache_beam.io.filesystems import FileSystems
    storage.use(s3_server.beam_flags())
    crawl = CrawlDir(s3_crawl)
    n = ROUNDS + 1
    for rel in ("options.json", "visited/part-x.parquet", "_spill/links/y.spill", "_parts-a.json"):
        with FileSystems.create(f"{crawl.round_dir(n)}/{rel}") as f:
            f.write(b"left by a killed run")
    prefix = f"{PREFIX}/rounds/{n:06d}/"
    assert len(s3_server.keys(prefix=prefix)) == 4
    assert crawl.discard_uncommitted(n)
    assert s3_server.keys(prefix=prefix) == []
    assert not crawl.discard_uncommitted(n)


def test_report_and_show_read_an_s3_crawl(s3_crawl, s3_server, capsysbinary):
    flags = s3_server.beam_flags()
    assert report.main(["--crawl_dir", s3_crawl, *flags]) == 0
    assert b"visited" in capsysbinary.readouterr().out
    assert report.main(["--crawl_dir", s3_crawl, "--round", str(ROUNDS), "--json", *flags]) == 0
    assert json.loads(capsysbinary.readouterr().out)["round"] == ROUNDS
    crawl = CrawlDir(s3_crawl)
    index = show._read_index(crawl.warc_index(ROUNDS))
    _, _, fields = next(e for e in map(parse_cdxj, index) if str(e[2].get("status")) == "200")
    assert show.main(["--crawl_dir", s3_crawl, *flags[:2], fields["url"], *flags[2:]]) == 0
    assert capsysbinary.readouterr().out.startswith(b"HTTP/1.1 200")


def _closed_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def no_aws_environment(monkeypatch, tmp_path):
    """boto3 finds no credentials or endpoint of the machine's, and never asks an instance
    metadata service (an address off this machine)."""
    for name in list(os.environ):
        if name.startswith("AWS_"):
            monkeypatch.delenv(name)
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "no-config"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "no-credentials"))


@pytest.mark.parametrize("case", ["no credentials", "no bucket", "no server"])
def test_an_s3_crawl_dir_without_what_it_needs_is_one_line_and_nothing_is_written(
        case, s3_server, no_aws_environment, capsys):
    flags = s3_server.beam_flags()
    bucket = s3server.BUCKET
    if case == "no credentials":
        flags = flags[:2]   # the endpoint only
        expected = "no S3 credentials"
    elif case == "no bucket":
        bucket = "no-such-bucket"
        expected = "does not exist"
    else:
        flags = ["--s3_endpoint_url", f"http://127.0.0.1:{_closed_port()}"] + flags[2:]
        expected = "cannot reach S3"
    d = f"s3://{bucket}/refused"
    before = s3_server.keys()
    for main, extra in ((inject.main, ["--seed", "http://a.simweb.test/"]), (round_mod.main, []),
                        (report.main, []), (show.main, ["http://a.simweb.test/"])):
        assert main(["--crawl_dir", d, *extra, *flags]) == 2
        err = capsys.readouterr().err
        assert err.startswith("error: --crawl_dir s3://") and expected in err and err.count("\n") == 1, err
    assert s3_server.keys() == before


@pytest.mark.long
def test_the_overview_notebook_reads_an_s3_crawl(s3_crawl, s3_server):
    from tests.e2e.test_notebooks import NOTEBOOKS, execute, kernel_env, outputs
    env = kernel_env(s3_crawl, BEAMCRAWL_STORAGE_FLAGS=" ".join(s3_server.beam_flags()))
    nb = execute(NOTEBOOKS / "crawl_overview.ipynb", env)
    text = "".join(outputs(nb, "text"))
    assert f"{s3_crawl}: rounds 0..{ROUNDS}" in text
    assert len(outputs(nb, "image/png")) >= 6



def test_an_empty_file_is_written_on_s3(s3_server):
    """A round that archives nothing writes an empty index.cdxj; Beam's S3 writer completes a
    multipart upload of no part, which S3 refuses (MalformedXML): pipelines.s3clients PUTs it."""
    from apache_beam.io.filesystems import FileSystems
    storage.use(s3_server.beam_flags())
    path = f"s3://{s3server.BUCKET}/empty-file/index.cdxj"
    FileSystems.create(path).close()
    assert [m.size_in_bytes for m in FileSystems.match([path])[0].metadata_list] == [0]
