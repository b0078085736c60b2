"""What a new user runs, as a user runs it: child processes against a small site served on
127.0.0.1 by this test. Normal commands keep stderr empty (no Beam import noise, the
loopback note said once per command); nothing due commits nothing; the demo's suggested
commands work from a fresh shell; the demo fails in one line without the source checkout."""
import os
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from pipelines import demo

REPO = Path(__file__).resolve().parents[2]
PAGES = {
    "/": b'<html><body><a href="/a.html">a</a> <a href="/flaky.html">flaky</a></body></html>',
    "/a.html": b"<html><body>a page</body></html>",
}


class Site(BaseHTTPRequestHandler):
    def do_GET(self):
        body = PAGES.get(self.path)
        status = 200 if body is not None else 503 if self.path == "/flaky.html" else 404
        body = body or b"no"
        self.send_response(status)
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


@pytest.fixture(scope="module")
def site():
    server = ThreadingHTTPServer(("127.0.0.1", 0), Site)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}/"
    server.shutdown()


def run(*argv, env=None):
    return subprocess.run([sys.executable, "-m", *argv], cwd=REPO, capture_output=True, text=True,
                           timeout=300, check=False, env=env)


def rounds_of(d):
    return sorted(p.name for p in (d / "rounds").iterdir())


@pytest.fixture(scope="module")
def crawled(site, tmp_path_factory):
    """inject + one round + crawl --until_empty, each a child process: (dir, their outputs)."""
    d = tmp_path_factory.mktemp("front") / "crawl"
    procs = [run("pipelines.inject", "--crawl_dir", str(d), "--seed", site, "--allow_loopback",
                 "--delay_per_host", "0", "--sitemaps", "false", "--max_retries", "1",
                 "--retry_backoff", "3600"),
             run("pipelines.round", "--runner=DirectRunner", "--crawl_dir", str(d)),
             run("pipelines.cli", "crawl", "--crawl_dir", str(d), "--until_empty")]
    return d, procs


def test_normal_commands_keep_stderr_clean(crawled):
    _, procs = crawled
    for p in procs:
        assert p.returncode == 0, p.stderr
        assert p.stderr == "", p.stderr    # no 'apitools not found', no repeated warnings
    assert procs[0].stdout.startswith("round 0: injected 1 new seeds")
    assert procs[1].stdout.count("--allow_loopback") == 1


def test_crawl_until_empty_says_nothing_is_due_and_commits_nothing(crawled):
    d, procs = crawled
    out = procs[2].stdout
    # round 2 fetches a.html and flaky.html (503: retried in an hour); round 3 would fetch nothing
    assert rounds_of(d) == ["000000", "000001", "000002"]
    assert out.count("--allow_loopback") == 1
    assert "nothing due: the frontier has 1 URLs, 1 waiting for a retry backoff, none due before" in out
    assert out.rstrip().endswith("1 rounds run")


def test_round_with_nothing_due_says_so_and_writes_nothing(crawled):
    d, _ = crawled
    before = sorted(str(p) for p in d.rglob("*"))
    p = run("pipelines.round", "--crawl_dir", str(d))
    assert (p.returncode, p.stderr) == (0, "")
    assert p.stdout.startswith("nothing due: the frontier has 1 URLs")
    assert sorted(str(p) for p in d.rglob("*")) == before


def test_the_demos_suggested_commands_work_from_a_fresh_shell(crawled):
    d, _ = crawled
    fresh = {"PATH": "/usr/bin:/bin", "HOME": os.environ.get("HOME", "/tmp")}
    for command in demo.next_commands(d):
        p = subprocess.run(command, shell=True, cwd=REPO, env=fresh, capture_output=True, text=True,
                           timeout=120, check=False)
        assert p.returncode == 0, (command, p.stderr)
        assert "ok" in p.stdout


BLOCK_TESTS = (
    "import importlib.abc, sys\n"
    "class Block(importlib.abc.MetaPathFinder):\n"
    "    def find_spec(self, name, path=None, target=None):\n"
    "        if name.split('.')[0] == 'tests':\n"
    "            raise ImportError('not installed')\n"
    "sys.meta_path.insert(0, Block())\n")


def test_the_demo_without_a_source_checkout_fails_in_one_line(tmp_path):
    code = BLOCK_TESTS + (f"from pipelines import demo\nassert 'tests' not in sys.modules\n"
                          f"sys.exit(demo.main(['--crawl_dir', {str(tmp_path / 'demo')!r}]))\n")
    p = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True,
                       timeout=120, check=False)
    assert p.returncode == 2, p.stderr
    assert p.stderr.count("\n") == 1 and p.stderr.startswith("error: the demo needs a source checkout")
    assert not (tmp_path / "demo").exists()
