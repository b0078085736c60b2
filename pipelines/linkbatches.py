"""The round's link bundles cut into batches for the link tables (URL-seen candidates, edges)."""
import apache_beam as beam

MIN_PART_ROWS = 1_000  # candidates per (link batch, URL-seen bucket) part, on average
MAX_LINK_BATCH = 1_000_000   # links per batch, at most


def link_batch_size(budget_batch, buckets):
    """Links per link batch: the budget's, raised so each batch gives every URL-seen bucket
    ~MIN_PART_ROWS candidates. URL-seen's shuffle carries one packed part per (batch, bucket);
    small batches times many buckets (a small --memory_mb on a big round) made that product
    explode: 169 batches x ~70 buckets at --memory_mb 128 in a 16 000-page round, whose link
    and merge stages took 4.97 + 8.35 s instead of 0.67 + 0.47 s. Batches are of this fixed
    size (not BatchElements' adaptive ramp from 1, which made dozens of tiny batches), counted
    in links, not bundles (`_bundle_links`): a documentation index page has up to ~24 000 `a`
    elements, so 512 bundles could hold hundreds of thousands of links; in the Debian-docs
    web's 462 000-link round the link stage was the crawl's peak (476 MB; 378 MB counted in links)."""
    return max(1, min(MAX_LINK_BATCH, int(max(budget_batch, buckets * MIN_PART_ROWS))))


def _bundle_links(bundle):
    """A link bundle's size in a link batch: its links (an empty one counts 1)."""
    return max(1, len(bundle["dst"]))


class LinkBatches(beam.PTransform):
    """Link bundles -> lists of bundles holding at most `links` links together (a bundle with
    more is a batch alone); `link_batch_size` says how many."""

    def __init__(self, links):
        super().__init__()
        self.links = links

    def expand(self, bundles):
        return bundles | beam.BatchElements(min_batch_size=self.links, max_batch_size=self.links,
                                            element_size_fn=_bundle_links)
