"""The command line tells the truth: --help, unknown flags, booleans, Beam's flags, and
every bad invocation refused with one line, exit status 2 and nothing written.

Seeds are on .test names and the crawls here only inject (nothing is fetched)."""
import hashlib
import json
import pathlib
import subprocess
import sys

import pytest

from pipelines import cli, inject
from pipelines import crawl as crawl_mod
from pipelines import round as round_mod
from pipelines.settings import ROUND_SETTINGS, UsageError

REPO = pathlib.Path(__file__).resolve().parents[2]
SEEDS = ["--seed", "http://a.test/", "--seed", "http://b.test/x"]


def snapshot(d):
    d = pathlib.Path(d)
    if not d.exists():
        return None
    return {str(p): hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(d.rglob("*")) if p.is_file()}


@pytest.fixture(scope="module")
def crawl_dir(tmp_path_factory):
    d = tmp_path_factory.mktemp("cli") / "crawl"
    assert inject.main(["--crawl_dir", str(d), *SEEDS, "--allow_loopback"]) == 0
    return d


def refused(main, argv, capsys, where, fragment):
    """main(argv) exits 2 with one line `error: ...` containing fragment; `where` unchanged."""
    capsys.readouterr()
    before = snapshot(where)
    try:
        status = main(argv)
    except SystemExit as e:   # evaluate's main() exits instead of returning a status
        status = e.code
    assert status == 2
    captured = capsys.readouterr()
    lines = captured.err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), captured.err
    assert fragment in lines[0]
    assert snapshot(where) == before, "a refused command must not write anything"
    return lines[0]


@pytest.mark.parametrize("command", ["round", "crawl", "inject"])
def test_help_lists_our_flags_not_beams_usage(command, capsys):
    assert cli.main([command, "--help"]) == 0
    out = capsys.readouterr().out
    assert "--max_pages MAX_PAGES" in out and "(default: 1000)" in out
    assert "--obey_robots [true|false]" in out and "--no-obey_robots" in out
    assert "politeness:" in out and "duplicates:" in out


def test_python_m_round_help_is_ours():
    proc = subprocess.run([sys.executable, "-m", "pipelines.round", "--help"], cwd=REPO, check=False,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0 and proc.stderr == ""
    assert "usage: beamcrawl round" in proc.stdout
    for s in ROUND_SETTINGS.values():
        assert s.flag in proc.stdout


@pytest.mark.parametrize("command", ["report", "evaluate", "demo"])
def test_the_other_entry_points_answer_help(command, capsys):
    with pytest.raises(SystemExit) as e:
        cli.main([command, "--help"])
    assert e.value.code == 0
    assert f"usage: beamcrawl {command}" in capsys.readouterr().out


def test_misspelt_flag_is_an_error_with_the_closest_name(crawl_dir, capsys):
    line = refused(round_mod.main, ["--crawl_dir", str(crawl_dir), "--maxpages", "5"], capsys, crawl_dir, "")
    assert line == "error: unknown flag --maxpages; did you mean --max_pages?"


@pytest.mark.parametrize("main, argv, fragment", [
    (cli.main, ["report", "--crawl_dir", "x", "--rund", "3"], "unknown flag --rund; did you mean --round?"),
    (cli.main, ["demo", "--round", "3"], "unknown flag --round; did you mean --rounds?"),
    (cli.main, ["evaluate", "--generat", "10"], "unknown flag --generat; did you mean --generate?"),
])
def test_misspelt_flags_of_the_other_entry_points(main, argv, fragment, capsys, tmp_path):
    refused(main, argv, capsys, tmp_path, fragment)


def test_beams_own_flags_pass_through_to_beam_and_ours_stay_ours(tmp_path):
    beam = ["--runner=DirectRunner", "--direct_num_workers", "2", "--direct_running_mode=multi_processing",
            "--job_endpoint=embed", "--environment_type=LOOPBACK"]
    cmd = cli.parse_command_line("round", ["--crawl_dir", str(tmp_path), *beam, "--max_pages", "5",
                                           "--user_agent", "probe/1.0"])
    assert cmd.beam_argv == beam
    assert cmd.given == {"max_pages": 5, "user_agent": "probe/1.0"}


@pytest.mark.parametrize("argv, expected", [
    (["--allow_loopback"], True),
    (["--allow_loopback=true"], True),
    (["--allow_loopback", "true"], True),
    (["--allow_loopback", "false"], False),
    (["--allow_loopback=no"], False),
    (["--no-allow_loopback"], False),
    (["--allow_loopback", "--max_pages", "3"], True),
])
def test_boolean_flag_forms(argv, expected, tmp_path):
    cmd = cli.parse_command_line("round", ["--crawl_dir", str(tmp_path), *argv])
    assert cmd.given["allow_loopback"] is expected


def test_an_unknown_bare_word_is_an_error(tmp_path):
    with pytest.raises(UsageError, match="unexpected argument 'stray'"):
        cli.parse_command_line("round", ["--crawl_dir", str(tmp_path), "stray"])


@pytest.mark.parametrize("argv, fragment", [
    (["--strategy", "omniscient"], "--strategy omniscient: is for pipelines.evaluate only"),
    (["--strategy", "depth_first"], "unknown ordering 'depth_first'"),
    (["--user_agent", ""], "--user_agent '': must not be empty"),
    (["--max_pages", "0"], "--max_pages 0: must be at least 1"),
    (["--max_per_host", "-3"], "--max_per_host -3: must be at least 1"),
    (["--delay_per_host", "-1"], "--delay_per_host -1: must be at least 0"),
    (["--connect_timeout", "0"], "--connect_timeout 0: must be at least"),
    (["--deadline", "-5"], "--deadline -5: must be at least"),
    (["--fetch_threads", "0"], "--fetch_threads 0: must be at least 1"),
    (["--url_regex_deny", "("], "--url_regex_deny: '(' is not a valid regular expression"),
    (["--url_regex_allow", "[a-"], "--url_regex_allow: '[a-' is not a valid regular expression"),
    (["--deny_addresses", "10.0.0.0/99"], "--deny_addresses"),
    (["--resolve", "a.test:80"], "--resolve"),
    (["--resolve_file", "/nonexistent/hosts.txt"], "--resolve_file /nonexistent/hosts.txt"),
    (["--strategy_params", "x"], "--strategy_params: 'x' is not KEY=VALUE"),
    (["--strategy_params", "nosuch=1"], "unknown parameter"),
    (["--allow_loopback", "maybe"], "--allow_loopback maybe: expected true or false"),
    (["--max_pages", "many"], "--max_pages many: expected a whole number"),
    (["--rounds", "2"], "--rounds is a flag of `beamcrawl crawl`, not of `beamcrawl round`"),
])
def test_a_bad_round_is_refused_before_anything_is_written(crawl_dir, capsys, argv, fragment):
    refused(round_mod.main, ["--crawl_dir", str(crawl_dir), *argv], capsys, crawl_dir, fragment)


@pytest.mark.parametrize("argv, fragment", [
    (["--rounds", "0"], "--rounds 0: must be at least 1"),
    ([], "say when to stop"),
    (["--until_empty", "--max_pages", "-1"], "--max_pages -1: must be at least 1"),
])
def test_a_bad_crawl_is_refused_before_anything_is_written(crawl_dir, capsys, argv, fragment):
    refused(crawl_mod.main, ["--crawl_dir", str(crawl_dir), *argv], capsys, crawl_dir, fragment)


def test_inject_refusals_on_a_new_directory_leave_nothing(tmp_path, capsys):
    d = tmp_path / "new"
    no_url = tmp_path / "seeds.txt"
    no_url.write_text("# only comments\nnot a url\nftp://a.test/\n")
    cases = [
        (SEEDS + ["--strategy", "nosuch"], "--strategy nosuch: unknown ordering 'nosuch'"),
        (["--seeds", str(no_url)], "none of the 2 seeds is an in-scope http(s) URL"),
        (["--seeds", str(tmp_path / "missing.txt")], "--seeds"),
        (SEEDS + ["--deny_addresses", "not-a-cidr"], "--deny_addresses"),
        (SEEDS + ["--allow_domains", "other.test"], "none of the 2 seeds is an in-scope"),
        ([], "no seeds: give --seeds FILE or --seed URL"),
        (SEEDS + ["--max_depth", "-1"], "--max_depth -1: must be at least 0"),
    ]
    for argv, fragment in cases:
        refused(inject.main, ["--crawl_dir", str(d), *argv], capsys, d, fragment)
        assert not d.exists()


def test_inject_on_a_file_is_one_line(tmp_path, capsys):
    f = tmp_path / "afile"
    f.write_text("x")
    refused(inject.main, ["--crawl_dir", str(f), *SEEDS], capsys, tmp_path, "is a file, not a directory")


def test_inject_refusals_on_an_existing_crawl_change_nothing(crawl_dir, capsys):
    refused(inject.main, ["--crawl_dir", str(crawl_dir), *SEEDS, "--max_pages", "0"], capsys, crawl_dir,
            "--max_pages 0")
    refused(inject.main, ["--crawl_dir", str(crawl_dir), *SEEDS, "--strategy", "nosuch"], capsys, crawl_dir,
            "unknown ordering")


def test_inject_on_an_existing_crawl_says_what_it_added_and_changed(tmp_path, capsys):
    d = tmp_path / "crawl"
    assert inject.main(["--crawl_dir", str(d), *SEEDS]) == 0
    capsys.readouterr()
    assert inject.main(["--crawl_dir", str(d), "--seed", "http://a.test/", "--seed", "http://c.test/",
                        "--max_pages", "5", "--delay_per_host", "1.0"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out == ["changed default --max_pages: 1000 -> 5",
                   "round 1: injected 1 new seeds, 1 already known (not added again); frontier 3 URLs"]
    config = json.loads((d / "crawl.json").read_text())
    assert config["round_defaults"]["max_pages"] == 5
    options = json.loads((d / "rounds" / "000001" / "options.json").read_text())
    assert options["max_pages"] == 5 and set(options) == set(ROUND_SETTINGS)


def test_nothing_due_commits_nothing(crawl_dir, capsys):
    before = snapshot(crawl_dir)
    # the seeds' not_before is 0: at a round time before it, none of them is due (generate's rule)
    assert round_mod.main(["--crawl_dir", str(crawl_dir), "--round_time", "-10"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("nothing due: the frontier has 2 URLs, 2 waiting for a retry backoff, none due before")
    assert snapshot(crawl_dir) == before
    assert crawl_mod.run_crawl(["--crawl_dir", str(crawl_dir), "--until_empty", "--round_time", "-10"],
                               out=lambda s: None) == []
    assert snapshot(crawl_dir) == before


def test_run_cli_turns_usage_errors_into_one_line(capsys):
    def run(argv):
        raise UsageError("--x y: bad\n  on two lines")
    assert cli.run_cli(run, [], str) == 2
    assert capsys.readouterr().err == "error: --x y: bad on two lines\n"


def test_evaluate_on_a_directory_without_a_graph_is_one_line(tmp_path, capsys):
    from pipelines import evaluate
    with pytest.raises(SystemExit) as e:
        evaluate.main(["--graph", str(tmp_path)])
    assert e.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: cannot read the graph") and "pages.parquet" in err[0]


def test_an_unknown_strategy_lists_only_the_strategies_a_crawl_can_use():
    from pipelines.config import ConfigError, ordering
    with pytest.raises(ConfigError) as e:
        ordering({"strategy": "nosuch", "strategy_params": ""})
    assert "opic" in str(e.value) and "omniscient" not in str(e.value)


def test_without_pycurl_a_round_is_refused_in_one_line(crawl_dir, capsys, monkeypatch):
    """The HTTP client's library missing (a partial install, a platform without a pycurl
    wheel): refused before the round starts, naming the library and the way out."""
    import importlib.util
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a, **k: None if name == "pycurl" else real(name, *a, **k))
    line = refused(round_mod.main, ["--crawl_dir", str(crawl_dir)], capsys, crawl_dir,
                   "pycurl is not installed")
    assert "pip install -r requirements.txt" in line


def test_a_retired_flag_is_refused_with_its_reason(crawl_dir, capsys):
    line = refused(round_mod.main, ["--crawl_dir", str(crawl_dir), "--fetch_engine", "threads"], capsys,
                   crawl_dir, "--fetch_engine was removed")
    assert "libcurl" in line and "drop the flag" in line
