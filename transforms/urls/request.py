"""A request's identity: URL, method and body (pure; deep-web POST submissions).

A GET is its canonical URL: its fingerprint is `canonical.fingerprint(url)`, unchanged. A
POST (a form submitted with `--deep_web_post_hosts`) is the URL *and* its form-encoded body:
two POSTs to one URL with different bodies are two requests, so its fingerprint hashes
method, URL and body, and never equals a GET's (the text hashed starts with "POST ", a
canonical URL with "http"). The deep-web planner names a request by its *key*: the URL for
a GET, ``"POST <url> <body>"`` for a POST (a canonical URL and a form-encoded body hold no
space, so the key splits back unambiguously).
"""
from __future__ import annotations

from hashlib import blake2b
from typing import Sequence

import numpy as np

from strategies.deepweb.templates import POST, request_key, split_key  # noqa: F401 (re-exported)
from transforms.urls.canonical import fingerprint

FORM_ENCODED = "application/x-www-form-urlencoded"


def is_post(method) -> bool:
    return (method or "").upper() == POST


def request_fingerprint(url: str, method: str | None = None, body: str | None = None) -> int:
    """Signed 64-bit fingerprint of a request: the URL's for a GET (method None or GET)."""
    if not is_post(method):
        return fingerprint(url)
    text = f"{POST} {url}\n{body or ''}"
    return int.from_bytes(blake2b(text.encode("utf-8", "surrogatepass"), digest_size=8).digest(),
                          "little", signed=True)


def request_fingerprints(urls: Sequence[str], methods: Sequence, bodies: Sequence) -> np.ndarray:
    """int64 array of `request_fingerprint` per (url, method, body)."""
    return np.array([request_fingerprint(u, m, b) for u, m, b in zip(urls, methods, bodies)],
                    dtype=np.int64)


def key_fingerprint(key: str) -> int:
    return request_fingerprint(*split_key(key))
