"""A deterministic 64-bit mixer, the same in every process (no salted `hash()`)."""
import hashlib

import numpy as np


def splitmix64(x: np.ndarray) -> np.ndarray:
    """Vectorised splitmix64 finaliser on uint64 (a well-mixed deterministic hash)."""
    with np.errstate(over="ignore"):
        z = np.asarray(x).astype(np.uint64) + np.uint64(0x9E3779B97F4A7C15)
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        return z ^ (z >> np.uint64(31))


def text_hash64(texts) -> np.ndarray:
    """64-bit hashes (uint64) of strings, the same on every worker and in every Python
    process (blake2b, unlike the per-process salted `hash()`), mixed once more by splitmix64."""
    raw = np.fromiter((int.from_bytes(hashlib.blake2b(t.encode("utf-8"), digest_size=8).digest(),
                                      "little") for t in texts), dtype=np.uint64)
    return splitmix64(raw)
