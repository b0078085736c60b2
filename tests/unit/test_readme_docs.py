"""README and docs/ say what the code does (#14, #50).

- Quoted messages: every line README's Troubleshooting quotes, and every `error: ...` line a
  docs/ page quotes, is what a command prints (run here on directories made for the purpose;
  `D` stands for the crawl directory, `N` for a number, `...` for the rest of the line). A
  quoted line no case runs fails too, so a page cannot quote an error nobody checks.
- Politeness (docs/politeness.md): each "`--flag` (default `X`)" is the setting's default.
- Concepts (README): every column the tables list is a column of that table in schemas/tables.py.
No URL outside loopback is fetched: the crawls here inject seeds on .test names that resolve,
through --resolve, to a server this module starts on 127.0.0.1 or to an address the guard refuses.
"""
import json
import re
import shutil
from pathlib import Path

import pytest

from pipelines import cli, inject
from pipelines.settings import ROUND_SETTINGS
from schemas import tables
from tests.unit.httpfixtures import LocalServer, status

REPO = Path(__file__).resolve().parents[2]
README = (REPO / "README.md").read_text(encoding="utf-8")
DOCS = sorted((REPO / "docs").glob("*.md"))


def section(title, text=README):
    start = text.index(f"\n## {title}\n")
    end = text.find("\n## ", start + 1)
    return text[start:end if end != -1 else None]


def troubleshooting_quotes():
    """The first cell's code span of each Troubleshooting table row."""
    out = []
    for line in section("Troubleshooting").splitlines():
        m = re.match(r"\| (``?)(.+?)\1 ", line)
        if m:
            out.append(m.group(2).strip())
    return out


def error_quotes(text):
    """The `error: ...` lines a page quotes: inline code spans and lines of fenced blocks that
    start with `error: `, except the bare placeholder `error: ...`."""
    found = [m.group(2).strip() for m in re.finditer(r"(``?)(error: .+?)\1", text)]
    for block in re.findall(r"^```[^\n]*\n(.*?)^```", text, re.M | re.S):
        found += [line.strip() for line in block.splitlines() if line.startswith("error: ")]
    return [q for q in found if q != "error: ..."]


def docs_quotes():
    return {q: page.name for page in DOCS for q in error_quotes(page.read_text(encoding="utf-8"))}


def quoted_messages():
    return troubleshooting_quotes() + list(docs_quotes())


def as_regex(message, crawl_dir):
    pattern = re.escape(message).replace(r"\.\.\.", ".*")
    pattern = re.sub(r"(?<![A-Za-z_])D(?![A-Za-z_])", lambda _: re.escape(str(crawl_dir)), pattern)
    # N: a number (or a literal N, as in `host=N` of a message that shows a syntax)
    pattern = re.sub(r"(?<![A-Za-z_-])N(?![A-Za-z_])", r"(?:\\d+|N)", pattern)
    return re.compile(pattern)


@pytest.fixture(scope="module")
def dirs(tmp_path_factory):
    base = tmp_path_factory.mktemp("docs")
    crawl = base / "crawl"
    assert inject.main(["--crawl_dir", str(crawl), "--seed", "http://a.test/"]) == 0
    no_round = base / "no_round"
    no_round.mkdir()
    (no_round / "crawl.json").write_text(json.dumps({"schema_version": tables.SCHEMA_VERSION}))
    other_version = base / "other_version"
    shutil.copytree(crawl, other_version)
    meta = json.loads((other_version / "crawl.json").read_text())
    (other_version / "crawl.json").write_text(json.dumps({**meta, "schema_version": tables.SCHEMA_VERSION + 98}))
    # the address guard refuses the seed (loopback not allowed): nothing is connected to,
    # round 1 commits a forbidden_address row and leaves the frontier empty
    refused = base / "refused"
    assert inject.main(["--crawl_dir", str(refused), "--seed", "http://a.test/",
                        "--resolve", "a.test:80:127.0.0.1"]) == 0
    assert cli.main(["round", "--crawl_dir", str(refused)]) == 0
    damaged = base / "damaged"
    shutil.copytree(refused, damaged)
    for part in (damaged / "rounds" / "000001" / "visited").glob("*.parquet"):
        part.write_bytes(part.read_bytes()[:100])          # a file cut short, as by a failed copy
    # a server that answers 503: the seed is a transient failure waiting for its backoff
    backoff = base / "backoff"
    with LocalServer({"/": status(503)}) as srv:
        assert inject.main(["--crawl_dir", str(backoff), "--seed", f"http://b.test:{srv.port}/",
                            "--resolve", f"b.test:{srv.port}:127.0.0.1", "--allow_loopback", "true",
                            "--delay_per_host", "0", "--sitemaps", "false"]) == 0
        assert cli.main(["round", "--crawl_dir", str(backoff)]) == 0
    return {"crawl": crawl, "no_round": no_round, "missing": base / "missing", "fresh": base / "fresh",
            "other_version": other_version, "refused": refused, "damaged": damaged, "backoff": backoff}


# (quoted message, which directory is D, the command line after `beamcrawl`, exit status, stream);
# with status 2 the message starts the command's one line on stderr, else one of its lines
CASES = [
    ("error: D/crawl.json does not exist: D is not a crawl directory.", "missing",
     ["report", "--crawl_dir", "D"], 2, "err"),
    ("error: no seeds: give --seeds FILE or --seed URL", "fresh", ["inject", "--crawl_dir", "D"], 2, "err"),
    ("error: none of the 1 seeds is an in-scope http(s) URL (e.g. http://a.test/: domain_not_allowed); "
     "nothing was written", "fresh",
     ["inject", "--crawl_dir", "D", "--seed", "http://a.test/", "--allow_domains", "b.test"], 2, "err"),
    ("error: D has no committed round; run ...", "no_round", ["round", "--crawl_dir", "D"], 2, "err"),
    ("error: say when to stop: --rounds R, --max_total_pages P or --until_empty", "crawl",
     ["crawl", "--crawl_dir", "D"], 2, "err"),
    ("error: unknown flag --maxpages; did you mean --max_pages?", "crawl",
     ["round", "--crawl_dir", "D", "--maxpages", "5"], 2, "err"),
    ("error: --max_pages 0: must be at least 1", "crawl", ["round", "--crawl_dir", "D", "--max_pages", "0"], 2, "err"),
    ("error: --strategy best: unknown ordering 'best'; a crawl can use ...", "crawl",
     ["round", "--crawl_dir", "D", "--strategy", "best"], 2, "err"),
    ("error: --rounds is a flag of `beamcrawl crawl`, not of `beamcrawl round`", "crawl",
     ["round", "--crawl_dir", "D", "--rounds", "2"], 2, "err"),
    ("error: http://x.test/ was never captured in D (no WARC index entry; ...)", "crawl",
     ["show", "--crawl_dir", "D", "http://x.test/"], 2, "err"),
    ("error: D has no committed round: start the crawl with ...", "no_round", ["report", "--crawl_dir", "D"], 2, "err"),
    ("error: D/rounds/N/visited/...: cannot read this Parquet file of table 'visited' ...", "damaged",
     ["report", "--crawl_dir", "D"], 2, "err"),
    ("error: D/crawl.json has schema_version N; this beamcrawl reads version N. ...", "other_version",
     ["round", "--crawl_dir", "D"], 2, "err"),
    ("nothing due: the frontier of round N is empty; ...", "refused", ["round", "--crawl_dir", "D"], 0, "out"),
    ("nothing due: the frontier has N URLs, ... waiting for a retry backoff, ...", "backoff",
     ["round", "--crawl_dir", "D"], 0, "out"),
    ("refused by the address guard (loopback): 1 URL; add --allow_loopback true to allow it", "refused",
     ["report", "--crawl_dir", "D", "--round", "1"], 0, "out"),
    # docs/ pages
    ("error: --deep_web_host_budgets jobs.example.org: entry 'jobs.example.org' is not host=N; "
     "expected host=N[,host2=M...]", "fresh",
     ["inject", "--crawl_dir", "D", "--seed", "http://a.test/", "--deep_web_host_budgets", "jobs.example.org"], 2, "err"),
    ("error: --render auto: no Chromium executable at ... (apt-get install chromium, or point --render_browser "
     "at one); or crawl without rendering (--render none)", "fresh",
     ["inject", "--crawl_dir", "D", "--seed", "http://a.test/", "--render", "auto",
      "--render_browser", "/nonexistent/chromium"], 2, "err"),
]


@pytest.mark.parametrize("message, which, argv, code, stream", CASES, ids=[c[0][:40] for c in CASES])
def test_quoted_messages_are_what_the_command_prints(message, which, argv, code, stream, dirs, capsys):
    assert message in quoted_messages(), f"neither README's Troubleshooting nor docs/ quotes {message!r}"
    d = dirs[which]
    capsys.readouterr()
    status = cli.main([str(d) if a == "D" else a for a in argv])
    captured = capsys.readouterr()
    lines = (captured.err if stream == "err" else captured.out).splitlines()
    assert status == code, (status, captured)
    if code == 2:
        assert len(lines) == 1, lines
        assert not (d / "crawl.json").exists() or which not in ("fresh", "missing"), "a refused command wrote"
    assert any(as_regex(message, d).match(line.strip()) for line in lines), \
        f"the docs say {message!r}; the command printed {lines!r}"


def test_every_quoted_error_line_is_checked():
    checked = {c[0] for c in CASES}
    unchecked = [q for q in quoted_messages() if q.startswith("error: ") and q not in checked]
    assert not unchecked, f"quoted error lines no case runs (add them to CASES): {unchecked}"


def test_the_regex_of_a_quoted_message_can_fail():
    assert not as_regex("error: --max_pages 0: must be at least 1", "/x").match(
        "error: --max_pages 0: must be at least 2")
    assert as_regex("error: D has no committed round; run ...", "/x").match(
        "error: /x has no committed round; run `beamcrawl inject` first.")


def test_error_quotes_are_found_in_spans_and_blocks():
    text = "say `error: --x 1: bad` or\n```\nerror: --y: worse\nok\n```\nnot `error: ...`"
    assert error_quotes(text) == ["error: --x 1: bad", "error: --y: worse"]


def test_politeness_defaults_are_the_settings_defaults():
    text = " ".join((REPO / "docs" / "politeness.md").read_text(encoding="utf-8").split())
    found = re.findall(r"`--(\w+)` \(default `([^`]+)`\)", text)
    assert len(found) >= 12
    for name, shown in found:
        assert ROUND_SETTINGS[name].default_text() == shown, name


def test_concepts_table_names_real_columns():
    rows = [line for line in section("Concepts").splitlines() if line.startswith("| `")]
    assert {re.match(r"\| `(\w+)`", r).group(1) for r in rows} == \
        {"visited", "frontier", "links", "filtered", "hosts", "near_duplicates"}
    for row in rows:
        table, _, columns = [c.strip() for c in row.strip("|").split("|")]
        names = re.findall(r"`(\w+)`", columns)
        schema = tables.TABLES[table.strip("`")]
        assert names and all(n in schema.names for n in names), (table, set(names) - set(schema.names))
