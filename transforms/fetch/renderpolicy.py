"""When a page is rendered in headless Chromium, and what rendering found (pure: no browser).

`RenderConfig` holds the --render settings. `wants_render(cfg, host, result, state)` decides
for one fetched page:

- `none`: never;
- hosts listed in --render_hosts: every HTML page (with `always` and no list: every host);
- `auto`: a host where rendering found more before (`HostState.render_helped` true): every
  HTML page; a host where it found nothing (false): none; otherwise a page whose static
  HTML looks script-built (`looks_script_built`): almost no text, almost no links, and at
  least one script.

`compare(static, rendered, url)` says what rendering added: the <a>/<area> links of the
rendered DOM that the static HTML lacks, and the extra characters of visible text.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from urllib.parse import urljoin

import lxml.html
from lxml import etree

from schemas.tables import OK

MODES = ("none", "auto", "always")
HTML_TYPES = ("text/html", "application/xhtml+xml")
# "script-built": the static HTML shows fewer than this much text and these many links...
SHELL_MAX_TEXT = 200
SHELL_MAX_LINKS = 2
# ... and rendering "found more" when it added a link or this much text
GAIN_TEXT = 200
_SCRIPT = re.compile(rb"<script\b", re.I)
_HIDDEN = ("script", "style", "noscript", "template")
_SPACE = re.compile(r"\s+")


def links_and_text(html: bytes | str, url: str) -> tuple[set[str], str]:
    """The absolute http(s) targets of <a>/<area> hrefs and the visible text (collapsed) --
    a measure for the heuristics only; the page step's parser reads the links it keeps."""
    try:
        root = lxml.html.fromstring(html)
    except (etree.ParserError, ValueError):
        return set(), ""
    for el in list(root.iter(*_HIDDEN)):
        if el.getparent() is not None:
            el.drop_tree()
    base = url
    for b in root.iter("base"):
        if b.get("href"):
            base = urljoin(url, b.get("href").strip())
            break
    links = set()
    for el in root.iter("a", "area"):
        href = (el.get("href") or "").strip()
        if href and not href.startswith("#"):
            target = urljoin(base, href).split("#", 1)[0]
            if target.startswith(("http://", "https://")):
                links.add(target)
    body = root.find("body") if root.tag != "body" else root
    text = (body if body is not None else root).text_content()
    return links, _SPACE.sub(" ", text).strip()


@dataclass(frozen=True)
class RenderConfig:
    """--render settings (pipelines/settings.py, group `rendering`). Picklable."""
    mode: str = "none"
    hosts: tuple[str, ...] = ()          # always rendered (when mode is not none)
    browser: str = "/usr/bin/chromium"   # the Chromium executable (never downloaded)
    pages: int = 2                       # pages rendered at once per worker
    recycle_after: int = 200             # the browser is restarted after this many pages
    seconds: float = 20.0                # page deadline: load, scripts, sub-requests
    memory_mb: int = 1024                # browser + renderers resident memory cap
    max_subrequests: int = 30            # sub-requests one page may make
    subrequest_hosts: tuple[str, ...] = ()   # other hosts (host or host:port) sub-requests may go to

    def __post_init__(self):
        if self.mode not in MODES:
            raise ValueError(f"render mode must be one of {', '.join(MODES)}, not {self.mode!r}")

    @property
    def on(self) -> bool:
        return self.mode != "none"


def looks_script_built(body: bytes, url: str, content_type_header: str | None = None) -> bool:
    """Static HTML that a script fills in: scripts, but almost no text and links."""
    if not body or not _SCRIPT.search(body[:2_000_000]):
        return False
    links, text = links_and_text(body, url)
    return len(text) < SHELL_MAX_TEXT and len(links) <= SHELL_MAX_LINKS


def listed(cfg: RenderConfig, host: str) -> bool:
    """Is `host` (a politeness key: name[:port]) in --render_hosts, with or without its port?"""
    h = host.lower()
    return h in cfg.hosts or (":" in h and h.rsplit(":", 1)[0] in cfg.hosts)


def wants_render(cfg: RenderConfig, host: str, result, state) -> bool:
    """Render this fetch result (a FetchResult of `host`)? See the module docstring."""
    if not cfg.on or result.outcome != OK or not result.body or result.truncated:
        return False
    if (result.content_type or "") not in HTML_TYPES:
        return False
    if listed(cfg, host) or (cfg.mode == "always" and not cfg.hosts):
        return True
    if cfg.mode != "auto":
        return False
    helped = getattr(state, "render_helped", None)
    if helped is not None:
        return bool(helped)
    return looks_script_built(result.body, result.url, result.content_type_header)


def compare(static: bytes, rendered: bytes, url: str) -> tuple[int, int]:
    """(links the rendered DOM adds, text characters it adds) over the static HTML."""
    a_links, a_text = links_and_text(static, url)
    b_links, b_text = links_and_text(rendered, url)
    return len(b_links - a_links), max(0, len(b_text) - len(a_text))


def found_more(links_added: int, text_added: int) -> bool:
    return links_added > 0 or text_added >= GAIN_TEXT
