"""The simulated web as a deterministic model: hosts, pages, links, robots, content, change.

Nothing here opens a socket. ``build_web(config, seed)`` builds the link graph up front
with numpy (fast even for 100 000 pages); page bytes are rendered lazily per request by
``SimWeb.respond`` and depend only on (seed, config, port, page, change version).
"""
from __future__ import annotations

import email.utils
import gzip
import hashlib
import html
import io
import math
import posixpath
import random
import struct
from collections import OrderedDict
from dataclasses import dataclass, field
from urllib.parse import parse_qsl, urlsplit

import numpy as np

from . import templatehost, words
from .clock import RealClock
from .config import SimConfig, load_config

DOMAIN = "simweb.test"

# page kinds
HTML, PDF, JPG, PNG, DOC, REDIRECT = range(6)
KIND_NAMES = ["html", "pdf", "jpg", "png", "doc", "redirect"]
CONTENT_TYPES = ["text/html", "application/pdf", "image/jpeg", "image/png",
                 "application/msword", "text/html"]

# encodings of HTML pages: (python codec, header charset or None, meta charset or None)
ENCODINGS = [
    ("utf-8", "utf-8", "utf-8"),
    ("gbk", None, "gbk"),          # gbk, declared in <meta> only
    ("gbk", "GBK", None),          # gbk, declared in the HTTP header only
    ("gbk", None, None),           # gbk, undeclared (sniff it)
    ("iso-8859-1", "ISO-8859-1", "iso-8859-1"),
]
ENCODING_NAMES = ["utf-8", "gbk-meta", "gbk-header", "gbk-undeclared", "iso-8859-1"]

# link tags
TAG_A, TAG_AREA, TAG_IFRAME, TAG_FRAME, TAG_REFRESH = range(5)
TAG_NAMES = ["a", "area", "iframe", "frame", "meta_refresh"]

# href styles (how a link is written; all resolve to the same canonical URL)
(ST_ABS, ST_ABS_MIXED, ST_PROTO, ST_ROOT, ST_REL, ST_FRAG, ST_DOT, ST_PCT) = range(8)
STYLE_NAMES = ["absolute", "absolute-mixed-case", "protocol-relative", "root-relative",
               "relative", "fragment", "dot-segments", "percent-encoded"]
SAME_HOST_STYLE_P = [0.12, 0.08, 0.08, 0.25, 0.25, 0.08, 0.07, 0.07]
CROSS_HOST_STYLES = [ST_ABS, ST_ABS_MIXED, ST_PROTO, ST_FRAG]

SECTIONS = ["news", "blog", "docs", "shop", "wiki", "forum", "archive", "private", "tmp"]
SECTION_P = [0.2, 0.14, 0.14, 0.1, 0.1, 0.1, 0.08, 0.07, 0.07]

ROBOTS_VARIANTS = ["rules", "404", "500", "redirect", "garbage", "huge"]
ROBOTS_MAX_BYTES = 500 * 1024   # RFC 9309: parse at least the first 500 KiB; truth uses exactly that

TRUTH_UA = "simweb-truth"       # matches no named group: robots truth is for User-agent: *

FORBIDDEN_ADDR = "127.169.254.254"   # stands in for 169.254.169.254 (cloud metadata)


@dataclass
class Host:
    idx: int
    name: str
    addr: str
    kind: str                     # regular | robots | mirror | jobs | hostile | trap | ratelimit | flaky | metadata | slow
    robots: str = "rules"         # one of ROBOTS_VARIANTS
    template: int = 0             # robots rules template for "rules"/"redirect"/"huge"
    gzip: bool = False
    start: int = 0                # page index range [start, end) in the graph arrays
    end: int = 0
    mirror_of: int = -1           # for mirrors: index of the mirrored host
    forbidden: bool = False
    topic: int = 0


@dataclass
class Response:
    status: int
    headers: list
    body: bytes = b""
    action: "tuple | None" = None   # hostile behaviours the server performs (see server.py)
    page: int = -1


def http_date(t: float) -> str:
    return email.utils.formatdate(t, usegmt=True)


def _u64(*parts) -> int:
    h = hashlib.blake2b(struct.pack(f"<{len(parts)}q", *parts), digest_size=8).digest()
    return int.from_bytes(h, "little")


def _mixed_case(s: str) -> str:
    return "".join(c.upper() if i % 2 == 0 else c for i, c in enumerate(s))


class SimWeb:
    """A generated web. Attributes are read-only after build (except ``port``)."""

    def __init__(self, cfg: SimConfig, seed: int, clock=None, port: int | None = None):
        self.cfg = cfg
        self.seed = int(seed)
        self.clock = clock or RealClock()
        self.port = int(cfg.port if port is None else port)
        self.hosts: list[Host] = []
        self.by_name: dict[str, Host] = {}
        self._render_cache: OrderedDict = OrderedDict()
        self._pools: dict = {}
        self._truth_cache: dict = {}
        self._build()

    # ------------------------------------------------------------------ naming / urls
    def netloc(self, host: str) -> str:
        return host if self.port in (0, 80) else f"{host}:{self.port}"

    def base_url(self, host: str) -> str:
        return f"http://{self.netloc(host)}"

    def url(self, i: int, host: Host | None = None) -> str:
        """Canonical URL of page i (served on ``host``, default its own host)."""
        h = host or self.hosts[self.page_host[i]]
        return self.base_url(h.name) + self.paths[i]

    @property
    def seeds(self) -> list[str]:
        n = self.cfg.seed_hosts or self.cfg.n_hosts
        return [self.url(self.hosts[h].start) for h in range(min(n, self.cfg.n_hosts))]

    @property
    def forbidden_addrs(self) -> list[str]:
        """Addresses a crawler under test must never connect to (stand-ins for private /
        metadata addresses; only present with hostile hosts)."""
        return [h.addr for h in self.hosts if h.forbidden]

    def hostmap_lines(self) -> list[str]:
        port = self.port or 80
        return [f"{h.name}:{port}:{h.addr}" for h in self.hosts]

    # ------------------------------------------------------------------ build
    def _add_host(self, name, kind, **kw) -> Host:
        i = len(self.hosts)
        addr = kw.pop("addr", None) or f"{self.cfg.addr_prefix}.{i // 250}.{i % 250 + 1}"
        h = Host(idx=i, name=name, addr=addr, kind=kind, **kw)
        self.hosts.append(h)
        self.by_name[name] = h
        return h

    def _build(self):
        cfg = self.cfg
        rng = np.random.default_rng([self.seed, 0x51AB])
        pyrng = random.Random(self.seed * 7919 + 13)
        K = max(1, cfg.n_topics)

        # ---- hosts with pages in the graph: regular + robots-variant hosts
        ranks = np.arange(1, cfg.n_hosts + 1, dtype=float)
        w = 1.0 / ranks ** cfg.zipf_s
        sizes = np.maximum(cfg.min_host_pages, np.round(cfg.n_pages * w / w.sum())).astype(int)
        graph_hosts = []
        topics_perm = rng.permutation(max(K, cfg.n_hosts))
        for h in range(cfg.n_hosts):
            variant = "rules"
            if cfg.robots_variant_share > 0 and h >= 3 and rng.random() < cfg.robots_variant_share:
                variant = ROBOTS_VARIANTS[1 + int(rng.integers(len(ROBOTS_VARIANTS) - 1))]
            graph_hosts.append((f"site{h}.{DOMAIN}", "regular", variant, int(sizes[h])))
        if cfg.robots_variant_hosts:
            for v in ROBOTS_VARIANTS[1:]:
                graph_hosts.append((f"robots{v}.{DOMAIN}", "robots", v, 4))
        for gi, (name, kind, variant, size) in enumerate(graph_hosts):
            shared = {"addr": f"{cfg.addr_prefix}.0.1"} if gi < cfg.shared_hosts else {}
            h = self._add_host(name, kind, robots=variant, template=gi % 3,
                               gzip=bool(rng.random() < cfg.gzip_host_share),
                               topic=int(topics_perm[gi % len(topics_perm)] % K), **shared)
            h.size = size
        self.n_graph_hosts = len(self.hosts)

        # ---- pages
        N = sum(h.size for h in self.hosts)
        page_host = np.zeros(N, np.int32)
        kind = np.zeros(N, np.int8)
        topic = np.zeros(N, np.int16)
        depth = np.zeros(N, np.int16)
        parent = np.full(N, -1, np.int64)
        dup_of = np.full(N, -1, np.int64)
        redirect_to = np.full(N, -1, np.int64)
        query_page = np.zeros(N, bool)
        section = np.zeros(N, np.int8)
        paths: list[str] = [""] * N
        start = 0
        u_all = rng.random((N, 6))
        planting = cfg.near_dup_pairs > 0          # exact count, distinct originals
        planted = 0
        is_original = np.zeros(N, bool)
        for h in self.hosts:
            h.start, h.end = start, start + h.size
            html_locals: list[int] = []
            for j in range(h.size):
                i = start + j
                u = u_all[i]
                page_host[i] = h.idx
                topic[i] = h.topic if u[0] < cfg.host_topic_share else int(u[1] * K) % K
                if j == 0:
                    kind[i] = HTML
                    paths[i] = "/"
                    html_locals.append(0)
                    continue
                # parent: a random earlier HTML page, biased to later ones (gives depth)
                p = html_locals[int(len(html_locals) * u[2] ** 0.6)]
                while depth[start + p] >= cfg.max_depth:
                    p = parent[start + p] - start
                parent[i] = start + p
                depth[i] = depth[start + p] + 1
                sec = int(rng.choice(len(SECTIONS), p=SECTION_P)) if depth[i] == 1 \
                    else section[start + p]
                section[i] = sec
                r = u[3]
                if r < cfg.nonhtml_share and j >= 2:
                    kind[i] = [PDF, PDF, JPG, PNG, DOC][int(u[4] * 5)]
                elif r < cfg.nonhtml_share + cfg.redirect_share and j >= 2:
                    kind[i] = REDIRECT
                elif j >= 3 and (planted < cfg.near_dup_pairs if planting else
                                 r < cfg.nonhtml_share + cfg.redirect_share + cfg.near_dup_share):
                    cands = [x for x in html_locals[1:] if dup_of[start + x] < 0
                             and not query_page[start + x] and not is_original[start + x]]
                    kind[i] = HTML
                    if cands:
                        dup_of[i] = start + cands[int(u[4] * len(cands))]
                        topic[i] = topic[dup_of[i]]
                        if planting:
                            is_original[dup_of[i]] = True
                            planted += 1
                else:
                    kind[i] = HTML
                secname = SECTIONS[sec]
                k = kind[i]
                if k == PDF:
                    paths[i] = f"/{secname}/files/report-{j}.pdf"
                elif k == JPG:
                    paths[i] = f"/media/photo-{j}.jpg"
                elif k == PNG:
                    paths[i] = f"/media/figure-{j}.png"
                elif k == DOC:
                    paths[i] = f"/{secname}/files/letter-{j}.doc"
                elif k == REDIRECT:
                    paths[i] = f"/old/{secname}-{j}"
                elif dup_of[i] >= 0:
                    paths[i] = f"/archive/copy/p{j}.html"
                elif u[5] < cfg.query_page_share and j >= 2:
                    query_page[i] = True
                    paths[i] = f"/shop/item.php?cat={j % 5}&id={j}"
                else:
                    sub = "" if depth[i] <= 1 else f"{'abc'[j % 3]}/"
                    paths[i] = f"/{secname}/{sub}p{j}.html"
                if k == HTML and dup_of[i] < 0:
                    html_locals.append(j)
            # redirect targets: a random HTML page of the host that is not a redirect
            for j in range(h.size):
                i = start + j
                if kind[i] == REDIRECT:
                    t = html_locals[int(pyrng.random() * len(html_locals))]
                    redirect_to[i] = start + t
            start += h.size
        self.N = N
        self.page_host, self.kind, self.topic, self.depth = page_host, kind, topic, depth
        self.parent, self.dup_of, self.redirect_to = parent, dup_of, redirect_to
        self.query_page, self.section, self.paths = query_page, section, paths

        # ---- guarantee coverage of every encoding / flag in small webs
        is_html = (kind == HTML) & (dup_of < 0)
        html_idx = np.flatnonzero(is_html)
        # candidates for forced coverage: ordinary pages of regular hosts in sections no robots
        # template disallows, so a crawler from the seeds meets them
        open_secs = {SECTIONS.index(x) for x in ("news", "blog", "docs", "wiki", "forum")}
        nonroot = np.array([i for i in html_idx if paths[i] != "/" and page_host[i] < cfg.n_hosts
                            and section[i] in open_secs], dtype=np.int64)
        enc = rng.choice(len(ENCODINGS), size=N, p=np.array(cfg.encoding_shares) / sum(cfg.encoding_shares))
        enc[kind != HTML] = 0
        enc[dup_of >= 0] = enc[dup_of[dup_of >= 0]]
        for e in range(len(ENCODINGS)):
            if len(nonroot) and not np.any(enc[nonroot] == e):
                enc[nonroot[(e * 7) % len(nonroot)]] = e
        self.encoding = enc.astype(np.int8)
        flags_u = rng.random((N, 3))
        has_child = np.bincount(parent[parent >= 0], minlength=N) > 0
        is_root = np.array([p == "/" for p in paths])
        self.frameset = is_html & has_child & ~is_root & (flags_u[:, 0] < cfg.frameset_share) & ~query_page
        self.base_href = is_html & (flags_u[:, 1] < cfg.base_href_share) & ~self.frameset
        self.refresh = is_html & (flags_u[:, 2] < cfg.refresh_share) & ~self.frameset
        for arr in (self.frameset, self.base_href, self.refresh):
            if len(nonroot) and not arr[nonroot].any():
                cand = [i for i in nonroot if not (self.frameset[i] or self.base_href[i] or self.refresh[i])
                        and not query_page[i] and (has_child[i] or arr is not self.frameset)]
                if cand:
                    arr[cand[len(cand) // 2]] = True
        # force at least one near-dup in small webs
        if cfg.near_dup_share > 0 and not (dup_of >= 0).any():
            pass

        # ---- popularity and change rates
        self.popularity = (rng.pareto(cfg.popularity_alpha, N) + 1.0)
        host_factor = np.exp(rng.normal(0, 1.0, len(self.hosts)))
        rate_day = cfg.base_rate_per_day * host_factor[page_host] * np.exp(rng.normal(0, 0.5, N))
        news = np.array([SECTIONS[s] == "news" for s in section]) & (depth > 0)
        rate_day[news] = cfg.news_rate_per_day * np.exp(rng.normal(0, 0.3, int(news.sum())))
        rate_day[rng.random(N) < cfg.static_share] = 0.0
        rate_day[kind != HTML] = 0.0
        rate_day[dup_of >= 0] = rate_day[dup_of[dup_of >= 0]]
        self.change_rate = rate_day / 86400.0      # changes per second

        # ---- edges
        self._build_edges(rng)
        self._build_special_hosts()

        # ---- routing
        self.routes: list[dict] = [dict() for _ in self.hosts]
        for i in range(N):
            self.routes[page_host[i]][paths[i]] = i
        self.titles = [self._title(i) for i in range(N)]
        self._records = None

    def _build_edges(self, rng):
        cfg = self.cfg
        N = self.N
        kind, page_host, topic = self.kind, self.page_host, self.topic
        src, dst, tag, nof = [], [], [], []
        # tree edges
        children = np.flatnonzero(self.parent >= 0)
        par = self.parent[children]
        order = np.lexsort((children, par))
        children, par = children[order], par[order]
        t_tag = np.full(len(children), TAG_A, np.int8)
        # frameset pages: all their (tree) links are <frame>s
        t_tag[self.frameset[par]] = TAG_FRAME
        src.append(par); dst.append(children); tag.append(t_tag); nof.append(np.zeros(len(children), bool))
        # webring: root of graph host h links to root of h+1
        roots = np.array([h.start for h in self.hosts[:self.n_graph_hosts]], np.int64)
        if len(roots) > 1:
            src.append(roots); dst.append(np.roll(roots, -1))
            tag.append(np.full(len(roots), TAG_A, np.int8)); nof.append(np.zeros(len(roots), bool))
        # extra edges
        can_link = (kind == HTML) & (self.dup_of < 0) & ~self.frameset
        srcs = np.flatnonzero(can_link)
        k = rng.poisson(cfg.mean_extra_links, len(srcs))
        e_src = np.repeat(srcs, k)
        L = len(e_src)
        cross = rng.random(L) < cfg.cross_host_share
        same_topic = rng.random(L) < cfg.topic_homophily
        weight = self.popularity.copy()
        weight[kind == REDIRECT] *= 0.3
        K = max(1, cfg.n_topics)
        H = self.n_graph_hosts
        e_dst = np.empty(L, np.int64)
        # group keys: (host, topic), host, topic, all
        keys = {
            "ht": page_host.astype(np.int64) * K + topic,
            "h": page_host.astype(np.int64),
            "t": topic.astype(np.int64),
            "all": np.zeros(N, np.int64),
        }
        def sample(keyname, want_keys, u):
            key = keys[keyname]
            order = np.argsort(key, kind="stable")
            ks = key[order]
            cw = np.cumsum(weight[order])
            lo = np.searchsorted(ks, want_keys, "left")
            hi = np.searchsorted(ks, want_keys, "right")
            ok = hi > lo
            base = np.where(lo > 0, cw[np.maximum(lo - 1, 0)], 0.0)
            top = cw[np.maximum(hi - 1, 0)]
            x = base + u * (top - base)
            pos = np.searchsorted(cw, x, "right")
            pos = np.clip(pos, lo, np.maximum(hi - 1, lo))
            return np.where(ok, order[np.minimum(pos, N - 1)], -1)
        u = rng.random(L)
        sh = page_host[e_src].astype(np.int64)
        st = topic[e_src].astype(np.int64)
        m = ~cross & same_topic
        e_dst[m] = sample("ht", sh[m] * K + st[m], u[m])
        m2 = ~cross & ~same_topic
        e_dst[m2] = sample("h", sh[m2], u[m2])
        bad = (e_dst < 0) & ~cross
        e_dst[bad] = sample("h", sh[bad], u[bad])
        m3 = cross & same_topic
        e_dst[m3] = sample("t", st[m3], u[m3])
        m4 = cross & ~same_topic
        e_dst[m4] = sample("all", np.zeros(int(m4.sum()), np.int64), u[m4])
        keep = (e_dst >= 0) & (e_dst != e_src)
        e_src, e_dst = e_src[keep], e_dst[keep]
        L = len(e_src)
        r = rng.random(L)
        e_tag = np.where(r < 0.04, TAG_AREA, np.where(r < 0.08, TAG_IFRAME, TAG_A)).astype(np.int8)
        e_nof = (e_tag == TAG_A) & (rng.random(L) < cfg.nofollow_share)
        src.append(e_src); dst.append(e_dst); tag.append(e_tag); nof.append(e_nof)
        # meta refresh: to a random HTML page of the same host
        ref = np.flatnonzero(self.refresh)
        if len(ref):
            rd = []
            for i in ref:
                h = self.hosts[page_host[i]]
                cands = np.flatnonzero((kind[h.start:h.end] == HTML)) + h.start
                cands = cands[cands != i]
                rd.append(cands[_u64(self.seed, int(i), 77) % len(cands)] if len(cands) else h.start)
            src.append(ref); dst.append(np.array(rd, np.int64))
            tag.append(np.full(len(ref), TAG_REFRESH, np.int8)); nof.append(np.zeros(len(ref), bool))
        E_src = np.concatenate(src).astype(np.int64)
        E_dst = np.concatenate(dst).astype(np.int64)
        E_tag = np.concatenate(tag).astype(np.int8)
        E_nof = np.concatenate(nof)
        # style per edge
        Ln = len(E_src)
        same = page_host[E_src] == page_host[E_dst]
        style = rng.choice(len(SAME_HOST_STYLE_P), size=Ln, p=SAME_HOST_STYLE_P).astype(np.int8)
        cs = np.array(CROSS_HOST_STYLES, np.int8)[rng.integers(0, len(CROSS_HOST_STYLES), Ln)]
        style = np.where(same, style, cs).astype(np.int8)
        qrev = self.query_page[E_dst] & (rng.random(Ln) < 0.5)
        # stable order: by src, keeping insertion order
        order = np.argsort(E_src, kind="stable")
        self.e_src, self.e_dst, self.e_tag = E_src[order], E_dst[order], E_tag[order]
        self.e_nof, self.e_style, self.e_qrev = E_nof[order], style[order], qrev[order]
        self.e_ptr = np.searchsorted(self.e_src, np.arange(self.N + 1))
        # make sure every style appears at least once in small webs (rewrite a few edges)
        for s in range(len(STYLE_NAMES)):
            if not np.any(self.e_style == s):
                cand = np.flatnonzero(same[order] & (self.e_tag == TAG_A))
                if len(cand):
                    self.e_style[cand[(s * 13) % len(cand)]] = s

    def _build_special_hosts(self):
        cfg = self.cfg
        H = self.n_graph_hosts
        rng = random.Random(self.seed * 31 + 5)
        # mirrors of mid-sized regular hosts
        regular = [h for h in self.hosts[:cfg.n_hosts]]
        cand = regular[len(regular) // 10:] or regular
        self.mirrors = []
        for m in range(cfg.n_mirrors):
            if not cand:
                break
            src = cand[rng.randrange(len(cand))]
            mh = self._add_host(f"mirror{m}.{DOMAIN}", "mirror", robots=src.robots,
                                template=src.template, gzip=src.gzip, mirror_of=src.idx,
                                topic=src.topic)
            mh.start, mh.end = src.start, src.end
            self.mirrors.append(mh)
        self.jobs = self._add_host(f"jobs.{DOMAIN}", "jobs", robots="404") if cfg.deep_web else None
        self.hostile_hosts = []
        if cfg.hostile:
            for name in ("hostile", "trap", "ratelimit", "flaky"):
                self.hostile_hosts.append(self._add_host(f"{name}.{DOMAIN}", name, robots="404"))
            self.hostile_hosts.append(self._add_host(f"metadata.{DOMAIN}", "metadata", robots="404",
                                                     addr=FORBIDDEN_ADDR, forbidden=True))
            # added last so that the hosts above keep their addresses
            self.hostile_hosts.append(self._add_host(f"slow.{DOMAIN}", "slow", robots="crawldelay"))
        self.template_host = (self._add_host(f"{templatehost.NAME}.{DOMAIN}", "template", robots="404")
                              if cfg.template_pages > 0 else None)   # after all others: same addresses
        from . import documents
        self.documents_host = (self._add_host(f"{documents.NAME}.{DOMAIN}", "documents", robots="404")
                               if cfg.documents else None)            # last: same addresses for the rest
        self.library = (self._add_host(f"library.{DOMAIN}", "library", robots="404")
                        if cfg.library else None)                     # after all others: same addresses
        self._library = None
        from . import scripted
        self.scripted_hosts = ([self._add_host(f"{k}.{DOMAIN}", f"scripted_{k}", robots="scripted")
                                for k in (scripted.APP, scripted.FEED)] if cfg.scripted else [])
        from . import drafthost
        self.draft_host = (self._add_host(f"{drafthost.NAME}.{DOMAIN}", "drafts", robots="404")
                           if cfg.similar_pairs > 0 else None)       # last: every other host keeps its address
        # special links placed on the root page of site0
        self.special_links = []   # (url-path-on-host, host, anchor)
        for mh in self.mirrors:
            self.special_links.append((mh, "/", f"Mirror of {self.hosts[mh.mirror_of].name}"))
        if self.jobs:
            self.special_links.append((self.jobs, "/", "Job search: find jobs by category, industry and city"))
        for hh in self.hostile_hosts:
            if hh.kind == "hostile":
                self.special_links.append((hh, "/", "Hostile test host"))
        if self.template_host:
            self.special_links.append((self.template_host, "/", "The simulated book"))
        if self.draft_host:
            self.special_links.append((self.draft_host, "/", "Drafts of notes"))
        if self.documents_host:
            self.special_links.append((self.documents_host, "/", "Documents of the simulated orchard"))
        if self.library:
            self.special_links.append((self.library, "/", "Library catalogue"))
        for sh in self.scripted_hosts:
            self.special_links.append((sh, "/", f"The {sh.name.split('.')[0]} single-page application"))
        self._hostile_state = {"ratelimit_last": None, "flaky_n": 0}

    # ------------------------------------------------------------------ text
    def _title(self, i: int) -> str:
        if self.kind[i] == REDIRECT:
            return self._title(int(self.redirect_to[i]))
        o = int(self.dup_of[i]) if self.dup_of[i] >= 0 else i
        vocab = words.topic_words(int(self.topic[o]))
        r = random.Random(_u64(self.seed, o, 1))
        ws = [r.choice(vocab) for _ in range(3)]
        h = self.hosts[self.page_host[o]]
        local = o - h.start
        kind = KIND_NAMES[self.kind[o]]
        label = {"pdf": "Report (PDF)", "jpg": "Photo", "png": "Figure", "doc": "Letter (DOC)"}.get(kind)
        t = " ".join(w.capitalize() for w in ws)
        host_tag = h.name.split(".")[0]
        if label:
            return f"{label}: {t} {host_tag}-{local}"
        return f"{t} {host_tag}-{local}"

    def _pool(self, topic: int, enc: str):
        key = (topic, enc)
        pool = self._pools.get(key)
        if pool is None:
            vocab = words.topic_words(topic)
            parts = [(vocab, 0.55)]
            if enc == "gbk":
                parts.append((words.chinese_words(topic), 0.20))
            elif enc == "iso-8859-1":
                parts.append((words.LATIN1, 0.15))
            rest = 1.0 - sum(p for _, p in parts)
            parts.append((words.FILLER, rest))
            population, cum, acc = [], [], 0.0
            for ws, p in parts:
                for w in ws:
                    acc += p / len(ws)
                    population.append(w)
                    cum.append(acc)
            pool = self._pools[key] = (population, cum)
        return pool

    def _text(self, i: int, version: int) -> list[str]:
        """Paragraphs of page i at change version ``version``."""
        r = random.Random(_u64(self.seed, i, version, 2))
        population, cum = self._pool(int(self.topic[i]), ENCODINGS[self.encoding[i]][0])
        paras = []
        lo, hi = self.cfg.paragraphs
        for p in range(lo + int(r.random() * (hi - lo))):
            ws = r.choices(population, cum_weights=cum, k=15 + int(r.random() * 26))
            paras.append(" ".join(ws).capitalize() + ".")
        return paras

    # ------------------------------------------------------------------ change process
    def _block_events(self, i: int, b: int, B: float) -> list[float]:
        h = hashlib.blake2b(struct.pack("<qqq", self.seed, i, b), digest_size=64).digest()
        u = [int.from_bytes(h[k:k + 8], "little") / 2.0 ** 64 for k in range(0, 64, 8)]
        # Poisson(1) by inversion
        n, p, c = 0, math.exp(-1.0), math.exp(-1.0)
        while u[0] > c and n < 7:
            n += 1
            p /= n
            c += p
        return sorted(self.cfg.epoch + B * (b + x) for x in u[1:1 + n])

    def version(self, i: int, t: float) -> tuple[int, float]:
        """(change count key, last-modified time) of page i at time t.

        Changes form a Poisson process of rate ``change_rate[i]`` starting at ``cfg.epoch``;
        time is cut in blocks of 1/rate seconds whose event counts are hashed, so the
        answer is a pure function of (seed, i, t).  Version 0 = never changed.
        """
        o = int(self.dup_of[i]) if self.dup_of[i] >= 0 else i
        lam = float(self.change_rate[o])
        ep = self.cfg.epoch
        if lam <= 0 or t < ep:
            return 0, ep
        B = 1.0 / lam
        b = int((t - ep) // B)
        while b >= 0:
            ev = [x for x in self._block_events(o, b, B) if x <= t]
            if ev:
                return b * 8 + len(ev), ev[-1]
            b -= 1
        return 0, ep

    def change_times(self, i: int, t0: float, t1: float) -> list[float]:
        """All change times of page i in (t0, t1] (for tests)."""
        o = int(self.dup_of[i]) if self.dup_of[i] >= 0 else i
        lam = float(self.change_rate[o])
        ep = self.cfg.epoch
        if lam <= 0 or t1 < ep:
            return []
        B = 1.0 / lam
        out = []
        for b in range(max(0, int((t0 - ep) // B)), int((t1 - ep) // B) + 1):
            out += [x for x in self._block_events(o, b, B) if t0 < x <= t1]
        return out

    # ------------------------------------------------------------------ robots
    def robots_text(self, h: Host) -> str:
        base = self.base_url(h.name)
        t = h.template
        if t == 0:
            body = ("User-agent: *\nDisallow: /private/\nAllow: /private/a/\n"
                    "Disallow: /*.doc$\nCrawl-delay: 0.1\n\n"
                    "User-agent: BadBot\nDisallow: /\n")
        elif t == 1:
            body = ("User-agent: Googlebot\nDisallow: /tmp/\nCrawl-delay: 5\n\n"
                    "User-agent: *\nDisallow: /tmp/\nAllow: /tmp/*.pdf$\n"
                    "Disallow: /shop/*cat=3\n")
        else:
            body = ("User-agent: *\nDisallow: /archive/\nAllow: /archive/copy/\n"
                    "Disallow: /*.png$\n\nUser-agent: SlowBot\nCrawl-delay: 30\nDisallow: /news/\n")
        return f"# robots.txt of {h.name}\n" + body + f"\nSitemap: {base}/sitemap_index.xml\n"

    def robots_response(self, h: Host) -> Response:
        v = h.robots
        if v == "crawldelay":     # slow.simweb.test (hostile only): Crawl-delay 2, /private/ off
            from .hostile import SLOW_ROBOTS
            return Response(200, [("Content-Type", "text/plain")], SLOW_ROBOTS)
        if v == "scripted":       # app/feed.simweb.test (scripted.py): /private/ off
            from .scripted import ROBOTS
            return Response(200, [("Content-Type", "text/plain")], ROBOTS)
        if v == "404":
            return self._simple(404, b"<html><body>no robots here</body></html>")
        if v == "500":
            return self._simple(500, b"<html><body>internal error</body></html>")
        if v == "redirect":
            return Response(301, [("Location", f"{self.base_url(h.name)}/robots-moved.txt"),
                                  ("Content-Type", "text/html")], b"moved")
        if v == "garbage":
            r = random.Random(self.seed + h.idx)
            junk = bytes(r.choice(b"\x00\x01\x02\xfe\xff{}[]<>!@#$%^&()ABCabc \t")
                         for _ in range(2000))
            return Response(200, [("Content-Type", "text/plain")],
                            b"<html><head><title>Oops</title></head><body>" + junk + b"</body></html>")
        if v == "huge":
            return Response(200, [("Content-Type", "text/plain")], self._huge_robots(h))
        return Response(200, [("Content-Type", "text/plain")], self.robots_text(h).encode())

    def _huge_robots(self, h: Host) -> bytes:
        head = self.robots_text(h).encode()
        filler = b"".join(b"# padding line %06d to make this robots.txt larger than 500 KiB\n" % k
                          for k in range(9000))
        return head + filler + b"User-agent: *\nDisallow: /\n"

    def effective_robots(self, h: Host) -> tuple[int, str]:
        """(status, text) a compliant crawler should act on for host h (redirect followed,
        truncated to 500 KiB)."""
        v = h.robots
        if v == "redirect":
            return 200, self.robots_text(h)
        r = self.robots_response(h)
        return r.status, r.body[:ROBOTS_MAX_BYTES].decode("utf-8", "replace")

    # ------------------------------------------------------------------ serving
    def _simple(self, status, body: bytes, ctype="text/html; charset=utf-8") -> Response:
        return Response(status, [("Content-Type", ctype)], body)

    def host_for(self, host_header: str | None, local_addr: str | None) -> Host | None:
        if host_header:
            name = host_header.strip().lower().rstrip(".")
            if name.startswith("["):
                name = name.split("]")[0] + "]"
            elif ":" in name:
                name = name.rsplit(":", 1)[0]
            h = self.by_name.get(name)
            if h:
                return h
        if local_addr:
            for h in self.hosts:
                if h.addr == local_addr:
                    return h
        return None

    def respond(self, host: Host | str, target: str, headers: dict | None = None,
                method: str = "GET", now: float | None = None, body: bytes = b"") -> Response:
        """The response for ``method target`` on ``host``. ``headers`` keys lower-case;
        ``body``: a POST's (only the library answers POST)."""
        if isinstance(host, str):
            host = self.by_name[host.lower()]
        headers = headers or {}
        now = self.clock() if now is None else now
        if host.kind in ("hostile", "trap", "ratelimit", "flaky", "metadata", "slow"):
            from . import hostile
            r = hostile.respond(self, host, target, headers, now)
        elif host.kind == "jobs":
            from . import deepweb
            r = deepweb.respond(self, host, target, headers, now)
        elif host.kind == "template":
            r = templatehost.respond(self, host, target, headers, now)
        elif host.kind == "drafts":
            from . import drafthost
            r = drafthost.respond(self, host, target, headers, now)
        elif host.kind == "documents":
            from . import documents
            r = documents.respond(self, host, target, headers, now)
        elif host.kind == "library":
            from . import library
            r = library.respond(self, host, target, headers, now, method, body)
        elif host.kind.startswith("scripted_"):
            from . import scripted
            r = scripted.respond(self, host, target, headers, now)
        else:
            r = self._respond_graph(host, target, headers, now)
        r.headers.append(("Date", http_date(now)))
        r.headers.append(("Server", "simweb"))
        if host.gzip and r.status == 200 and r.action is None and len(r.body) > 256 \
                and "gzip" in headers.get("accept-encoding", "") \
                and not any(k == "Content-Encoding" for k, _ in r.headers):
            r.body = gzip.compress(r.body, compresslevel=1, mtime=0)
            r.headers.append(("Content-Encoding", "gzip"))
            r.headers.append(("Vary", "Accept-Encoding"))
        return r

    def _respond_graph(self, host: Host, target: str, headers: dict, now: float) -> Response:
        path = target.split("#", 1)[0]
        if "%" in path or "/." in path:
            path = _normalise_target(path)
        if path == "/robots.txt":
            return self.robots_response(host)
        if path == "/robots-moved.txt" and host.robots == "redirect":
            return Response(200, [("Content-Type", "text/plain")], self.robots_text(host).encode())
        if path.startswith("/sitemap"):
            return self._sitemap(host, path, now)
        owner = self.hosts[host.mirror_of] if host.kind == "mirror" else host
        routes = self.routes[owner.idx]
        i = routes.get(path)
        if i is None and "?" in path:
            p, q = path.split("?", 1)
            qs = "&".join(f"{k}={v}" for k, v in sorted(parse_qsl(q, keep_blank_values=True)))
            i = routes.get(f"{p}?{qs}")
        if i is None:
            return self._simple(404, b"<html><head><title>Not found</title></head>"
                                     b"<body><h1>404 Not found</h1></body></html>")
        k = self.kind[i]
        if k == REDIRECT:
            t = int(self.redirect_to[i])
            return Response(301, [("Location", self.url(t, host)),
                                  ("Content-Type", "text/html")],
                            b"<html><body>Moved</body></html>", page=i)
        version, lm = self.version(i, now)
        etag = f'"{i:x}-{version:x}"'
        base_headers = [("ETag", etag), ("Last-Modified", http_date(lm))]
        inm = headers.get("if-none-match")
        ims = headers.get("if-modified-since")
        not_modified = False
        if inm is not None:
            not_modified = etag in [x.strip() for x in inm.split(",")] or inm.strip() == "*"
        elif ims:
            try:
                t_ims = email.utils.parsedate_to_datetime(ims).timestamp()
                not_modified = int(lm) <= t_ims
            except (TypeError, ValueError):
                pass
        if not_modified:
            return Response(304, base_headers, b"", page=i)
        key = (i, host.idx, version, path)
        hit = self._render_cache.get(key)
        if hit is None:
            hit = self._render(i, host, version, lm, path)
            self._render_cache[key] = hit
            if len(self._render_cache) > 20000:
                self._render_cache.popitem(last=False)
        else:
            self._render_cache.move_to_end(key)
        ctype, body = hit
        return Response(200, [("Content-Type", ctype)] + base_headers, body, page=i)

    # ------------------------------------------------------------------ rendering
    def href(self, src: int, serving: Host, dst: int, style: int, qrev: bool,
             base_dir: str) -> str:
        """How page ``src`` (served on ``serving``) writes its link to ``dst``."""
        dh = self.hosts[self.page_host[dst]]
        same = dh.idx == self.page_host[src]
        dhost = serving if same else dh
        p = self.paths[dst]
        if qrev and "?" in p:
            a, q = p.split("?", 1)
            p = a + "?" + "&".join(reversed(q.split("&")))
        net = self.netloc(dhost.name)
        if style == ST_ABS:
            return f"http://{net}{p}"
        if style == ST_ABS_MIXED:
            return f"HTTP://{_mixed_case(dhost.name)}{net[len(dhost.name):]}{p}"
        if style == ST_PROTO:
            return f"//{net}{p}"
        if style == ST_FRAG:
            return (p if same else f"http://{net}{p}") + f"#part-{dst % 7}"
        if not same:
            return f"http://{net}{p}"
        if style == ST_ROOT:
            return p
        if style == ST_DOT:
            return "/x/.." + p if p != "/" else "/x/../"
        if style == ST_PCT:
            if len(p) > 1 and p[1].isalpha():
                return "/%" + f"{ord(p[1]):02X}" + p[2:]
            return p
        # relative to base_dir
        path, _, q = p.partition("?")
        rel = posixpath.relpath(path, base_dir) if path != "/" or base_dir != "/" else "."
        if path.endswith("/") and rel != ".":
            rel += "/"
        if rel == ".":
            rel = "./"
        return rel + ("?" + q if q else "")

    def outlinks(self, i: int) -> range:
        return range(int(self.e_ptr[i]), int(self.e_ptr[i + 1]))

    def _render(self, i: int, serving: Host, version: int, lm: float, req_path: str):
        k = self.kind[i]
        if k != HTML:
            return CONTENT_TYPES[k], _binary_doc(self, i)
        o = int(self.dup_of[i]) if self.dup_of[i] >= 0 else i
        codec, hdr_cs, meta_cs = ENCODINGS[self.encoding[i]]
        title = self.titles[i]
        own_path = self.paths[i]
        page_dir = posixpath.dirname(own_path.split("?")[0]) or "/"
        base_dir = page_dir
        head = []
        if meta_cs:
            head.append(f'<meta charset="{meta_cs}">')
        head.append(f"<title>{html.escape(title)}</title>")
        if self.base_href[i]:
            base_dir = "/" + SECTIONS[(self.section[i] + 1) % len(SECTIONS)] + "/b"
            head.append(f'<base href="http://{self.netloc(serving.name)}{base_dir}/">')
        canon_host = serving if serving.kind != "mirror" else self.hosts[serving.mirror_of]
        if self.query_page[i]:
            head.append(f'<link rel="canonical" href="http://{self.netloc(canon_host.name)}'
                        f'{html.escape(own_path)}">')
        elif i % 9 == 0:
            head.append(f'<link rel="canonical" href="http://{_mixed_case(self.netloc(canon_host.name))}{own_path}">')
        links_a, links_area, links_if, links_frame = [], [], [], []
        a_, b_ = int(self.e_ptr[o]), int(self.e_ptr[o + 1])
        titles = self.titles
        for d, style, qrev, t, nof in zip(self.e_dst[a_:b_].tolist(), self.e_style[a_:b_].tolist(),
                                          self.e_qrev[a_:b_].tolist(), self.e_tag[a_:b_].tolist(),
                                          self.e_nof[a_:b_].tolist()):
            href = self.href(i, serving, d, style, qrev, base_dir)
            if "&" in href:
                href = href.replace("&", "&amp;")
            anchor = titles[d]   # titles are made of plain words: nothing to escape
            if t == TAG_REFRESH:
                head.append(f'<meta http-equiv="refresh" content="30; url={href}">')
            elif t == TAG_AREA:
                links_area.append(f'<area shape="rect" coords="0,0,10,10" href="{href}" alt="{anchor}">')
            elif t == TAG_IFRAME:
                links_if.append(f'<iframe src="{href}" title="{anchor}"></iframe>')
            elif t == TAG_FRAME:
                links_frame.append(f'<frame src="{href}" title="{anchor}">')
            else:
                rel = ' rel="nofollow"' if nof else ""
                links_a.append(f'<li><a href="{href}"{rel}>{anchor}</a></li>')
        if self.paths[i] == "/" and serving.idx == 0:
            for sh, p, anchor in self.special_links:
                links_a.append(f'<li><a href="http://{self.netloc(sh.name)}{p}">{html.escape(anchor)}</a></li>')
        paras = self._text(o, version)
        if o != i:  # near-duplicate: same text with a small edit
            paras = paras[:]
            paras[0] = "Archived copy. " + paras[0]
            ws = paras[-1].split(" ")
            ws[len(ws) // 2] = "edited"
            paras[-1] = " ".join(ws)
        body = [f"<h1>{html.escape(title)}</h1>",
                f'<p class="meta">Topic: {words.topic_name(int(self.topic[i]))}. '
                f"Updated {http_date(lm)}.</p>"]
        body += [f"<p>{html.escape(p)}</p>" for p in paras]
        if links_a:
            body.append("<h2>Related</h2><ul>" + "".join(links_a) + "</ul>")
        if links_area:
            body.append('<img src="/media/map.gif" usemap="#nav" alt="navigation map">'
                        '<map name="nav">' + "".join(links_area) + "</map>")
        body += links_if
        top = "#top" if not self.base_href[i] else html.escape(own_path, quote=True) + "#top"
        body.append(f'<p class="footer"><a href="{top}">Top</a> | '
                    '<a href="javascript:window.print()">Print</a> | '
                    f'<a href="mailto:webmaster@{serving.name}">Contact</a></p>')
        head_s = "".join(head)
        if self.frameset[o]:
            # <noframes> is raw text to HTML parsers: text only, no links
            cols = ",".join(["*"] * max(1, len(links_frame)))
            doc = (f"<!DOCTYPE html><html><head>{head_s}</head>"
                   f'<frameset cols="{cols}">{"".join(links_frame)}'
                   f"<noframes>{html.escape(' '.join(paras))}</noframes></frameset></html>")
        else:
            doc = (f'<!DOCTYPE html><html lang="en"><head>{head_s}</head>'
                   f'<body><a name="top"></a>{"".join(body)}</body></html>')
        ctype = "text/html" + (f"; charset={hdr_cs}" if hdr_cs else "")
        return ctype, doc.encode(codec, errors="xmlcharrefreplace")

    def _sitemap(self, host: Host, path: str, now: float) -> Response:
        owner = self.hosts[host.mirror_of] if host.kind == "mirror" else host
        base = self.base_url(host.name)
        if path == "/sitemap_index.xml":
            parts = [f"<sitemap><loc>{base}/sitemap-{n}.xml{'.gz' if n == 2 else ''}</loc>"
                     f"<lastmod>{_w3c(now)}</lastmod></sitemap>" for n in (1, 2)]
            xml = ('<?xml version="1.0" encoding="UTF-8"?>\n<sitemapindex xmlns='
                   '"http://www.sitemaps.org/schemas/sitemap/0.9">' + "".join(parts) + "</sitemapindex>")
            return Response(200, [("Content-Type", "application/xml")], xml.encode())
        if path not in ("/sitemap-1.xml", "/sitemap-2.xml.gz"):
            return self._simple(404, b"not found")
        n = 1 if path == "/sitemap-1.xml" else 2
        urls = []
        for i in range(owner.start, owner.end):
            if self.kind[i] == REDIRECT or (i % 2) != (n - 1):
                continue
            _, lm = self.version(i, now)
            urls.append(f"<url><loc>{html.escape(base + self.paths[i])}</loc>"
                        f"<lastmod>{_w3c(lm)}</lastmod></url>")
        xml = ('<?xml version="1.0" encoding="UTF-8"?>\n<urlset xmlns='
               '"http://www.sitemaps.org/schemas/sitemap/0.9">' + "".join(urls) + "</urlset>").encode()
        if n == 2:
            return Response(200, [("Content-Type", "application/gzip")],
                            gzip.compress(xml, mtime=0))
        return Response(200, [("Content-Type", "application/xml")], xml)

    # ------------------------------------------------------------------ ground truth
    def ground_truth(self) -> dict:
        key = self.port
        if key not in self._truth_cache:
            from .truth import ground_truth
            self._truth_cache = {key: ground_truth(self)}
        return self._truth_cache[key]

    def export(self, out_dir) -> list:
        from .truth import export
        return export(self, out_dir)

    @property
    def records(self):
        if self._records is None:
            from .deepweb import make_records
            self._records = make_records(self)
        return self._records


_UNRESERVED = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")


def _normalise_target(target: str) -> str:
    """Decode percent-encoded unreserved characters and resolve dot segments of a request
    target, as a real server would before routing."""
    import re
    path, sep, query = target.partition("?")

    def rep(m):
        c = chr(int(m.group(1), 16))
        return c if c in _UNRESERVED else "%" + m.group(1).upper()
    path = re.sub(r"%([0-9A-Fa-f]{2})", rep, path)
    segs = []
    for seg in path.split("/")[1:]:
        if seg == "..":
            if segs:
                segs.pop()
        elif seg != ".":
            segs.append(seg)
    if path.endswith(("/..", "/.")):
        segs.append("")
    return "/" + "/".join(segs) + sep + query


def _w3c(t: float) -> str:
    import datetime as _dt
    return _dt.datetime.fromtimestamp(int(t), _dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S+00:00")


_IMG_CACHE: dict = {}


def _binary_doc(web: SimWeb, i: int) -> bytes:
    k = web.kind[i]
    title = web.titles[i]
    if k == PDF:
        text = title.encode("ascii", "replace")
        stream = b"BT /F1 12 Tf 72 720 Td (" + text + b") Tj ET"
        objs = [b"<< /Type /Catalog /Pages 2 0 R >>",
                b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
                b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R "
                b"/Resources << /Font << /F1 5 0 R >> >> >>",
                b"<< /Length %d >>\nstream\n" % len(stream) + stream + b"\nendstream",
                b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>"]
        out = io.BytesIO()
        out.write(b"%PDF-1.4\n")
        offs = []
        for n, o in enumerate(objs, 1):
            offs.append(out.tell())
            out.write(b"%d 0 obj\n" % n + o + b"\nendobj\n")
        x = out.tell()
        out.write(b"xref\n0 %d\n0000000000 65535 f \n" % (len(objs) + 1))
        for o in offs:
            out.write(b"%010d 00000 n \n" % o)
        out.write(b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objs) + 1, x))
        return out.getvalue()
    if k in (JPG, PNG):
        from PIL import Image
        c = _u64(web.seed, i, 3)
        img = Image.new("RGB", (16, 16), (c & 255, (c >> 8) & 255, (c >> 16) & 255))
        img.putpixel((c % 16, (c >> 4) % 16), (255, 255, 255))
        buf = io.BytesIO()
        img.save(buf, "JPEG" if k == JPG else "PNG", **({"quality": 80} if k == JPG else {}))
        return buf.getvalue()
    if k == DOC:
        return (b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + b"\x00" * 24 +
                ("Word document: " + title).encode("utf-16-le") + b"\x00" * 64)
    return b""


def build_web(config="small", seed: int = 1, clock=None, port: int | None = None,
              hostile: bool | None = None, **overrides) -> SimWeb:
    """Build the deterministic model of a simulated web (no sockets).

    ``config``: preset name (small, medium, large, hostile), JSON file path, dict or SimConfig.
    ``hostile=True`` switches the hostile hosts on. ``port`` fixes the port used in URLs
    (default: the config's; 0 means "not chosen yet": URLs carry no port until a server
    binds one and sets ``web.port``).
    """
    cfg = load_config(config, hostile=hostile, **overrides)
    return SimWeb(cfg, seed, clock=clock, port=port)
