"""The deep-web stage as a Beam step: `ProbeForms`.

    found (page step's deepweb output) --keyed by host--+
    DEEPWEB(N-1) rows ---------------keyed by host------+--> CoGroupByKey(host)
        --> probing.advance_host per host (the planner)
        --> state (DEEPWEB rows), forms (FORMS rows), links (candidates bundles, source
            form), filtered (bundles the URL filter dropped), stats

One element per host: a host's probing is decided in one place, like its fetching.
"""
import apache_beam as beam

from schemas import tables
from transforms.deepweb import probing
from transforms.tableio.step import RowsToTables


class _Advance(beam.DoFn):
    def __init__(self, round_no, cfg, url_filter):
        self.round_no, self.cfg, self.url_filter = round_no, cfg, url_filter

    def process(self, element):
        host, groups = element
        found = [item for kind, item in groups["found"] if kind == "form"]
        digests = [item for kind, item in groups["found"] if kind == "digest"]
        row, forms, kept, dropped, stats = probing.advance_host(
            host, found, digests, list(groups["state"]), self.round_no, self.cfg, self.url_filter)
        if row is not None:
            yield row
        for f in forms:
            yield beam.pvalue.TaggedOutput("forms", f)
        for b in kept:
            yield beam.pvalue.TaggedOutput("links", b)
        for b in dropped:
            yield beam.pvalue.TaggedOutput("filtered", b)
        if stats:
            yield beam.pvalue.TaggedOutput("stats", stats)


class ProbeForms(beam.PTransform):
    """Input: {"found": page step's deepweb dicts, "state": DEEPWEB tables of round N-1}.
    Output: {"state": DEEPWEB tables, "forms": FORMS tables, "links": candidates bundles,
    "filtered": filtered bundles, "stats": counter dicts}."""

    def __init__(self, round_no, cfg, url_filter):
        super().__init__()
        self.round_no, self.cfg, self.url_filter = round_no, cfg, url_filter

    def expand(self, inputs):
        found = inputs["found"] | "KeyByHost" >> beam.FlatMap(probing.keyed)
        state = inputs["state"] | "StateRows" >> beam.FlatMap(probing.state_rows)
        out = ({"found": found, "state": state} | "PerHost" >> beam.CoGroupByKey()
               | "Advance" >> beam.ParDo(_Advance(self.round_no, self.cfg, self.url_filter))
               .with_outputs("forms", "links", "filtered", "stats", main="state"))
        return {"state": out.state | "StateTables" >> RowsToTables(tables.DEEPWEB, 500),
                "forms": out.forms | "FormTables" >> RowsToTables(tables.FORMS),
                "links": out.links, "filtered": out.filtered, "stats": out.stats}
