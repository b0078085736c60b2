"""One definition of every setting: README's table, --help, crawl.json and checks agree with it."""
import re
import subprocess
import sys
from pathlib import Path

import pytest

from pipelines import cli
from pipelines.config import RoundConfig
from pipelines.settings import (
    COMMAND_FLAGS,
    GROUPS,
    ROUND_SETTINGS,
    UsageError,
    effective_round_settings,
    markdown_table,
)

REPO = Path(__file__).resolve().parents[2]
BEGIN = "<!-- settings table: python -m pipelines.settings --markdown -->"
END = "<!-- end settings table -->"


def readme_table():
    text = (REPO / "README.md").read_text()
    return text.split(BEGIN, 1)[1].split(END, 1)[0].strip()


def test_readme_defaults_table_is_the_generated_one():
    generated = subprocess.run([sys.executable, "-m", "pipelines.settings", "--markdown"], cwd=REPO,
                               capture_output=True, text=True, check=True).stdout.strip()
    assert generated == markdown_table()
    assert readme_table() == generated, "README's defaults table is stale: paste `python -m pipelines.settings --markdown`"


def test_readme_table_names_every_setting_with_its_default():
    rows = {m.group(1): m.group(2) for m in re.finditer(r"^\| `--(\w+)` \| \w+ \| `([^`]*)` \|",
                                                       readme_table(), re.MULTILINE)}
    assert set(rows) == set(ROUND_SETTINGS)
    for name, s in ROUND_SETTINGS.items():
        assert rows[name] == s.default_text()


def test_every_setting_has_a_known_group_and_help():
    for s in list(ROUND_SETTINGS.values()) + [f for flags in COMMAND_FLAGS.values() for f in flags]:
        assert s.group in set(GROUPS) | {"command"}, s.name
        assert s.help.strip(), s.name
    assert {s.group for s in ROUND_SETTINGS.values()} | {"runner"} == set(GROUPS)


def test_the_defaults_build_a_round_config():
    cfg = RoundConfig.build(effective_round_settings({}, {}), 1, 0.0)
    assert cfg.generate.max_pages == ROUND_SETTINGS["max_pages"].default
    assert cfg.fetch.user_agent == ROUND_SETTINGS["user_agent"].default


def test_given_flags_beat_crawl_json_which_beats_the_defaults():
    s = effective_round_settings({"max_pages": 7}, {"max_pages": 9, "max_per_host": 3})
    assert (s["max_pages"], s["max_per_host"], s["max_depth"]) == (7, 3, 0)


def test_a_bad_value_in_crawl_json_is_named_as_coming_from_there():
    with pytest.raises(UsageError, match=r"--max_pages -4 \(from crawl.json round_defaults\): must be at least 1"):
        effective_round_settings({}, {"max_pages": -4})


@pytest.mark.parametrize("name, value, fragment", [
    ("max_pages", "0", "--max_pages 0: must be at least 1"),
    ("max_per_host", "-1", "must be at least 1"),
    ("delay_per_host", "-0.5", "--delay_per_host -0.5: must be at least 0"),
    ("read_timeout", "0", "--read_timeout 0: must be at least"),
    ("near_duplicates", "1.5", "must be between 0.0 and 1.0"),
    ("pagerank_path", "disk", "must be one of auto, memory, beam"),
    ("strategy", "omniscient", "is for pipelines.evaluate only"),
    ("user_agent", "", "--user_agent '': must not be empty"),
    ("max_pages", "ten", "--max_pages ten: expected a whole number"),
    ("sitemaps", "maybe", "--sitemaps maybe: expected true or false"),
])
def test_values_that_make_no_sense_are_refused(name, value, fragment):
    with pytest.raises(UsageError) as e:
        ROUND_SETTINGS[name].coerce(value)
    assert fragment in str(e.value)


@pytest.mark.parametrize("command", ["inject", "round", "crawl"])
def test_help_lists_every_setting_with_its_default_by_group(command):
    text = cli.build_parser(command).format_help()
    for group in GROUPS:
        assert f"\n{group}:" in text, group
    flat = " ".join(text.split())
    for s in ROUND_SETTINGS.values():
        assert s.flag in text, s.flag
        assert f"(default: {' '.join(s.default_text().split())})" in flat, s.flag
    for s in COMMAND_FLAGS[command]:
        assert s.flag in text
