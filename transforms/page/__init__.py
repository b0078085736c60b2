"""Page: the fate of a fetched page (outcome, parse, links, sitemaps), plain Python.

- `fate`: `page_fate(page, config)`, one fetch result in, visited row, links, filtered, body out.
- `outcome`: final or retry (backoff), redirects; `parse`, `charset`: lxml HTML parsing;
  `sitemaps`: sitemap XML; `visited`: VISITED tables of a batch (MinHash signed per batch).
- `step`: `ProcessPages`, the Beam step around `page_fate`.
"""
