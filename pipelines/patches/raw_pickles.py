"""While a round is built and run in-process, Beam pickles its DoFns and coders uncompressed.

Beam bz2-compresses every payload at level 9 (for the protocol buffer limits of remote
runners) and the in-process runner decompresses each again to build each stage: ~0.13 s of
a tiny round's ~1 s (cProfile of three 20-page rounds: 0.26 s compressing, 0.12 s
decompressing). Payloads made meanwhile are plain base64 pickles, which the patched
`loads` reads (and still bz2 or zlib ones). Only where every reader is this process
(`Context.workers_here`: `--direct_running_mode` in_memory or multi_threading), never around
a pipeline whose workers are other processes.
"""
import base64
import inspect

from pipelines.patches import Missing, target

NAME = "raw_pickles"
IN_PROCESS = True
DUMPS_PARAMETERS = {"use_zlib", "enable_best_effort_determinism", "enable_stable_code_identifier_pickling", "config"}


def replacements(context):
    if not context.workers_here:
        return []
    from apache_beam.internal import cloudpickle_pickler as cp
    dumps, loads = target(cp, "dumps"), target(cp, "loads")
    pickle_only, unpickle = target(cp, "_dumps"), target(cp, "_loads")
    signature = inspect.signature(dumps)
    if not DUMPS_PARAMETERS <= set(signature.parameters):
        raise Missing(f"cloudpickle_pickler.dumps({', '.join(sorted(DUMPS_PARAMETERS))})")

    def raw_dumps(o, *args, **kwargs):
        a = signature.bind(o, *args, **kwargs)
        a.apply_defaults()
        a = a.arguments
        if a["use_zlib"]:
            return dumps(o, *args, **kwargs)
        return base64.b64encode(pickle_only(o, a["enable_best_effort_determinism"],
                                            a["enable_stable_code_identifier_pickling"], a["config"]))

    def raw_loads(encoded, *args, **kwargs):
        data = base64.b64decode(encoded)
        if data[:1] == b"\x80":   # a pickle (protocol 2+); bz2 starts "BZh", zlib 0x78
            return unpickle(data)
        return loads(encoded, *args, **kwargs)

    raw_dumps.__wrapped__, raw_loads.__wrapped__ = dumps, loads
    return [(cp, "dumps", raw_dumps), (cp, "loads", raw_loads)]
