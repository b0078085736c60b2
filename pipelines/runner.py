"""Running a round's pipeline on the runner the flags name.

`--runner=DirectRunner` (the default) runs on Beam's in-process FnApiRunner directly, so a
default command never depends on downloading the Prism binary. Any other runner
(PortableRunner, DaskRunner, Flink, Dataflow) is handed the flags as they are.
"""
import apache_beam as beam
from apache_beam.options.pipeline_options import PipelineOptions, StandardOptions

from pipelines import construction

DIRECT_RUNNER_NAMES = (None, "DirectRunner", "direct")   # run on the in-process FnApiRunner


def spreads_files(p):
    """True on a distributed runner: a round's input files are spread over its workers
    (a Reshuffle after the file list). The in-process runner gains nothing from it."""
    runner = p.options.view_as(StandardOptions).runner
    return runner not in DIRECT_RUNNER_NAMES + ("FnApiRunner",)


# Beam infers every transform's output type at construction by disassembling the bytecode of
# its functions: ~0.6 s of a round's ~0.9 s construction, for types nothing here uses (the
# round declares the coders it relies on). Off unless --pipeline_type_check is given.
TYPE_CHECK_FLAGS = ("--pipeline_type_check", "--no_pipeline_type_check")


def pipeline_options(argv):
    """PipelineOptions for argv; DirectRunner runs on the FnApiRunner (no Prism download)."""
    argv = list(argv)
    if not any(a.split("=", 1)[0] in TYPE_CHECK_FLAGS for a in argv):
        argv.append("--no_pipeline_type_check")
    options = PipelineOptions(argv)
    std = options.view_as(StandardOptions)
    if std.runner in DIRECT_RUNNER_NAMES:
        from apache_beam.runners.portability.fn_api_runner import fn_runner
        return options, fn_runner.FnApiRunner()
    return options, None


def run_pipeline(builder, argv):
    construction.install()
    options, runner = pipeline_options(argv)
    if "DaskRunner" in str(options.view_as(StandardOptions).runner):
        from pipelines import daskfix
        daskfix.install()   # Beam 2.77's DaskRunner translation bugs (see daskfix)
    p = beam.Pipeline(runner=runner, options=options) if runner else beam.Pipeline(options=options)
    builder(p)
    result = p.run()
    state = result.wait_until_finish()
    if state not in (None, "DONE", beam.runners.runner.PipelineState.DONE):
        raise RuntimeError(f"pipeline ended in state {state}")
    return result

