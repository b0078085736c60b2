"""The scope filter: which canonical URLs may enter the frontier, and why not (pure)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Sequence

import numpy as np

from transforms.urls.canonical import idna_ascii

# --------------------------------------------------------------------------------------
REASONS = ('url_too_long', 'host_not_allowed', 'domain_not_allowed', 'regex_not_allowed',
           'regex_deny', 'extension', 'depth')

# Path suffixes of resources that are not pages worth parsing for links: styles, scripts,
# fonts, images, audio, video, archives, executables/packages, disk images. Documents
# (html, php, asp, pdf, doc, xls, ppt, txt, xml, json ...) are NOT listed.
DEFAULT_DENY_EXTENSIONS: tuple[str, ...] = (
    # styles, scripts, source maps, web assembly
    "css", "js", "mjs", "map", "wasm",
    # fonts
    "woff", "woff2", "ttf", "otf", "eot",
    # images
    "png", "jpg", "jpeg", "jpe", "gif", "bmp", "ico", "svg", "svgz", "webp", "avif", "tif",
    "tiff", "psd", "heic", "raw", "cr2", "nef",
    # audio
    "mp3", "wav", "ogg", "oga", "flac", "aac", "m4a", "wma", "mid", "midi", "ra", "opus",
    # video
    "mp4", "m4v", "webm", "avi", "mov", "wmv", "flv", "mkv", "mpg", "mpeg", "3gp", "ogv",
    "swf", "m3u8", "ts",
    # archives and compressed files
    "zip", "gz", "tgz", "bz2", "tbz", "xz", "txz", "7z", "rar", "tar", "zst", "lz", "lzma",
    "z", "cab",
    # executables, packages, disk images
    "exe", "msi", "dll", "bin", "dmg", "iso", "img", "apk", "deb", "rpm", "jar", "pkg",
    "appimage", "so",
)


@dataclass(frozen=True)
class UrlFilter:
    """Scope and quality filter applied to canonical URLs before they enter the frontier.

    Rules are checked in REASONS order and the first failing rule's code is returned:
    ``url_too_long`` (len > max_url_length), ``host_not_allowed`` (allow_hosts given and the
    host is not one of them), ``domain_not_allowed`` (allow_domains given and the host is
    neither one of them nor a subdomain of one), ``regex_not_allowed`` (url_regex_allow given
    and no pattern re.search-matches), ``regex_deny`` (a url_regex_deny pattern matches),
    ``extension`` (the last path segment ends in ``.<ext>`` with ext in deny_extensions,
    case-insensitive; the query is not looked at), ``depth`` (depth > max_depth).

    Host names in allow_hosts/allow_domains are compared lower-case, IDNA-encoded, without
    port; a leading '.' on a domain is ignored. Plain fields only, so it pickles; compiled
    state is rebuilt after unpickling.
    """
    allow_hosts: tuple[str, ...] = ()
    allow_domains: tuple[str, ...] = ()
    url_regex_allow: tuple[str, ...] = ()
    url_regex_deny: tuple[str, ...] = ()
    deny_extensions: tuple[str, ...] = DEFAULT_DENY_EXTENSIONS
    max_url_length: int = 2048
    max_depth: int | None = None
    _c: tuple = field(default=(), init=False, repr=False, compare=False, hash=False)

    def __post_init__(self):
        for name in ("allow_hosts", "allow_domains", "url_regex_allow", "url_regex_deny",
                     "deny_extensions"):
            v = getattr(self, name)
            if isinstance(v, str):
                v = (v,)
            object.__setattr__(self, name, tuple(v))
        self._compile()

    def _compile(self):
        hosts = frozenset(_host_label(h) for h in self.allow_hosts) or None
        domains = frozenset(_host_label(d.lstrip(".")) for d in self.allow_domains) or None
        allow = tuple(re.compile(p) for p in self.url_regex_allow)
        deny = tuple(re.compile(p) for p in self.url_regex_deny)
        exts = frozenset(e.lower().lstrip(".") for e in self.deny_extensions)
        object.__setattr__(self, "_c", (hosts, domains, allow, deny, exts))

    def __getstate__(self):
        return {k: getattr(self, k) for k in
                ("allow_hosts", "allow_domains", "url_regex_allow", "url_regex_deny",
                 "deny_extensions", "max_url_length", "max_depth")}

    def __setstate__(self, state):
        for k, v in state.items():
            object.__setattr__(self, k, v)
        self._compile()

    def reason(self, url: str, depth: int = 0) -> str | None:
        """None if `url` (canonical) at link depth `depth` is kept, else its REASONS code."""
        hosts, domains, allow, deny, exts = self._c
        if len(url) > self.max_url_length:
            return "url_too_long"
        if hosts is not None or domains is not None:
            host = _hostname(url)
            if hosts is not None and host not in hosts:
                return "host_not_allowed"
            if domains is not None and not _in_domains(host, domains):
                return "domain_not_allowed"
        if allow and not any(p.search(url) for p in allow):
            return "regex_not_allowed"
        if deny and any(p.search(url) for p in deny):
            return "regex_deny"
        if exts and _extension(url) in exts:
            return "extension"
        if self.max_depth is not None and depth is not None and depth > self.max_depth:
            return "depth"
        return None

    def reasons(self, urls: Sequence[str], depths=None) -> list[str | None]:
        """[reason(u, d) for u, d in zip(urls, depths)]; `depths` may be None (all 0), an
        int (same for all) or a sequence / numpy / pyarrow array as long as `urls` (which may
        be a pyarrow string array too)."""
        n = len(urls)
        if depths is None or isinstance(depths, (int, np.integer)):
            depths = [0 if depths is None else int(depths)] * n
        else:
            if hasattr(depths, "to_pylist"):  # pyarrow array / chunked array
                depths = depths.to_pylist()
            elif isinstance(depths, np.ndarray):
                depths = depths.tolist()
            if len(depths) != n:
                raise ValueError(f"{n} urls but {len(depths)} depths")
        if hasattr(urls, "to_pylist"):
            urls = urls.to_pylist()
        hosts, domains, allow, deny, exts = self._c
        if allow or deny:
            reason = self.reason
            return [reason(u, d) for u, d in zip(urls, depths)]
        # Common case (length, hosts/domains, extension, depth): one tight loop, same rules
        # and order; a page's links share few hosts, so each host is looked up once.
        max_len = self.max_url_length
        max_depth = self.max_depth
        ext_of = _extension
        scoped = hosts is not None or domains is not None
        host_reason: dict = {}
        out = []
        append = out.append
        for u, d in zip(urls, depths):
            if len(u) > max_len:
                append("url_too_long")
                continue
            if scoped:
                host = _hostname(u)
                r = host_reason.get(host, _UNSEEN)
                if r is _UNSEEN:
                    r = host_reason[host] = (
                        "host_not_allowed" if hosts is not None and host not in hosts else
                        "domain_not_allowed" if domains is not None and not _in_domains(host, domains)
                        else None)
                if r is not None:
                    append(r)
                    continue
            if exts and ext_of(u) in exts:
                append("extension")
            elif max_depth is not None and d is not None and d > max_depth:
                append("depth")
            else:
                append(None)
        return out


_UNSEEN = object()


def _host_label(h: str) -> str:
    h = h.strip().lower().rstrip("/")
    if not h.isascii():
        try:
            h = idna_ascii(h)
        except Exception:
            pass
    return h


def _hostname(url: str) -> str:
    """Host name (no port) of a canonical http(s) URL."""
    start = url.find("//") + 2
    end = url.find("/", start)
    hp = url[start:] if end < 0 else url[start:end]
    if hp[:1] == "[":  # IPv6 literal
        return hp[:hp.find("]") + 1]
    i = hp.rfind(":")
    return hp if i < 0 else hp[:i]


def _in_domains(host: str, domains: frozenset) -> bool:
    if host in domains:
        return True
    i = host.find(".")
    while i >= 0:
        if host[i + 1:] in domains:
            return True
        i = host.find(".", i + 1)
    return False


def _extension(url: str) -> str:
    """Lower-case extension of the last path segment of a canonical URL (before any
    ``;params``), '' if none. The query is not looked at."""
    end = url.find("?")
    if end < 0:
        end = len(url)
    slash = url.rfind("/", 0, end)  # canonical paths start with '/': never in the host
    semi = url.find(";", slash, end)
    if semi >= 0:
        end = semi
    dot = url.rfind(".", slash, end)
    if dot < 0:
        return ""
    return url[dot + 1:end].lower()
