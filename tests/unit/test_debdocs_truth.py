"""The ground truth of the Debian-documentation web (benchmarks/realweb/debdocs.py): its own
breadth-first search over a tiny hand-made export, no download, no server."""
from benchmarks.realweb.debdocs import ground_truth, served_file

PORT = 18599
A, B = "a.docs.test", "b.docs.test"


def _page(*body):
    return ("<html><head><title>t</title></head><body>" + "".join(body) + "</body></html>").encode()


def _tree(www):
    files = {
        f"{A}/index.html": _page(
            '<a href="page1.html">1</a><a href="page1.html#top">1 again</a>',
            '<a href="dir/">dir</a><a href="dir">dir, no slash: 404</a>',
            '<a href="missing.html">gone</a><a href="page1.html?q=1">query: 404</a>',
            '<a href="private/x.html">robots</a><a rel="nofollow" href="secret.html">nf</a>',
            '<a href="http://example.org/">out</a><a href="mailto:x@y">mail</a>',
            '<a href="notes.txt">text</a><a href="my page.html">space</a>',
            '<iframe src="frame.html"></iframe><area href="stub.html">',
            f'<a href="http://{B}:{PORT}/">other host</a><a href="http://{B}/">port 80: not exported</a>'),
        f"{A}/page1.html": _page('<a href="../index.html">up</a><a href="deep/base.html">b</a>'),
        f"{A}/dir/index.html": _page('<a href="../nofollow.html">n</a>'),
        f"{A}/nofollow.html": ('<html><head><meta name="robots" content="noindex, NoFollow"></head>'
                               '<body><a href="hidden.html">h</a></body></html>').encode(),
        f"{A}/hidden.html": _page(),
        f"{A}/secret.html": _page(),
        f"{A}/private/x.html": _page(),
        f"{A}/notes.txt": b'<a href="fromtext.html">not parsed</a>',
        f"{A}/fromtext.html": _page(),
        f"{A}/my page.html": _page(),
        f"{A}/frame.html": _page(),
        f"{A}/stub.html": b'<html><head><meta http-equiv="refresh" content="0;URL=\'target.html\'"></head></html>',
        f"{A}/target.html": _page(),
        f"{A}/deep/base.html": _page('<base href="/dir/"><a href="sub.html">relative to base</a>'),
        f"{A}/dir/sub.html": _page(),
        f"{A}/orphan.html": _page(),
        f"{B}/index.html": _page('<a href="/robots.txt">robots</a>'),
        f"{B}/robots.txt": b"User-agent: *\nDisallow:\n",
    }
    for rel, body in files.items():
        (www / rel).parent.mkdir(parents=True, exist_ok=True)
        (www / rel).write_bytes(body)


def test_bfs_finds_exactly_what_nginx_serves_from_the_seeds(tmp_path):
    www = tmp_path / "www"
    _tree(www)
    robots = {A: "User-agent: *\nDisallow: /private/\n", B: ""}
    gt = ground_truth(www, [f"http://{A}:{PORT}/"], robots, PORT)
    u = lambda h, p: f"http://{h}:{PORT}{p}"
    assert set(gt["reachable"]) == {
        u(A, "/"), u(A, "/page1.html"), u(A, "/dir/"), u(A, "/nofollow.html"), u(A, "/notes.txt"),
        u(A, "/my%20page.html"), u(A, "/frame.html"), u(A, "/stub.html"), u(A, "/target.html"),
        u(A, "/deep/base.html"), u(A, "/dir/sub.html"), u(A, "/index.html"), u(B, "/")}
    assert gt["missing"] == {u(A, "/dir"), u(A, "/missing.html"), u(A, "/page1.html?q=1")}
    assert gt["denied"] == {u(A, "/private/x.html")}
    assert gt["reachable"][u(A, "/notes.txt")] == len(b'<a href="fromtext.html">not parsed</a>')
    assert gt["html_pages"] == len(gt["reachable"]) - 1       # notes.txt is not parsed


def test_served_file_follows_nginx_try_files(tmp_path):
    www = tmp_path / "www"
    _tree(www)
    assert served_file(www, f"http://{A}:{PORT}/") == www / A / "index.html"
    assert served_file(www, f"http://{A}:{PORT}/my%20page.html") == www / A / "my page.html"
    assert served_file(www, f"http://{A}:{PORT}/dir") is None
    assert served_file(www, f"http://{A}:{PORT}/index.html?x=1") is None


def test_build_lays_out_an_export_nginx_and_the_analysis_read(tmp_path):
    """build() from an already unpacked cache (no apt-get): hosts, seeds, robots, manifest."""
    import json

    from benchmarks.realweb.analyse import RobotsRules
    from benchmarks.realweb.debdocs import DocSet, build
    from benchmarks.realweb.nginx import build_conf
    cache = tmp_path / "cache"
    sets = (DocSet("one", "one-doc", "usr/share/doc/one/html", "/", None),
            DocSet("two", "two-doc", "usr/share/two", "/start.html", "User-agent: *\nDisallow: /old/\n"))
    for s, files in ((sets[0], {"index.html": _page('<a href="a.html">a</a>'), "a.html": _page(),
                                "robots.txt": b"User-agent: *\nDisallow: /a.html\n"}),
                     (sets[1], {"start.html": _page('<a href="old/x.html">x</a><a href="js.js">j</a>'),
                                "old/x.html": _page(), "js.js": b"x"})):
        (cache / f"{s.package}_1.0_all.deb").parent.mkdir(parents=True, exist_ok=True)
        (cache / f"{s.package}_1.0_all.deb").write_bytes(b"")
        root = cache / "x" / f"{s.package}_1.0_all" / s.root
        for rel, body in files.items():
            (root / rel).parent.mkdir(parents=True, exist_ok=True)
            (root / rel).write_bytes(body)
    (cache / "x" / "one-doc_1.0_all" / "usr/share/doc/one/html/jquery.js").symlink_to("/etc/hostname")
    out = tmp_path / "out"
    st = build(out, PORT, cache, sets=sets)
    m = json.loads((out / "manifest.json").read_text())
    assert (m["domain"], m["n_hosts"], m["n_pages"], m["port"]) == ("docs.test", 2, 4, PORT)
    assert (out / "seeds.txt").read_text().split() == [f"http://one.docs.test:{PORT}/",
                                                       f"http://two.docs.test:{PORT}/start.html"]
    assert (out / "hostmap.txt").read_text().split() == [f"one.docs.test:{PORT}:127.0.0.1",
                                                         f"two.docs.test:{PORT}:127.0.0.1"]
    assert not (out / "www/one.docs.test/jquery.js").exists()          # symlinks left out
    assert (out / "reachable.txt").read_text().split() == [
        f"http://one.docs.test:{PORT}/", f"http://two.docs.test:{PORT}/js.js",
        f"http://two.docs.test:{PORT}/start.html"]
    assert (st["reachable"], st["reachable_html"], st["robots_denied_targets"]) == (3, 2, 2)
    robots = RobotsRules.from_export(out)       # the package's own robots.txt, and ours
    assert not robots.allows("one.docs.test", "/a.html") and not robots.allows("two.docs.test", "/old/x.html")
    assert "default_type application/octet-stream;" in build_conf(out, tmp_path / "ng", PORT)
