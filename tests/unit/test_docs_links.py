"""Every relative link in README.md, docs/*.md and benchmarks/RESULTS.md resolves (#50).

A link `[text](path)` must name a file or folder of the repository, relative to the page; a
link with `#anchor` (to another page or the same one) must name a heading of that Markdown
page, by the anchor GitHub gives it. Links with a scheme (https:, mailto:) are not followed.
Links inside code (fenced blocks, `spans`) are not links.
"""
import re
import unicodedata
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
PAGES = [REPO / "README.md", REPO / "benchmarks" / "RESULTS.md", *sorted((REPO / "docs").glob("*.md"))]

FENCE = re.compile(r"^ {0,3}(```|~~~).*?^ {0,3}\1[^\n]*$", re.M | re.S)
CODE_SPAN = re.compile(r"(`+)(?!`).+?(?<!`)\1(?!`)", re.S)
LINK = re.compile(r"(?<!!)\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
HEADING = re.compile(r"^ {0,3}(#{1,6})[ \t]+(.+?)[ \t]*#*[ \t]*$", re.M)


def without_code(text):
    """The page with fenced blocks and code spans blanked (their lines kept, for line numbers)."""
    text = FENCE.sub(lambda m: "\n" * m.group(0).count("\n"), text)
    return CODE_SPAN.sub(lambda m: " " * len(m.group(0)), text)


def slug(heading):
    """The anchor GitHub gives a heading: its text as rendered (a link's markup gone, a code
    span's text kept), lower-cased, every character that is not a letter, digit, space, `-` or
    `_` dropped (`*` emphasis with it), spaces turned into `-`."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)
    text = text.replace("`", "")
    text = text.strip().lower()
    kept = "".join(c for c in text if c in " -_" or unicodedata.category(c)[0] in "LNM")
    return kept.replace(" ", "-")


def anchors(text):
    """Every anchor a page's headings get, numbered -1, -2, ... when one repeats."""
    out, seen = set(), {}
    for m in HEADING.finditer(FENCE.sub("", text)):
        base = slug(m.group(2))
        n = seen.get(base, 0)
        out.add(base if n == 0 else f"{base}-{n}")
        seen[base] = n + 1
    return out


def dead_links(page: Path, repo: Path = REPO):
    """(line, target, why) for each relative link of `page` that does not resolve."""
    text = page.read_text(encoding="utf-8")
    out = []
    for m in LINK.finditer(without_code(text)):
        target = m.group(1)
        if re.match(r"[a-zA-Z][a-zA-Z0-9+.-]*:", target):
            continue
        line = text.count("\n", 0, m.start()) + 1
        path, _, anchor = target.partition("#")
        dest = (page.parent / path).resolve() if path else page
        if not dest.exists():
            out.append((line, target, "no such file"))
            continue
        if repo not in (dest, *dest.parents):
            out.append((line, target, "outside the repository"))
            continue
        if anchor:
            if dest.suffix != ".md" or dest.is_dir():
                out.append((line, target, "an anchor into a file that is not a Markdown page"))
            elif anchor not in anchors(dest.read_text(encoding="utf-8")):
                out.append((line, target, f"no heading with anchor #{anchor} in {dest.name}"))
    return out


@pytest.mark.parametrize("page", PAGES, ids=[str(p.relative_to(REPO)) for p in PAGES])
def test_every_relative_link_resolves(page):
    assert page.exists()
    assert not dead_links(page), f"{page.relative_to(REPO)}: dead links {dead_links(page)}"


def test_readme_links_every_docs_page():
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    linked = {m.group(1).partition("#")[0] for m in LINK.finditer(without_code(readme))}
    assert {f"docs/{p.name}" for p in (REPO / "docs").glob("*.md")} <= linked


def test_slugs_are_githubs():
    assert slug("What beamcrawl is, and when to pick it") == "what-beamcrawl-is-and-when-to-pick-it"
    assert slug("Memory: what a round holds (`--memory_mb`)") == "memory-what-a-round-holds---memory_mb"
    assert slug("Real web: beamcrawl vs Scrapy on nginx (issue #12) — `benchmarks/realweb/`") == \
        "real-web-beamcrawl-vs-scrapy-on-nginx-issue-12--benchmarksrealweb"
    assert slug("Against the issue's targets (bench50k, headline run)") == \
        "against-the-issues-targets-bench50k-headline-run"
    assert anchors("# A\n## B\n## B\n```\n## C\n```\n") == {"a", "b", "b-1"}


def test_a_dead_link_or_anchor_is_found(tmp_path):
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "there.md").write_text("# There\n\n## A part\n", encoding="utf-8")
    page = tmp_path / "README.md"
    page.write_text("\n".join([
        "# Page", "",
        "[ok](docs/there.md) [ok](docs/there.md#a-part) [ok](#page) [web](https://example.org/x)",
        "[gone](docs/missing.md)", "[no anchor](docs/there.md#no-part)", "[no own anchor](#nowhere)",
        "`[in code](docs/missing.md)`", "```", "[in a block](docs/missing.md)", "```",
    ]), encoding="utf-8")
    found = [(line, target) for line, target, _ in dead_links(page, repo=tmp_path)]
    assert found == [(4, "docs/missing.md"), (5, "docs/there.md#no-part"), (6, "#nowhere")]
