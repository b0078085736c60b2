"""The in-process runner keeps no cross-bundle cache of side inputs.

Beam 2.77's embedded worker caches every side input it reads (up to 100 MB) for later
bundles, and weighs each value by walking it object by object (`objsize`): in a round each
stage runs once, so the cache is never hit (two 5 000-page rounds: 41 misses, 0 hits), and
weighing the AsDict / AsList side inputs (the duplicate map, the key sets) took 0.056 s; the
cached values also stayed in memory after their stage. Each bundle still builds a side
input's view once (`StateBackedSideInputMap` keeps it for the bundle). A cache of size 0 is
Beam's own setting (its workers' `--state_cache_size`), read when the runner starts its
worker.
"""
from pipelines.patches import target

NAME = "state_cache"
IN_PROCESS = True


def replacements(context):
    from apache_beam.runners.portability.fn_api_runner import worker_handlers
    target(worker_handlers, "STATE_CACHE_SIZE_MB", int)
    return [(worker_handlers, "STATE_CACHE_SIZE_MB", 0)]
