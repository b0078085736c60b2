"""tableio.gather.GatherAll: exactly one list of all elements (empty input: one empty list),
with no side input in the pipeline (ToList's default injection reads one)."""
import apache_beam as beam
import pyarrow as pa
from apache_beam.testing.test_pipeline import TestPipeline
from apache_beam.testing.util import assert_that, equal_to

from transforms.tableio.gather import GatherAll


def test_all_elements_as_one_list():
    with TestPipeline() as p:
        got = p | beam.Create([3, 1, 2, None, (False, None)]) | GatherAll() | beam.Map(
            lambda xs: sorted(xs, key=repr))
        assert_that(got, equal_to([sorted([3, 1, 2, None, (False, None)], key=repr)]))


def test_an_empty_input_gives_one_empty_list():
    with TestPipeline() as p:
        got = p | beam.Create([]) | GatherAll()
        assert_that(got, equal_to([[]]))


def test_tables_and_no_side_input():
    p = beam.Pipeline()
    tables = [pa.table({"a": [i]}) for i in range(3)]
    gathered = p | beam.Create(tables) | GatherAll()
    assert_that(gathered | beam.Map(lambda ts: sorted(t.column("a")[0].as_py() for t in ts)), equal_to([[0, 1, 2]]))
    proto = p.to_runner_api()
    from apache_beam.portability.api import beam_runner_api_pb2
    for t in proto.components.transforms.values():
        if t.spec.urn == "beam:transform:pardo:v1" and "GatherAll" in t.unique_name:
            payload = beam_runner_api_pb2.ParDoPayload.FromString(t.spec.payload)
            assert not payload.side_inputs, t.unique_name
    p.run().wait_until_finish()
