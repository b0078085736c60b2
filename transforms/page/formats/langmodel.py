"""py3langid's model as memory-mapped arrays: loaded in a millisecond, shared by processes.

py3langid keeps its model xz-compressed and, in every process that detects a language, spends
~0.4 s of CPU decompressing it and ~70 MB of private memory holding it — every round process
and every page worker, every round. Here the same arrays are written once, uncompressed, to a
cache directory and mapped read-only, then handed to py3langid's own `LanguageIdentifier`
(its public constructor), so classification is py3langid's code on py3langid's numbers: only
the pages the DFA walk and the feature table touch are read, from the page cache every
process shares.

The cache is keyed by py3langid's version and its model file's size and mtime; it is
written to a private temporary directory and renamed into place, so concurrent builders
never see a partial cache. `BEAMCRAWL_CACHE` (else `$XDG_CACHE_HOME/beamcrawl`, else
`~/.cache/beamcrawl`) names the directory. When it cannot be written or read, py3langid
loads its model the usual way (one warning): slower, same answers.
"""
from __future__ import annotations

import functools
import hashlib
import json
import logging
import os
import shutil
import tempfile
from pathlib import Path

import numpy as np

log = logging.getLogger(__name__)

LAYOUT = 1          # bump when the files written below change
ARRAYS = ("ptc", "pc", "nextmove", "row", "out")


def cache_root() -> Path:
    env = os.environ.get("BEAMCRAWL_CACHE")
    if env:
        return Path(env)
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg) if xdg else Path.home() / ".cache") / "beamcrawl"


def _model_file() -> Path:
    from py3langid import langid
    return Path(langid.MODEL_DIR) / langid.MODEL_FILE


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version
    try:
        return version("py3langid")
    except PackageNotFoundError:      # pragma: no cover - vendored copies
        return "unknown"


def cache_dir(root: Path | None = None) -> Path:
    """The directory for the installed py3langid's model (version + model file identity)."""
    model = _model_file()
    st = model.stat()
    key = hashlib.sha1(f"{LAYOUT}|{_version()}|{model}|{st.st_size}|{st.st_mtime_ns}".encode()).hexdigest()[:16]
    return (root or cache_root()) / f"py3langid-{key}"


def build(target: Path) -> Path:
    """Decompress py3langid's model into `target` (.npy per array + classes.json), atomically."""
    from py3langid.modelio import load_model
    ptc, pc, classes, nextmove, row, out = load_model(_model_file())
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}-", dir=target.parent))
    try:
        arrays = {"ptc": np.ascontiguousarray(ptc), "pc": np.ascontiguousarray(pc),
                  "nextmove": np.frombuffer(nextmove, dtype=np.dtype(nextmove.typecode)),
                  "row": np.frombuffer(row, dtype=np.dtype(row.typecode)),
                  "out": np.asarray(out, dtype=np.int32)}
        for name, arr in arrays.items():
            np.save(tmp / f"{name}.npy", arr, allow_pickle=False)
        (tmp / "classes.json").write_text(json.dumps(list(classes)))
        try:
            os.rename(tmp, target)
        except OSError:
            if not (target / "classes.json").exists():    # not a concurrent builder's win
                raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return target


def open_identifier(directory: Path):
    """py3langid's LanguageIdentifier over the memory-mapped arrays in `directory`."""
    from py3langid.langid import LanguageIdentifier
    a = {name: np.load(directory / f"{name}.npy", mmap_mode="r", allow_pickle=False) for name in ARRAYS}
    classes = json.loads((directory / "classes.json").read_text())
    # memoryviews index to plain ints, as the stdlib arrays py3langid builds itself do
    return LanguageIdentifier(a["ptc"], np.asarray(a["pc"]), classes, memoryview(a["nextmove"]),
                              memoryview(a["out"]), tk_row=memoryview(a["row"]))


@functools.lru_cache(maxsize=1)
def classifier():
    """`text -> (language, score)`: the mapped model, or py3langid's own loading if the cache
    cannot be used. One per process (lazily: most processes never detect a language)."""
    try:
        d = cache_dir()
        if not (d / "classes.json").exists():
            build(d)
        return open_identifier(d).classify
    except Exception as e:   # noqa: BLE001 - any cache trouble: py3langid's own loading, same answers
        log.warning("py3langid model cache unusable (%s); loading the compressed model in this process", e)
        import py3langid
        return py3langid.classify
