"""Table I/O: crawl tables in and out of a round (Parquet through Beam's FileSystems).

- `files`: plain functions that read row groups and whole views of a table's files.
- `step`: the Beam side: `ReadTables`, `WriteTable`, `WriteStats`, `RowsToTables` and the
  `ArrowTableCoder` that lets `pa.Table` elements cross stage boundaries cheaply;
  `SpillToFiles`/`ReadSpilled` (`Spill`): a PCollection through spill files (--memory_mb).
- `spill`: the spill files a round's large intermediate data waits in (rounds/N/_spill/).
- `sideinput`: `combined_side_input`, a combined value read as a side input without the
  default-injection stage `CombineGlobally` would add (Beam plumbing the stages share).
"""
