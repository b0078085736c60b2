"""Several crawler fleets on one crawl root: layout, inboxes, and what each round read.

    ROOT/shard-00/   a whole crawl directory (crawl.json, rounds/...) of the fleet --shard 0
    ROOT/shard-01/   ... one per shard, all with the same --num_shards, --partition,
                     --virtual_nodes, --shard_weights and --remove_shard

A fleet fetches only the hosts the partitioner gives its shard (strategies/partition). A
link, redirect target, sitemap entry or seed of another shard's host is not queued here:
the round writes it to its own rounds/N/outbox/to-SS-*.parquet (SS = the owner), which
becomes visible with the round's _COMMITTED like every other table of the round; a killed
round leaves no _COMMITTED, so nothing half-written is ever delivered, and its rerun starts
from a deleted folder. The owner's next round reads the outboxes addressed to it in every
other shard's committed rounds that it has not read yet and treats them as links found
this round (URL-seen deduplicates them against its own state). rounds/N/inbox.json records
the last round of each other shard read so far, so each outbox file is read exactly once:
a killed reader round did not commit its inbox.json, and the rerun reads the same files.
"""
import posixpath

from apache_beam.io.filesystems import FileSystems

from pipelines.crawldir import CrawlDir, _join
from pipelines.settings import UsageError

INBOX_JSON = "inbox.json"


def shard_dir_name(shard: int) -> str:
    return f"shard-{shard:02d}"


def check_layout(crawl: CrawlDir, shard_cfg) -> None:
    """A sharded crawl's --crawl_dir must be ROOT/shard-NN of its own --shard."""
    if shard_cfg is None:
        return
    want = shard_dir_name(shard_cfg.index)
    if posixpath.basename(crawl.path) != want:
        raise UsageError(
            f"--crawl_dir {crawl.path}: a sharded crawl (--num_shards {shard_cfg.partitioner.num_shards}) "
            f"keeps shard {shard_cfg.index} in ROOT/{want}; give --crawl_dir "
            f"{_join(posixpath.dirname(crawl.path) or '.', want)} (or the --shard this folder is)")


def sibling(crawl: CrawlDir, shard: int) -> CrawlDir:
    return CrawlDir(_join(posixpath.dirname(crawl.path) or ".", shard_dir_name(shard)))


def read_through(crawl: CrawlDir, prev) -> dict:
    """{shard (str): last round of it whose outbox this crawl has read} as of round `prev`."""
    if prev is None:
        return {}
    path = _join(crawl.round_dir(prev), INBOX_JSON)
    if not FileSystems.exists(path):
        return {}
    return dict(crawl.read_json(prev, INBOX_JSON).get("read_through", {}))


def plan_inbox(crawl: CrawlDir, prev, shard_cfg):
    """(outbox files addressed to this shard not read yet, their rows, read_through after
    reading them). Every file is checked (footer and schema) before anything is written."""
    if shard_cfg is None:
        return [], 0, {}
    me, done = shard_cfg.index, read_through(crawl, prev)
    after, files = dict(done), []
    for s in range(shard_cfg.partitioner.num_shards):
        other = sibling(crawl, s)
        if s == me or not other.exists():
            continue
        rounds = [r for r in other.committed_rounds() if r > int(done.get(str(s), -1))]
        for r in rounds:
            names = other.manifest(r)["tables"].get("outbox", [])
            files += [_join(other.table_dir(r, "outbox"), n) for n in names
                      if n.startswith(f"to-{me:02d}-")]
        if rounds:
            after[str(s)] = rounds[-1]
    rows = crawl.validate_files("outbox", files)   # a damaged file: CrawlStateError naming it
    return files, rows, after


def write_read_through(crawl: CrawlDir, round_no: int, shard_cfg, after: dict) -> None:
    if shard_cfg is not None:
        crawl.write_json(round_no, INBOX_JSON, {"read_through": after})
