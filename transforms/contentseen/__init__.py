"""Content-seen: exact duplicates, near-duplicates (MinHash LSH) and suspected mirrors.

- `fingerprints`: body/text fingerprints, MinHash signatures, LSH band keys (pure).
- `duplicates`: exact duplicates, candidate pairs, mirrors over Arrow tables (pure).
- `clusters`: near-duplicate clusters from capped band groups, one row per page (pure).
- `nearpass`: the round's band groups compared in one vectorised pass over page tables,
  a signature once per page (pure; what `NearClusters` runs).
- `oldside`: probing the visited view's narrow columns for this round's keys (pure).
- `step`: `ApplyContentSeen` and its parts, the Beam step of the round.

The Beam steps, their inputs, outputs and rules
=================================================

ContentSeen(key="content_fp", buckets=16)  -- exact duplicates

  input  dict of PCollections of Arrow tables:
         ``new``: this round's fetched pages with content: columns fp, url, host, content_fp
                  (round is the transform's round_no; rows with content_fp 0/null ignored);
         ``old``: the visited view of committed rounds, columns fp, url, host, round,
                  content_fp (read with ReadTables(..., columns)); url and
                  host may be left out to read less (then duplicate_of / duplicate_of_host
                  are null for old firsts, and duplicate_of_fp names them).
  output PCollection of Arrow tables ``DUPLICATES``, one row per duplicate page of this
         round: fp, url, host, content_fp, duplicate_of (url), duplicate_of_fp,
         duplicate_of_host, duplicate_of_round.
  rule   per content fingerprint, the first page is the one with the smallest
         (round, fp) over old and new rows; every *other* URL of this round with that
         fingerprint is its duplicate. A re-fetch of the first URL itself is not a
         duplicate. Deterministic: independent of bundle/worker order.
  caller sets visited.duplicate_of (and outcome=duplicate, if so configured) for these
         fps and drops their links before URL-seen (links of duplicates are not expanded).
  cost   the old side is filtered map-side against a side input holding this round's
         fingerprints (one sorted int64 array), so only matching rows are shuffled; the
         visited view is read once, by column.

NearClusters(threshold=0.9, num_perm=128, buckets=16, cap=NEAR_CAP (64), params=LSH_PARAMS,
             min_jaccard=None, to_files=None, band_keys=None)
  -- MinHash LSH, as clusters (`clusters`). `threshold` picks the bands; a match needs a
  Jaccard estimate >= min_jaccard (default: threshold; 0 keeps every LSH candidate).

  input  dict: ``new`` (this round) and ``old`` (visited view): tables with columns fp,
         url, round, minhash (list<uint32>, nulls skipped) and, optionally,
         near_cluster_fp / near_cluster_round (the cluster an old page joined). Exact
         duplicates should be left out of ``new`` (they are reported by ContentSeen), and
         ``old`` may be restricted to rows whose duplicate_of is null. The MinHash is of the
         page's main content (the page step: chrome by markup and the host's repeated
         blocks left out), never of the whole page.
  steps  band keys (b bands of r rows: ``LSH_PARAMS`` = (16, 8) by default, the same bands
         as ``MinHashLSH(threshold, num_perm, params=(16, 8))``; ``params=None`` for
         datasketch's own optimum) -> old pages kept only if one of their band keys is a
         band key of this round (side input: ``band_keys``, the caller's, when given, else
         computed from ``new``) -> this round's and those old pages gathered
         as page tables, a signature once per page (``buckets`` is no longer used) -> in
         one pass (`nearpass.near_edges`) band rows as int arrays, sorted into band groups;
         per band group, each new page against the group's ``cap`` earliest members
         earlier than it (0 = all): band slice equal and estimate >= threshold, its best
         match kept (one edge per page and band) -> all edges (<= bands x pages) ->
         union-find.
  output PCollection of one ASSIGNMENTS table: one row per page of this round that joins
         a cluster: fp, cluster_fp, cluster_round (the cluster's earliest member by
         (round, fp); an old page stands for the cluster it joined), of_fp, of_url,
         of_round (the page it matched), jaccard (estimate to that page). Heads have no
         row; old rows are never rewritten (pages bridging two old clusters join the
         earlier). ApplyContentSeen writes them as NEAR_DUPLICATES rows and sets VISITED
         near_cluster_fp / near_cluster_round.
  limit  work per band group is O(group x cap); memory is the gathered pages' signatures
         once (this round's and the old pages sharing a band key) plus a few ints per band
         row, and comparisons run in fixed blocks of pairs; output O(pages); the largest
         number of members one page was compared with is the distribution
         ``contentseen.near_group_compared``.

SuspectMirrors(min_pages=3): from the DUPLICATES tables, (host, duplicate_of_host, pages)
  for host pairs with at least ``min_pages`` duplicate pages this round.
ContentSeenStats: dicts that sum to {"exact_duplicates", "mirror_hosts_suspected",
  "near_duplicates" (pages that joined a cluster), "near_clusters", "near_cluster_largest",
  "near_cluster_size_LO_HI", "near_host_pages:HOST", "near_host_visited:HOST" (all of HOST's
  pages this round, for a host with any in a cluster)} for the round's report.

ApplyContentSeen input: a dict of PCollections:
  visited  this round's VISITED tables          links  this round's candidates bundles
  pages    this round's PAGES tables            old    the visited view of committed rounds:
                                                       (path, row_group, table) elements of
                                                       columns OLD_COLUMNS (ReadTables(...,
                                                       OLD_COLUMNS, with_positions=True))
  visited_files (optional) spill file paths holding the same VISITED tables (`ProcessPages`
           with `to_files`): the round's keys are taken from ``visited`` in the stage that
           makes it, and both marking steps read the files, so the tables never wait in the
           runner's memory. ``to_files`` (the round's spill writer) spills NearClusters' page
           tables too; without either, everything flows as PCollections of tables.
Output: a dict with the same `visited` (exact duplicates get outcome `duplicate` and
`duplicate_of`, and empty `lsh_keys`; pages that joined a near-duplicate cluster get
`near_cluster_fp`/`near_cluster_round`), `links` (bundles of duplicate pages dropped unless
expand_duplicates), `pages` (bodies of duplicates dropped), `near` (NEAR_DUPLICATES
tables: one row per page) and `stats`.
"""
