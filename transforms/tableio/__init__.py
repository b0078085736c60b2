"""Table I/O: crawl tables in and out of a round (Parquet through Beam's FileSystems).

- `files`: plain functions that read row groups and whole views of a table's files.
- `step`: the Beam side: `ReadTables`, `WriteTable`, `WriteStats`, `RowsToTables`
  (`dictionary`: the columns `WriteTable` lets Parquet dictionary-encode);
  `SpillToFiles`/`ReadSpilled` (`Spill`): a PCollection through spill files (--memory_mb).
- `coder`: `ArrowTableCoder`, which lets `pa.Table` elements cross stage boundaries as Arrow
  IPC (registered on import), and `HostTable`, the type of a (host, table) element.
- `join`: `JoinTables`, a CoGroupByKey whose table inputs are typed (so coded as above).
- `spill`: the spill files a round's large intermediate data waits in (rounds/N/_spill/);
  `pickled`: their element encoding, importable without Beam (a page worker encodes links);
  `tablefiles`: keyed tables in Arrow IPC files there, passed on as refs and read back one
  table at a time in any order (the fetch list until its hosts are fetched).
- `sideinput`: global combines with no stage of their own: `combined_side_input` (what
  Beam's `AsSingleton(CombineGlobally(fn))` gives), `CombinedView` of `accumulate`d values,
  and `CombinedValue` (what `CombineGlobally(fn)` gives), the accumulators read as a side input;
  `gather`: `GatherAll`, all elements as one list, not held as a side input as `ToList`'s;
  `globalwindow`: `in_global_window`, the element a DoFn yields from `finish_bundle`.
"""
