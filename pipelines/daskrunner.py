"""A DaskRunner a user names with `--runner pipelines.daskrunner.DaskRunner`.

Beam 2.77's `DaskRunner` runs a pipeline's dask graph on a `dask.distributed` cluster
(`--dask_client_address tcp://HOST:PORT`), but translates six things wrongly
(pipelines/daskfix.py, docs/beam-dask-bugs.md). This subclass submits the corrected
translation instead, and hands every worker task the pipeline's options, so that a worker's
filesystems reach the crawl directory (s3:// endpoint and keys) without any setup of its
own. A PCollection gets at most one partition per worker thread of the cluster (or
`--dask_npartitions`): daskfix. Beam's class is not changed: a pipeline named with Beam's
runner gets Beam's.
"""
from apache_beam.runners.dask.dask_runner import DaskOptions, DaskRunnerResult
from apache_beam.runners.dask.dask_runner import DaskRunner as BeamDaskRunner

from pipelines import daskfix

NAME = "pipelines.daskrunner.DaskRunner"   # what --runner takes


class DaskRunner(BeamDaskRunner):
    """Beam's DaskRunner with the translation of pipelines.daskfix."""

    # Pipeline.run would rebuild the pipeline from its runner-API proto first (Beam does for
    # every runner that is not an Fn API one): ~1.5 s of a small round spent pickling and
    # unpickling ~250 transforms, which daskfix does not need (it reads either form: bug 4)
    RUNNER_API_ROUND_TRIP = False

    def run_pipeline(self, pipeline, options):
        import dask.distributed as ddist
        from apache_beam.runners.dask.overrides import dask_overrides
        dask_options = options.view_as(DaskOptions).get_all_options(drop_default=True, current_only=True)
        bag_kwargs = DaskOptions._extract_bag_kwargs(dask_options)
        client = ddist.Client(**dask_options)
        pipeline.replace_all(dask_overrides())
        partitions = bag_kwargs.get("npartitions") or max(1, sum(client.nthreads().values()))
        _, leaves = daskfix.translate(pipeline, bag_kwargs, options, partitions)
        counts = [leaf.map_partitions(daskfix._count) for leaf in leaves]   # every branch; no data back
        # optimized: dask fuses each chain of steps with one input and one consumer (a Beam
        # ParDo chain) into one task per partition; ~630 -> ~200 tasks in a small round
        futures = client.compute(counts, optimize_graph=True)
        return DaskRunnerResult(client, futures)
