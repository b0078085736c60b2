"""End-to-end: a URL refused by a setting (the address guard, the scope) is not counted as
downloaded, the summary names the setting and how to change it, and the URL is tried again
once that setting changes (by a later round's flags or by re-injecting it)."""
from pipelines import inject
from pipelines import report as report_mod
from pipelines import round as round_mod
from pipelines.crawldir import CrawlDir
from schemas import tables
from tests.e2e import crawlstate


def args_with(web, d, **flags):
    """crawlstate.crawl_args with some flags' values replaced."""
    args = crawlstate.crawl_args(web, d)
    for flag, value in flags.items():
        i = args.index(f"--{flag}")
        args[i + 1] = value
    return args


def fetched(row):
    """The URL was requested and answered (its content may duplicate a page fetched before:
    the small web has mirrors, and which copy comes first depends on the run's ports)."""
    return row["http_status"] == 200 and row["outcome"] in (tables.OK, tables.DUPLICATE)


def seeds(urls):
    return [a for u in urls for a in ("--seed", u)]


def latest(crawl_dir):
    """{url: its latest visited row}."""
    c = CrawlDir(str(crawl_dir))
    rows = sorted(c.read_table("visited", c.last_committed()).to_pylist(), key=lambda r: r["round"])
    return {r["url"]: r for r in rows}


def refuse_loopback_seeds(web, d, capsys):
    """Inject the small web's seeds without --allow_loopback and run one round."""
    assert inject.main(args_with(web, d, allow_loopback="false") + seeds(web.seeds)) == 0
    capsys.readouterr()
    assert round_mod.main(["--crawl_dir", str(d)]) == 0
    return capsys.readouterr().out


def test_a_loopback_seed_refused_is_not_downloaded_and_the_summary_names_the_flag(
        simweb_small, tmp_path, capsys):
    d = tmp_path / "crawl"
    started = simweb_small.requests()
    out = refuse_loopback_seeds(simweb_small, d, capsys)
    n = len(simweb_small.seeds)
    assert (f"refused by the address guard (loopback): {n} URLs; add --allow_loopback true "
            "to allow it") in out, out
    report = CrawlDir(str(d)).read_report(1)
    assert report["page_sets"]["downloaded"] == 0
    assert report["refused_by_guard"] == {"loopback": n}
    rows = latest(d)
    assert {rows[u]["outcome"] for u in simweb_small.seeds} == {tables.FORBIDDEN_ADDRESS}
    assert all(rows[u]["refused_by"] for u in simweb_small.seeds)
    assert len(simweb_small.requests()) == len(started), "the guard let a request through"


def test_a_seed_refused_by_deny_addresses_is_fetched_once_a_round_drops_the_range(
        simweb_small, tmp_path):
    d = tmp_path / "crawl"
    seed0, seed1 = simweb_small.seeds[:2]
    host1 = seed1.split("//")[1].split(":")[0]
    addr1 = next(line.rsplit(":", 1)[1] for line in simweb_small.hostmap_lines
                 if line.startswith(host1 + ":"))
    args = crawlstate.crawl_args(simweb_small, d, "--deny_addresses", f"{addr1}/32",
                                 "--max_pages", "3")
    assert inject.main(args + seeds([seed0, seed1])) == 0
    first = crawlstate.run_rounds(d, "--rounds", "1")
    assert latest(d)[seed1]["reason"] == "denied_by_flag"
    assert first[0]["page_sets"]["downloaded"] == first[0]["visited"] - 1
    assert "remove its range from --deny_addresses" in report_mod.summary(first[0])
    reports = crawlstate.run_rounds(d, "--rounds", "2", "--deny_addresses", "")
    assert reports[0]["refusals_reread"] == 1
    assert fetched(latest(d)[seed1])
    # a round with the same settings re-reads nothing
    again = crawlstate.run_rounds(d, "--rounds", "1", "--deny_addresses", "")
    assert again[0]["refusals_reread"] == 0


def test_a_refused_seed_is_retried_when_re_injected(simweb_small, tmp_path, capsys):
    d = tmp_path / "crawl"
    refuse_loopback_seeds(simweb_small, d, capsys)
    assert inject.main(args_with(simweb_small, d, allow_loopback="true")
                       + seeds(simweb_small.seeds[:1])) == 0
    c = CrawlDir(str(d))
    frontier = set(c.read_table("frontier", c.last_committed()).column("url").to_pylist())
    assert simweb_small.seeds[0] in frontier
    crawlstate.run_rounds(d, "--rounds", "1", "--allow_loopback", "true")
    assert fetched(latest(d)[simweb_small.seeds[0]])


def test_b_urls_filtered_by_scope_are_fetched_once_the_scope_is_widened(simweb_small, tmp_path):
    d = tmp_path / "crawl"
    site0 = simweb_small.seeds[0].split("//")[1].split(":")[0]
    args = args_with(simweb_small, d, allow_domains="") + ["--allow_hosts", site0]
    assert inject.main(args + seeds(simweb_small.seeds[:1])) == 0
    first = crawlstate.run_rounds(d, "--rounds", "1")
    assert "refused by the scope (host_not_allowed)" in report_mod.summary(first[0])
    c = CrawlDir(str(d))
    refused = {r["url"] for r in c.read_table("filtered", 1).to_pylist()
               if r["reason"] == "host_not_allowed"}
    assert refused and all(r["refused_by"] for r in c.read_table("filtered", 1).to_pylist())
    reports = crawlstate.run_rounds(d, "--rounds", "2", "--allow_hosts", "")
    assert reports[0]["refusals_reread"] >= len(refused)
    rows = latest(d)
    fetched = {u for u in refused if u in rows and rows[u]["outcome"] != tables.FORBIDDEN_ADDRESS}
    assert fetched == refused


def test_b_urls_filtered_for_depth_come_back_when_max_depth_is_raised(simweb_small, tmp_path):
    d = tmp_path / "crawl"
    args = crawlstate.crawl_args(simweb_small, d, "--max_depth", "1", "--max_pages", "6")
    assert inject.main(args + seeds(simweb_small.seeds[:1])) == 0
    crawlstate.run_rounds(d, "--rounds", "2")
    c = CrawlDir(str(d))
    too_deep = {r["url"] for r in c.read_table("filtered", c.last_committed()).to_pylist()
                if r["reason"] == "depth"}
    assert too_deep
    changed = crawlstate.run_rounds(d, "--rounds", "1", "--max_depth", "2")
    assert changed[0]["refusals_reread"] >= len(too_deep)
    frontier = {r["url"]: r for r in c.read_table("frontier", c.last_committed()).to_pylist()}
    assert too_deep <= set(frontier) | set(latest(d)), "a depth-filtered URL did not come back"
    assert all(frontier[u]["depth"] == 2 for u in too_deep if u in frontier)
    crawlstate.run_rounds(d, "--rounds", "1", "--max_depth", "2", "--max_pages", "1000")
    rows = latest(d)
    assert too_deep <= set(rows), sorted(too_deep - set(rows))[:3]
    assert {rows[u]["depth"] for u in too_deep} == {2}


def test_rounds_with_the_flag_a_refusal_named_fetch_the_refused_seeds(simweb_small, tmp_path, capsys):
    """Nothing is due after every seed was refused, but a round given the flag the summary
    named still runs: it re-admits the refusals, and the next round fetches them."""
    d = tmp_path / "crawl"
    refuse_loopback_seeds(simweb_small, d, capsys)
    reports = crawlstate.run_rounds(d, "--rounds", "2", "--allow_loopback", "true")
    assert len(reports) == 2 and reports[0]["refusals_reread"] == len(simweb_small.seeds)
    rows = latest(d)
    assert all(fetched(rows[u]) for u in simweb_small.seeds)
    assert reports[1]["page_sets"]["downloaded"] >= len(simweb_small.seeds)
