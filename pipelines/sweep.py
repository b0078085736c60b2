"""What a committed round's manifest does not list, found and deleted.

A round's folder can hold objects no reader reads (pipelines/crawldir.py reads only what
a manifest lists): parts of bundles that failed and were retried, parts a killed attempt
or a zombie worker wrote, the attempts' part listings, spill files. `sweep` deletes them
after each commit; the next round sweeps the last committed one again, so a run killed
between its commit and its sweep leaves nothing for long.
"""
import re

from apache_beam.io.filesystems import FileSystems

from pipelines.crawldir import PARTS_LISTING, SPILL_DIR, WARC_DIR
from transforms.tableio.files import list_tree

_LISTING = re.compile(PARTS_LISTING.format(attempt=".+"))


def unlisted(crawl, n: int) -> list:
    """Objects under committed round n that no reader reads: table and WARC files its
    manifest does not list, its attempts' part listings, its spill files."""
    m = crawl.manifest(n)
    listed = {(t, name) for t, names in m["tables"].items() for name in names}
    listed |= {(WARC_DIR, name) for name in m.get("warc", [])}
    base = crawl.round_dir(n).rstrip("/") + "/"
    out = []
    for path in list_tree(crawl.round_dir(n)):
        rel = path.replace("\\", "/")
        if not rel.startswith(base):
            continue
        folder, _, name = rel[len(base):].partition("/")
        table_file = folder in m["tables"] or (folder == WARC_DIR and name.endswith(".warc.gz"))
        if (table_file and (folder, name) not in listed) or folder == SPILL_DIR \
                or (not name and _LISTING.fullmatch(folder)):
            out.append(path)
    return out


def sweep(crawl, n) -> int:
    """Delete what committed round n's manifest does not list (`unlisted`); the number
    deleted (0 for None or an uncommitted round)."""
    if n is None or not crawl.is_committed(n):
        return 0
    stale = unlisted(crawl, n)
    if stale:
        FileSystems.delete(stale)
    return len(stale)
