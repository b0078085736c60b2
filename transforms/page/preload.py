"""The libraries `page_fate` imports on first use, imported here for the helpers' fork server.

The page step imports its heavier parsers only when a page needs them (pypdf for a PDF,
chardetng for an undeclared legacy charset, py3langid for a language), so that a command
that never parses pays nothing. A page worker, though, is a new process every round: each
one imported them again while parsing its first pages (its first 200 bench50k pages took
0.287 s, the next 200 0.048 s; pypdf's import alone ~0.12 s). Listed in
`transforms.procs.PRELOAD`, this module makes the fork server import them once, and every
helper inherits them (with them preloaded, the first 200 pages took 0.067 s). A library that
is not installed is skipped: its pages take the fallback they take anyway.
"""
import importlib

LIBRARIES = ("pypdf", "chardetng_py", "py3langid.langid")


def import_libraries():
    for name in LIBRARIES:
        try:
            importlib.import_module(name)
        except ImportError:   # not installed: the parser that needs it falls back as without it
            pass


import_libraries()
