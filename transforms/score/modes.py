"""Which path scores a strategy: per URL-seen bucket, the whole frontier, or Beam PageRank."""


def scores_per_row(ordering):
    """True when a row's score depends on its own columns only (scored per bucket)."""
    return not (ordering.needs_graph or ordering.needs_host_counts or ordering.uses_opic)


class LocalScore:
    """Picklable per-bucket scorer for strategies that need no global graph."""

    def __init__(self, ordering):
        self.ordering = ordering

    def __call__(self, table):
        return self.ordering.score(table, None)


def uses_beam_pagerank(ordering, pagerank_path, beam_edges, known_links):
    """Graph strategies take the Beam PageRank path when asked, or when the graph is large."""
    if not ordering.needs_graph:
        return False
    return pagerank_path == "beam" or (pagerank_path == "auto" and known_links > beam_edges)
