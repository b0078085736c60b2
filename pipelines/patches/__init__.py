"""The patches of Beam's internals a round runs with: each one module, each guarded and scoped.

A patch here changes how Beam builds or runs a round's pipeline in this process, never what
a stage computes: each was kept because it paid at least 3 % of the wall time, CPU or peak
memory of a 100-page round or of a whole crawl, measured against Beam's own code side by side
(`benchmarks/bench_patches.py`; the table per patch, removed ones too, in docs/performance.md
"Beam's internals patched").

Rules every patch keeps:
- It installs only on the Beam version it was written against (`BEAM_VERSION`). On another
  version, or when a target it replaces is missing or has changed shape, the round prints
  one warning line naming the patch and runs on Beam's own code: slower, never different.
- It is active only while beamcrawl's own pipeline is built and run (`active`): Beam's
  attributes are put back when the round's pipeline is done, so nothing else in the
  process (a notebook's own pipeline, a test's TestPipeline) runs on patched Beam.
- `BEAMCRAWL_PATCHES_OFF` (a comma list of patch names, or `all`) switches patches off: how
  they are measured, and how a test compares a crawl on Beam's own code with a patched one.

A patch module defines `NAME`, `IN_PROCESS` (True: only when this process runs the stages,
the in-process runner) and `replacements(context)`, a list of `(owner, attribute, value)`
to set while active, computed against the Beam that is imported; it raises `Missing` naming
what it did not find. Adding one: a module here plus its name in `PATCHES`.
"""
from __future__ import annotations

import contextlib
import importlib
import os
import sys
from dataclasses import dataclass
from typing import Callable

from pipelines.settings import UsageError

BEAM_VERSION = "2.77.0"
OFF_VARIABLE = "BEAMCRAWL_PATCHES_OFF"

# In the order they are applied (and undone in reverse).
PATCHES = ("construction", "release_stage", "stage_threads", "size_sampling", "raw_pickles")
# The in-process runner's process tuning (pipelines.runner: allocators, gc); not Beam
# patches, but switched off by the same variable so that they are measured the same way.
TUNING = ("allocators", "gc_freeze")

_WARNED = set()   # warning lines already printed by this process (each is printed once)


class Missing(LookupError):
    """A patch's target is not in this Beam as the patch expects it."""


@dataclass(frozen=True)
class Context:
    """What a patch may ask about the round it runs in."""
    in_process: bool                 # this process runs the stages (the in-process runner)
    workers_here: bool = False       # ... and every worker too (not its multi_processing mode)
    after_stage: Callable | None = None   # called after each stage's bundle (release_stage)


def switched_off(environ=None) -> set[str]:
    """The names `BEAMCRAWL_PATCHES_OFF` switches off (every patch and tuning for `all`).
    An unknown name is refused (one line naming it, exit 2): a misspelt name would
    otherwise measure the patched code as if it were Beam's."""
    value = (os.environ if environ is None else environ).get(OFF_VARIABLE, "")
    names = {n.strip() for n in value.split(",") if n.strip()}
    unknown = names - set(PATCHES) - set(TUNING) - {"all"}
    if unknown:
        raise UsageError(f"{OFF_VARIABLE} names {', '.join(sorted(unknown))}: not a runtime patch; "
                         f"known: all, {', '.join(PATCHES + TUNING)}")
    return set(PATCHES + TUNING) if "all" in names else names


def _warn_once(line: str) -> None:
    if line not in _WARNED:
        _WARNED.add(line)
        print(f"warning: {line}", file=sys.stderr, flush=True)


def _beam_version() -> str:
    import apache_beam
    return apache_beam.__version__


def planned(context: Context, environ=None, version=None, only=None) -> list:
    """The patch modules to apply for `context`: those not switched off (of `only`, if
    given), and none (with one warning line) on a Beam other than BEAM_VERSION. A patch that
    needs every worker in this process checks `context.workers_here` itself."""
    off = switched_off(environ)
    wanted = [n for n in PATCHES if n not in off and (only is None or n in only)]
    version = version or _beam_version()
    if wanted and version != BEAM_VERSION:
        _warn_once(f"Beam {version} is not {BEAM_VERSION}, which beamcrawl's runtime patches ("
                   f"{', '.join(wanted)}) were written for: running on Beam's own code (slower, same results)")
        return []
    modules = [importlib.import_module(f"{__name__}.{n}") for n in wanted]
    return [m for m in modules if context.in_process or not m.IN_PROCESS]


@contextlib.contextmanager
def active(context: Context, environ=None, version=None, only=None):
    """Apply the planned patches for the duration of the block, then put Beam back; yields
    the names applied. A patch whose `replacements` raise `Missing` is skipped with one
    warning line. `only`: just these patches (a test or benchmark of one)."""
    applied = []   # (owner, attribute, original or _ABSENT)
    names = []
    try:
        for module in planned(context, environ, version, only):
            try:
                changes = module.replacements(context)
            except Missing as e:
                _warn_once(f"runtime patch {module.NAME} not installed ({e} in Beam {_beam_version()}): "
                           f"running that part on Beam's own code (slower, same results)")
                continue
            for owner, attribute, value in changes:
                applied.append((owner, attribute, owner.__dict__.get(attribute, _ABSENT)
                                if isinstance(owner, type) else getattr(owner, attribute, _ABSENT)))
                setattr(owner, attribute, value)
            if changes:
                names.append(module.NAME)
        yield names
    finally:
        for owner, attribute, original in reversed(applied):
            if original is _ABSENT:
                delattr(owner, attribute)
            else:
                setattr(owner, attribute, original)


_ABSENT = object()


def target(owner, attribute, kind=None):
    """`owner.attribute` (a class's own attribute, not an inherited one), checked to exist
    (and to be a `kind`, if given); raises `Missing` naming it otherwise."""
    value = owner.__dict__.get(attribute, _ABSENT) if isinstance(owner, type) else getattr(owner, attribute, _ABSENT)
    if value is _ABSENT or (kind is not None and not isinstance(value, kind)):
        where = getattr(owner, "__qualname__", getattr(owner, "__name__", repr(owner)))
        raise Missing(f"{where}.{attribute}")
    return value


def uses(function, *names):
    """Raise `Missing` unless `function`'s code reads every one of `names` (a patch that
    re-implements a function checks that Beam's still works on the same fields)."""
    code = getattr(function, "__code__", None)
    missing = [n for n in names if code is None or n not in code.co_names]
    if missing:
        raise Missing(f"{getattr(function, '__qualname__', function)} without {', '.join(missing)}")
