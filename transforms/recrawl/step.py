"""The round's revisit-state delta as a Beam step (see `state`)."""
import apache_beam as beam
import pyarrow as pa

from transforms.recrawl.state import lastmod_hints, next_state


def _scores(element):
    _host, table = element
    return list(zip(table.column("fp").to_pylist(), table.column("score").to_pylist()))


class UpdateRecrawlState(beam.PTransform):
    """{visited tables, fetch list, candidates} -> {"state": RECRAWL deltas, "stats": dict}.

    Args:
      prev_rows: fp -> previous state row of this round's revisits (small: ≤ the budget).
      round_no, now: the round and its clock.
    """

    def __init__(self, prev_rows, round_no, now):
        super().__init__()
        self.prev_rows, self.round_no, self.now = prev_rows, round_no, now

    def expand(self, inputs):
        prev, round_no, now = self.prev_rows, self.round_no, self.now
        scores = (inputs["fetch_list"] | "FetchedScores" >> beam.FlatMap(_scores))
        updated = (inputs["visited"]
                   | "NextState" >> beam.Map(lambda t, sc: next_state(t, prev, sc, round_no, now),
                                             beam.pvalue.AsDict(scores)))
        hints = (inputs["candidates"]
                 | "LastmodHints" >> beam.Map(lastmod_hints, round_no).with_output_types(pa.Table))
        state = ((updated | "StateRows" >> beam.Map(lambda ts: ts[0]).with_output_types(pa.Table),
                  hints) | "AllStateRows" >> beam.Flatten())
        stats = updated | "StateStats" >> beam.Map(lambda ts: ts[1])
        return {"state": state, "stats": stats}
