"""README's user sections say what the code does (#14).

- Troubleshooting: the `error:` lines it quotes are what the commands print (run here on
  directories made for the purpose; `D` stands for the crawl directory, `N` for a number,
  `...` for the rest of the line).
- Politeness: each "`--flag` (default `X`)" is the setting's default.
- Concepts: every column the tables list is a column of that table in schemas/tables.py.
No URL is fetched: the crawls here only inject seeds on .test names.
"""
import json
import re
from pathlib import Path

import pytest

from pipelines import cli, inject
from pipelines.settings import ROUND_SETTINGS
from schemas import tables

README = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")


def section(title):
    start = README.index(f"\n## {title}\n")
    end = README.find("\n## ", start + 1)
    return README[start:end if end != -1 else None]


def quoted_messages():
    """The first cell's code span of each Troubleshooting table row."""
    out = []
    for line in section("Troubleshooting").splitlines():
        m = re.match(r"\| (``?)(.+?)\1 ", line)
        if m:
            out.append(m.group(2).strip())
    return out


def as_regex(message, crawl_dir):
    pattern = re.escape(message).replace(r"\.\.\.", ".*")
    pattern = re.sub(r"(?<![A-Za-z_])D(?![A-Za-z_])", lambda _: re.escape(str(crawl_dir)), pattern)
    pattern = re.sub(r"(?<![A-Za-z_-])N(?![A-Za-z_])", r"\\d+", pattern)
    return re.compile(pattern)


@pytest.fixture(scope="module")
def dirs(tmp_path_factory):
    base = tmp_path_factory.mktemp("docs")
    crawl = base / "crawl"
    assert inject.main(["--crawl_dir", str(crawl), "--seed", "http://a.test/"]) == 0
    no_round = base / "no_round"
    no_round.mkdir()
    (no_round / "crawl.json").write_text(json.dumps({"schema_version": tables.SCHEMA_VERSION}))
    return {"crawl": crawl, "no_round": no_round, "missing": base / "missing", "fresh": base / "fresh"}


# (README message, which directory is D, the command line after `beamcrawl`)
CASES = [
    ("error: D/crawl.json does not exist: D is not a crawl directory.", "missing",
     ["report", "--crawl_dir", "D"]),
    ("error: no seeds: give --seeds FILE or --seed URL", "fresh", ["inject", "--crawl_dir", "D"]),
    ("error: none of the 1 seeds is an in-scope http(s) URL (e.g. http://a.test/: domain_not_allowed); "
     "nothing was written", "fresh",
     ["inject", "--crawl_dir", "D", "--seed", "http://a.test/", "--allow_domains", "b.test"]),
    ("error: D has no committed round; run ...", "no_round", ["round", "--crawl_dir", "D"]),
    ("error: say when to stop: --rounds R, --max_total_pages P or --until_empty", "crawl",
     ["crawl", "--crawl_dir", "D"]),
    ("error: unknown flag --maxpages; did you mean --max_pages?", "crawl",
     ["round", "--crawl_dir", "D", "--maxpages", "5"]),
    ("error: --max_pages 0: must be at least 1", "crawl", ["round", "--crawl_dir", "D", "--max_pages", "0"]),
    ("error: --strategy best: unknown ordering 'best'; a crawl can use ...", "crawl",
     ["round", "--crawl_dir", "D", "--strategy", "best"]),
    ("error: --rounds is a flag of `beamcrawl crawl`, not of `beamcrawl round`", "crawl",
     ["round", "--crawl_dir", "D", "--rounds", "2"]),
    ("error: http://x.test/ was never captured in D (no WARC index entry; ...)", "crawl",
     ["show", "--crawl_dir", "D", "http://x.test/"]),
    ("error: D has no committed round: start the crawl with ...", "no_round", ["report", "--crawl_dir", "D"]),
]


@pytest.mark.parametrize("message, which, argv", CASES, ids=[c[0][:40] for c in CASES])
def test_troubleshooting_quotes_what_the_command_prints(message, which, argv, dirs, capsys):
    assert message in quoted_messages(), f"README's Troubleshooting no longer quotes {message!r}"
    d = dirs[which]
    capsys.readouterr()
    status = cli.main([str(d) if a == "D" else a for a in argv])
    lines = capsys.readouterr().err.splitlines()
    assert status == 2 and len(lines) == 1, lines
    assert as_regex(message, d).match(lines[0]), f"README says {message!r}; the command printed {lines[0]!r}"


def test_the_regex_of_a_quoted_message_can_fail():
    assert not as_regex("error: --max_pages 0: must be at least 1", "/x").match(
        "error: --max_pages 0: must be at least 2")
    assert as_regex("error: D has no committed round; run ...", "/x").match(
        "error: /x has no committed round; run `beamcrawl inject` first.")


def test_politeness_defaults_are_the_settings_defaults():
    text = " ".join(section("Politeness").split())
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
