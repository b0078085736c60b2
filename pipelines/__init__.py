"""The commands and the round's pipeline (README "Where things live")."""
import os

# Arrow's C++ default pool allocates from the C heap, not mimalloc (docs/memory.md;
# pipelines.runner.lean_allocators does the same for pyarrow's pool): Parquet reads and
# writes take their page buffers from it whatever pyarrow's pool is, and mimalloc kept
# ~70 MB resident that held nothing by the end of a 5 000-page round. Read once, when
# pyarrow is first imported, so it is set here, before any command imports it.
os.environ.setdefault("ARROW_DEFAULT_MEMORY_POOL", "system")
