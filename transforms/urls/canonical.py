"""URL canonicalisation, resolution and fingerprints (pure functions, no Beam).

Every URL that enters crawl state goes through `normalize` (seeds, redirects) or `resolve`
(links found in pages), so two spellings of one resource get one fingerprint.

Parsing is WHATWG URL parsing (what browsers do), by ada (`ada-url`), called through the
cffi binding of its C API that the package itself is built on (``ada_url._ada_wrapper``):
one parse per URL, no Python URL objects, the canonical form cut from ada's serialisation.
For links in pages use `classify_many` (one call per page, reasons for dropped links) and
`encode_query` (legacy-encoded pages). On top of the WHATWG serialisation, the canonical
form is stricter (all deliberate, all idempotent):

- only http and https URLs are kept; anything else is None;
- the fragment is dropped (it never reaches the server);
- userinfo (``user:pass@``) is dropped: credentials must not be stored in crawl tables or
  replayed to servers, and ``http://u@h/`` is the same resource as ``http://h/`` in practice;
- an empty query (a bare ``?``) is dropped;
- percent-escapes in path and query get upper-case hex, and escapes of unreserved characters
  (``A-Z a-z 0-9 - . _ ~``, RFC 3986 section 6.2.2.2) are decoded: ``%7e`` -> ``~``,
  ``%2f`` -> ``%2F``. Reserved characters stay encoded; a ``%`` not followed by two hex
  digits is left as it is (as browsers send it).

What WHATWG already gives: lower-case scheme and host, IDNA (UTS #46) to punycode,
IPv4/IPv6 canonical forms, default port dropped, ``.``/``..`` segments removed (including
``%2e`` forms), backslashes as slashes for http(s), empty path -> ``/``, characters outside
the path/query percent-encode sets encoded, leading/trailing C0+space and embedded tab/CR/LF
stripped. The query is kept byte for byte otherwise (parameter order kept, nothing sorted or
removed). A host's trailing dot (``example.com.``) is kept, as WHATWG does.
"""
from __future__ import annotations

import re
from hashlib import blake2b
from typing import Iterable, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from ada_url._ada_wrapper import ffi as _ffi
from ada_url._ada_wrapper import lib as _lib

__all__ = [
    "normalize", "resolve", "resolve_many", "classify", "classify_many", "encode_query",
    "fingerprint", "fingerprints", "host_key", "host_keys", "idna_ascii",
]

# --------------------------------------------------------------------------------------
# ada C API, bound once (attribute lookups on cffi's lib are not free).
_parse = _lib.ada_parse
_parse_with_base = _lib.ada_parse_with_base
_is_valid = _lib.ada_is_valid
_free = _lib.ada_free
_get_href = _lib.ada_get_href
_unpack = _ffi.unpack

# %xx -> replacement, for every case spelling of every byte.
_UNRESERVED = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")
_PCT: dict[str, str] = {}
for _b in range(256):
    _rep = chr(_b) if _b in _UNRESERVED else "%%%02X" % _b
    _hx = "%02x" % _b
    for _k in {_hx, _hx.upper(), _hx[0].upper() + _hx[1], _hx[0] + _hx[1].upper()}:
        _PCT[_k] = _rep
del _b, _rep, _hx, _k


_HEX = frozenset("0123456789abcdefABCDEF")


def _fix_percent(s: str) -> str:
    """Upper-case percent-escapes and decode unreserved ones (caller checked '%' in s).

    An escape that decodes to a hex digit is kept (upper-cased) within the two characters
    after a bare '%' (one that starts no valid escape): '%%30a' is '%', '0', 'a' to a server,
    decoded to '%0a' it would read as a line feed, and normalising again would change it."""
    parts = s.split("%")
    out = [parts[0]]
    pct = _PCT
    after_bare = None   # what follows the last bare '%' while it could still start an escape
    for p in parts[1:]:
        rep = pct.get(p[:2])
        if rep is None:
            out.append("%")
            out.append(p)
            after_bare = p if len(p) < 2 and set(p) <= _HEX else None
            continue
        if after_bare is not None and rep in _HEX:
            rep = "%" + p[:2].upper()
        out.append(rep)
        out.append(p[2:])
        after_bare = None
    return "".join(out)


def _href(b: bytes, bb: bytes | None) -> str | None:
    """WHATWG href of `b` (resolved against base `bb` if given), or None if unparseable.
    If parsing against the base fails (e.g. the base itself is invalid), `b` is parsed on
    its own, so absolute links still resolve."""
    if bb is None:
        u = _parse(b, len(b))
    else:
        u = _parse_with_base(b, len(b), bb, len(bb))
        if not _is_valid(u):
            _free(u)
            u = _parse(b, len(b))
    if not _is_valid(u):
        _free(u)
        return None
    s = _get_href(u)
    href = _unpack(s.data, s.length)
    _free(u)
    return href.decode("utf-8", "replace")  # WHATWG serialisations are ASCII


def _canon(href: str) -> str | None:
    """Canonical form of a WHATWG-serialised href, or None if it is not http(s).

    Works on the serialisation alone: in it '#' only starts the fragment, the first '?'
    after the path start only starts the query, '@' in the authority only ends userinfo
    (all other occurrences are percent-encoded), and the path starts with '/'."""
    if href.startswith("http://"):
        a = 7
    elif href.startswith("https://"):
        a = 8
    else:
        return None
    if "#" not in href and "%" not in href and "@" not in href and href[-1] != "?":
        return href  # already canonical: the common case
    slash = href.find("/", a)
    end = href.find("#", slash)
    if end < 0:
        end = len(href)
    if href.find("?", slash, end) == end - 1:
        end -= 1  # bare '?': empty query dropped
    auth = href[a:slash]
    at = auth.rfind("@")
    if at >= 0:
        auth = auth[at + 1:]  # userinfo dropped
    rest = href[slash:end]
    if "%" in rest:
        rest = _fix_percent(rest)
    return href[:a] + auth + rest


def _reason(href: str | None) -> str:
    """Drop reason of a link whose href is not http(s)."""
    if href is None:
        return "invalid"
    if href.startswith("javascript:"):
        return "javascript"
    if href.startswith("mailto:"):
        return "mailto"
    return "other_scheme"


def normalize(url: str) -> str | None:
    """Canonical form of an absolute URL, or None if it is not http(s) or not parseable.

    See the module docstring for the rules. Idempotent: ``normalize(normalize(u)) ==
    normalize(u)``.
    """
    try:
        b = _encode(url)
    except AttributeError:  # not a str
        return None
    href = _href(b, None)
    return None if href is None else _canon(href)


def _encode(s: str) -> bytes:
    try:
        return s.encode("utf-8")
    except UnicodeEncodeError:  # lone surrogates -> U+FFFD, as a browser's USVString does
        return s.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace").encode("utf-8")


def classify(base: str | bytes, href: str) -> tuple[str | None, str | None]:
    """(canonical URL, None) for a link resolving to http(s), else (None, reason) with reason
    one of 'javascript', 'mailto', 'other_scheme', 'invalid'. `base` may be pre-encoded bytes."""
    if type(base) is str:
        base = _encode(base)
    h = _href(_encode(href), base)
    c = None if h is None else _canon(h)
    return (c, None) if c is not None else (None, _reason(h))


def classify_many(base: str | bytes, hrefs: Sequence[str]) -> list[tuple[str | None, str | None]]:
    """[classify(base, h) for h in hrefs], with the base encoded once, each distinct href
    resolved once (a page repeats its links: nav, related lists, image maps) and a tight
    loop."""
    if type(base) is str:
        base = _encode(base)
    nb = len(base)
    out = []
    append = out.append
    done: dict = {}
    parse_with_base, parse, is_valid, free, get_href, unpack = (
        _parse_with_base, _parse, _is_valid, _free, _get_href, _unpack)
    for h in hrefs:
        r = done.get(h)
        if r is not None:
            append(r)
            continue
        try:
            b = h.encode("utf-8")
        except UnicodeEncodeError:
            b = _encode(h)
        u = parse_with_base(b, len(b), base, nb)
        if not is_valid(u):
            free(u)
            u = parse(b, len(b))
            if not is_valid(u):
                free(u)
                r = done[h] = (None, "invalid")
                append(r)
                continue
        s = get_href(u)
        href = unpack(s.data, s.length).decode("utf-8", "replace")
        free(u)
        if (href.startswith("http://") or href.startswith("https://")) and "#" not in href \
                and "%" not in href and "@" not in href and href[-1] != "?":
            r = (href, None)   # already canonical: _canon's common case, inline
        else:
            c = _canon(href)
            r = (c, None) if c is not None else (None, _reason(href))
        done[h] = r
        append(r)
    return out


_UTF_CODECS = frozenset(["utf-8", "utf-16", "utf-16-le", "utf-16-be", "utf-32", "utf-32-le",
                         "utf-32-be", "utf_8", "utf8", ""])


def encode_query(href: str, codec: str | None) -> str:
    """`href` with the non-ASCII characters of its query percent-encoded in the document's
    encoding `codec`, as browsers do for links in legacy-encoded (GBK, Shift_JIS, cp1252
    ...) pages before WHATWG parsing; characters the codec cannot encode become the
    percent-encoded numeric character reference (``%26%23NNNN%3B``). The path is always
    UTF-8, so ASCII hrefs, hrefs without a query, and UTF-8/16 documents are unchanged.
    """
    if href.isascii() or not codec or codec.lower() in _UTF_CODECS:
        return href
    q = href.find("?")
    if q < 0:
        return href
    f = href.find("#")
    if 0 <= f < q:
        return href
    end = f if f >= 0 else len(href)
    query = href[q + 1:end]
    if query.isascii():
        return href
    out = []
    for ch in query:
        if ch < "\x80":
            out.append(ch)
            continue
        try:
            out.append("".join(["%%%02X" % b for b in ch.encode(codec)]))
        except (UnicodeEncodeError, LookupError):
            out.append("%%26%%23%d%%3B" % ord(ch))
    return href[:q + 1] + "".join(out) + href[end:]


def resolve(base: str, href: str) -> str | None:
    """`href` resolved against `base` as a browser does (WHATWG), then normalize()d.

    None for non-http(s) results (javascript:, mailto:, data:, tel:, ...) or unparseable
    input. Leading/trailing C0 controls and spaces and embedded tab/CR/LF are stripped, as
    browsers do. If `base` is not a valid URL, only absolute hrefs resolve.
    """
    h = _href(_encode(href), _encode(base))
    return None if h is None else _canon(h)


def resolve_many(base: str, hrefs: Iterable[str]) -> list[str | None]:
    """[resolve(base, h) for h in hrefs], with the base encoded once."""
    return [c for c, _ in classify_many(base, list(hrefs))]


# --------------------------------------------------------------------------------------
def fingerprint(canonical_url: str) -> int:
    """Signed 64-bit fingerprint: blake2b(digest_size=8) of the UTF-8 URL, little-endian."""
    return int.from_bytes(
        blake2b(canonical_url.encode("utf-8", "surrogatepass"), digest_size=8).digest(),
        "little", signed=True)


def fingerprints(urls: Sequence[str]) -> np.ndarray:
    """int64 array: fingerprint() of each URL, in order (a pyarrow string array works too)."""
    if hasattr(urls, "to_pylist"):
        urls = urls.to_pylist()
    digests = b"".join([blake2b(u.encode("utf-8", "surrogatepass"), digest_size=8).digest()
                        for u in urls])
    return np.frombuffer(digests, dtype="<i8").astype(np.int64, copy=False)


_DEFAULT_PORT_SUFFIX = {7: ":80", 8: ":443"}
# What a canonical authority looks like (lower-case domain/IPv4 or IPv6 literal, optional
# port without leading zeros); anything else goes through normalize().
_CANON_AUTHORITY_PATTERN = r"(?:[a-z0-9\-._~!$&'()*+,;=]+|\[[0-9a-f:.]+\])(?::[1-9][0-9]{0,4})?"
_CANON_AUTHORITY = re.compile(_CANON_AUTHORITY_PATTERN).fullmatch


# host_key's fast path for a whole array, in RE2 (Arrow's regex engine): scheme and the
# authority up to the first '/', then the same canonical-authority test
_SCHEME_AUTHORITY = r"^(?P<scheme>https?)://(?P<authority>[^/]+)/"
_CANON_AUTHORITY_RE2 = f"^(?:{_CANON_AUTHORITY_PATTERN})$"


def host_keys(urls) -> pa.Array:
    """`host_key` of each URL (a list of str or an Arrow string array) as an Arrow string
    array. Canonical authorities (nearly every link of a crawl) are cut out by Arrow's C++
    regex kernels over the whole array; only the others go through `host_key` one by one
    (cProfile of building a bench50k round's candidate tables: a third of it was this one
    Python call per link)."""
    arr = urls if isinstance(urls, (pa.Array, pa.ChunkedArray)) else pa.array(urls, pa.string())
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    if len(arr) == 0:
        return pa.array([], pa.string())
    parts = pc.extract_regex(arr, _SCHEME_AUTHORITY)
    scheme, authority = parts.field("scheme"), parts.field("authority")
    default_port = pc.or_kleene(
        pc.and_kleene(pc.equal(scheme, "http"), pc.ends_with(authority, ":80")),
        pc.and_kleene(pc.equal(scheme, "https"), pc.ends_with(authority, ":443")))
    fast = pc.and_kleene(pc.match_substring_regex(authority, _CANON_AUTHORITY_RE2), pc.invert(default_port))
    fast = pc.fill_null(fast, False)
    if pc.all(fast).as_py():
        return authority
    slow = np.flatnonzero(~fast.to_numpy(zero_copy_only=False))
    keys = authority.to_pylist()
    for i, url in zip(slow.tolist(), arr.take(pa.array(slow)).to_pylist()):
        keys[i] = host_key(url)
    return pa.array(keys, pa.string())


def host_key(canonical_url: str) -> str:
    """Politeness key of a canonical URL: lower-case host name, plus ':port' when the port
    is not the scheme default (the canonical form has already dropped a default port).

    Meant for canonical URLs (a string slice then). An authority that is visibly not
    canonical (upper case, userinfo, default port, ...) is normalized first; '' if the URL
    is not http(s).
    """
    if canonical_url.startswith("https://"):
        start = 8
    elif canonical_url.startswith("http://"):
        start = 7
    else:
        start = -1
    if start > 0:
        end = canonical_url.find("/", start)
        if end > start:
            hk = canonical_url[start:end]
            if _CANON_AUTHORITY(hk) and not hk.endswith(_DEFAULT_PORT_SUFFIX[start]):
                return hk
    n = normalize(canonical_url)
    if n is None:
        return ""
    start = 8 if n[4] == "s" else 7
    return n[start:n.index("/", start)]


def idna_ascii(h: str) -> str:
    """A host name in IDNA ASCII form (punycode), or `h` itself if it has none."""
    b = h.encode("utf-8")
    s = _lib.ada_idna_to_ascii(b, len(b))
    try:
        out = _unpack(s.data, s.length).decode("ascii")
    finally:
        _lib.ada_free_owned_string(s)
    return out or h
